// SPDX-License-Identifier: Apache-2.0
//
// Design: toml++ parses the syntax (with line numbers); this file checks the
// meaning. A small Reader wraps one TOML table, remembers which keys were
// read, and turns every type or range error into the first error of the
// parse, so the public functions stay linear and never throw.
#include "sim/scenario_parser.h"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <algorithm>
#include <optional>

#include "common/enum_names.h"
#include "common/proc_files.h"
#include "common/toml_reader.h"
#include "common/toml_text.h"
#include "common/units.h"
#include "nvidia/gpu_models.h"
#include "sim/mig_layout.h"

namespace tarmac::sim {
namespace {

constexpr int kMaxGpus = 64;
constexpr size_t kMaxFileBytes = size_t{16} << 20;

uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

std::string DerivedUuid(uint64_t seed, int index) {
  uint64_t a = Mix(seed * 1000003 + static_cast<uint64_t>(index));
  uint64_t b = Mix(a);
  return fmt::format("GPU-{:08x}-{:04x}-{:04x}-{:04x}-{:012x}", a >> 32, (a >> 16) & 0xffff, a & 0xffff,
                     b >> 48, b & 0xffffffffffffULL);
}

int DerivedPciBus(int index) {
  // The bus numbers of an 8-GPU HGX board, then a simple continuation.
  static constexpr int kBuses[] = {0x18, 0x2a, 0x3a, 0x5d, 0x9a, 0xab, 0xba, 0xdb};
  if (index < 8) return kBuses[index];
  return 0xe0 + index - 8;
}

void ParseDriver(const toml::table& table, Scenario* s, Errors* errors) {
  Reader r(table, "driver", errors);
  r.String("version", &s->driver_version);
  r.String("nvml_version", &s->nvml_version);
  r.Integer("cuda_version", &s->cuda_driver_version, 1000, 99000);
  r.Bool("loaded", &s->is_driver_loaded);
  r.String("init_error", &s->init_error);
  if (!s->init_error.empty() && s->init_error != "lib_rm_version_mismatch" &&
      s->init_error != "no_permission") {
    if (const toml::node* n = table.get("init_error")) {
      r.Fail(*n, "init_error", "expected \"lib_rm_version_mismatch\" or \"no_permission\"");
    }
  }
  if (const toml::node* n = r.Find("reject_struct_versions")) {
    if (!n->is_array()) {
      r.Fail(*n, "reject_struct_versions", "expected a list such as [\"memory_v2\"]");
    } else {
      for (const toml::node& v : *n->as_array()) {
        if (!v.is_string() ||
            (v.as_string()->get() != "memory_v2" && v.as_string()->get() != "temperature_v1")) {
          r.Fail(v, "reject_struct_versions", "known: \"memory_v2\", \"temperature_v1\"");
          break;
        }
        s->rejected_struct_versions.insert(v.as_string()->get());
      }
    }
  }
  r.RejectUnknown();
}

// `nvlink`: "all" (true: every GPU of the scenario), or peer indices.
bool ReadNvlinkPeers(Reader& r, GpuSpec* spec_) {
  GpuSpec& spec = *spec_;
  bool is_nvlink_all = false;
  if (const toml::node* n = r.Find("nvlink")) {
    if (n->is_string() && n->as_string()->get() == "all") {
      is_nvlink_all = true;
    } else if (n->is_array()) {
      for (const toml::node& peer : *n->as_array()) {
        if (!peer.is_integer() || peer.as_integer()->get() < 0 || peer.as_integer()->get() >= kMaxGpus) {
          r.Fail(peer, "nvlink", "expected GPU indices");
          break;
        }
        spec.nvlink_peers.push_back(static_cast<int>(peer.as_integer()->get()));
      }
    } else {
      r.Fail(*n, "nvlink", "expected \"all\" or a list of GPU indices");
    }
  }
  return is_nvlink_all;
}

// `unsupported`: the optional readings this GPU answers NOT_SUPPORTED for.
void ReadUnsupported(Reader& r, GpuSpec* spec_) {
  GpuSpec& spec = *spec_;
  if (const toml::node* n = r.Find("unsupported")) {
    if (!n->is_array()) {
      r.Fail(*n, "unsupported", "expected a list of field names");
    } else {
      for (const toml::node& f : *n->as_array()) {
        bool known = false;
        if (f.is_string()) {
          for (const char* name : kOptionalFields) known |= f.as_string()->get() == name;
        }
        if (!known) {
          std::string names;
          for (const char* name : kOptionalFields) names += std::string(names.empty() ? "" : ", ") + name;
          r.Fail(f, "unsupported", fmt::format("unknown field (known: {})", names));
          break;
        }
        spec.unsupported.insert(f.as_string()->get());
      }
    }
  }
}

void ParseGpu(const toml::table& table, int table_index, Scenario* s, Errors* errors,
              std::vector<std::pair<int, int>>* nvlink_all) {
  Reader r(table, fmt::format("gpu[{}]", table_index), errors);
  int count = 1;
  r.Integer("count", &count, 1, kMaxGpus);
  GpuSpec spec;
  r.String("model", &spec.model);
  std::string uuid;
  std::string serial;
  int pci_bus = -1;
  r.String("uuid", &uuid);
  r.String("serial", &serial);
  r.Integer("pci_bus", &pci_bus, 0, 255);
  r.Bytes("memory", &spec.memory_total_bytes);
  r.Bytes("memory_reserved", &spec.memory_reserved_bytes);
  r.Number("power_idle_w", &spec.power_idle_watts, 0, 5000);
  r.Number("power_max_w", &spec.power_max_watts, 0, 5000);
  r.Number("power_limit_w", &spec.power_limit_watts, 1, 5000);
  r.Number("ambient_c", &spec.ambient_celsius, -20, 80);
  r.Number("thermal_c_per_w", &spec.thermal_celsius_per_watt, 0, 10);
  r.Number("slowdown_c", &spec.slowdown_celsius, 0, 200);
  r.Number("shutdown_c", &spec.shutdown_celsius, 0, 200);
  r.Integer("sm_clock_max_mhz", &spec.sm_clock_max_mhz, 1, 10000);
  r.Integer("sm_clock_idle_mhz", &spec.sm_clock_idle_mhz, 1, 10000);
  r.Integer("memory_clock_mhz", &spec.memory_clock_mhz, 1, 20000);
  r.Integer("pcie_gen", &spec.pcie_generation, 1, 7);
  r.Integer("pcie_width", &spec.pcie_width, 1, 32);
  r.Integer("numa_node", &spec.numa_node, -1, 64);
  r.String("cpus", &spec.cpus);
  r.Bool("ecc", &spec.has_ecc);
  r.Bool("remapped_rows", &spec.has_remapped_rows);
  r.Bool("persistence_mode", &spec.is_persistence_mode_enabled);
  r.Bool("mig", &spec.is_mig_enabled);
  r.Bool("mig_pending", &spec.is_mig_pending);
  r.Bool("vgpu", &spec.is_vgpu);
  r.Bool("vgpu_licensed", &spec.is_vgpu_licensed);
  r.Integer("nvlink_links", &spec.nvlink_link_count, -1, 36);
  r.Bool("no_permission", &spec.has_no_permission);
  std::vector<std::string> mig_layout;
  bool has_mig_layout = r.Find("mig_layout") != nullptr;
  r.Strings("mig_layout", &mig_layout);
  if (has_mig_layout) spec.is_mig_enabled = true;

  bool is_nvlink_all = ReadNvlinkPeers(r, &spec);
  ReadUnsupported(r, &spec);
  r.RejectUnknown();

  int line = LineOf(table);
  if (spec.power_idle_watts > spec.power_max_watts) {
    errors->Add(line, r.Key("power_idle_w"), "must not exceed power_max_w");
  }
  if (spec.memory_reserved_bytes > spec.memory_total_bytes) {
    errors->Add(line, r.Key("memory_reserved"), "must not exceed memory");
  }
  if (count > 1 && (!uuid.empty() || !serial.empty() || pci_bus >= 0)) {
    errors->Add(line, r.Key("count"), "uuid, serial and pci_bus need count = 1");
  }
  if (static_cast<int>(s->gpus.size()) + count > kMaxGpus) {
    errors->Add(line, r.Key("count"), fmt::format("a scenario has at most {} GPUs", kMaxGpus));
    return;
  }
  for (int i = 0; i < count; ++i) {
    GpuSpec gpu = spec;
    gpu.index = static_cast<int>(s->gpus.size());
    gpu.uuid = uuid.empty() ? DerivedUuid(s->seed, gpu.index) : uuid;
    gpu.serial = serial.empty() ? fmt::format("16549{:08d}", Mix(s->seed + gpu.index) % 100000000) : serial;
    gpu.pci_bus = pci_bus >= 0 ? pci_bus : DerivedPciBus(gpu.index);
    if (is_nvlink_all) nvlink_all->emplace_back(gpu.index, line);
    if (std::string bad = MakeMigInstances(gpu, mig_layout, 0, &gpu.mig_instances);
        has_mig_layout && !bad.empty()) {
      errors->Add(line, r.Key("mig_layout"), bad);
      return;
    }
    s->gpus.push_back(std::move(gpu));
  }
}

constexpr std::pair<FaultKind, const char*> kFaultKindNames[] = {
    {FaultKind::kXid, "xid"},
    {FaultKind::kThermalThrottle, "thermal_throttle"},
    {FaultKind::kPowerThrottle, "power_throttle"},
    {FaultKind::kPcieDowntrain, "pcie_downtrain"},
    {FaultKind::kEccError, "ecc_error"},
    {FaultKind::kFallOffBus, "fall_off_bus"},
    {FaultKind::kDriverUnloaded, "driver_unloaded"},
    {FaultKind::kDriverLoaded, "driver_loaded"},
    {FaultKind::kNvmlHang, "nvml_hang"},
    {FaultKind::kNvlinkDown, "nvlink_down"},
    {FaultKind::kNvlinkErrors, "nvlink_errors"},
    {FaultKind::kPcieReplay, "pcie_replay"},
    {FaultKind::kMigReconfigure, "mig_reconfigure"},
};

bool ParseFaultKind(std::string_view name, FaultKind* kind) { return ParseEnum(kFaultKindNames, name, kind); }

void ParseFault(const toml::table& table, int table_index, Scenario* s, Errors* errors) {
  Reader r(table, fmt::format("fault[{}]", table_index), errors);
  Fault f;
  f.line = LineOf(table);
  std::string kind;
  r.String("kind", &kind);
  std::optional<std::chrono::milliseconds> at;
  r.Duration("at", &at);
  r.Duration("until", &f.until);
  r.Integer("gpu", &f.gpu, -1, kMaxGpus - 1);
  r.Integer("xid", &f.xid, 1, 999);
  r.Integer("count", &f.count, 1, 1000000);
  std::string type = "corrected";
  r.String("type", &type);
  r.Integer("width", &f.pcie_width, 1, 32);
  r.Number("power_limit_w", &f.power_limit_watts, 1, 5000);
  r.Integer("link", &f.link, 0, 35);
  r.String("nvlink_error", &f.nvlink_error);
  std::vector<std::string> mig_layout;
  bool has_mig_layout = r.Find("mig_layout") != nullptr;
  r.Strings("mig_layout", &mig_layout);
  r.RejectUnknown();
  if (errors->any()) return;

  if (kind.empty()) return errors->Add(f.line, r.Key("kind"), "missing");
  if (!ParseFaultKind(kind, &f.kind)) {
    return errors->Add(f.line, r.Key("kind"),
                       fmt::format("unknown fault '{}' (known: {})", kind, EnumNameList(kFaultKindNames)));
  }
  f.at = at.value_or(std::chrono::milliseconds(0));
  if (f.until && *f.until <= f.at) {
    return errors->Add(f.line, r.Key("until"), "must be later than 'at'");
  }
  if (type != "corrected" && type != "uncorrected") {
    return errors->Add(f.line, r.Key("type"), "expected \"corrected\" or \"uncorrected\"");
  }
  f.is_uncorrected = type == "uncorrected";
  bool is_machine_wide = f.kind == FaultKind::kDriverUnloaded || f.kind == FaultKind::kDriverLoaded;
  if (!is_machine_wide && f.gpu < 0) {
    return errors->Add(f.line, r.Key("gpu"), fmt::format("'{}' needs a gpu index", kind));
  }
  if (f.gpu >= static_cast<int>(s->gpus.size())) {
    return errors->Add(f.line, r.Key("gpu"),
                       fmt::format("no GPU {} (the scenario has {})", f.gpu, s->gpus.size()));
  }
  if (f.kind == FaultKind::kXid && f.xid == 0) {
    return errors->Add(f.line, r.Key("xid"), "an xid fault needs an xid code");
  }
  if (f.kind == FaultKind::kPowerThrottle && f.power_limit_watts <= 0) {
    return errors->Add(f.line, r.Key("power_limit_w"), "a power_throttle fault needs power_limit_w");
  }
  if (f.nvlink_error != "crc" && f.nvlink_error != "replay" && f.nvlink_error != "recovery") {
    return errors->Add(f.line, r.Key("nvlink_error"), "expected \"crc\", \"replay\" or \"recovery\"");
  }
  if (f.kind == FaultKind::kMigReconfigure) {
    if (!has_mig_layout)
      return errors->Add(f.line, r.Key("mig_layout"), "a mig_reconfigure fault needs mig_layout");
    const GpuSpec& gpu = s->gpus[static_cast<size_t>(f.gpu)];
    if (!gpu.is_mig_enabled) {
      return errors->Add(f.line, r.Key("gpu"),
                         fmt::format("gpu {} is not in MIG mode (set mig_layout on it)", f.gpu));
    }
    if (std::string bad = MakeMigInstances(gpu, mig_layout, table_index + 1, &f.mig_instances);
        !bad.empty()) {
      return errors->Add(f.line, r.Key("mig_layout"), bad);
    }
  } else if (has_mig_layout) {
    return errors->Add(f.line, r.Key("mig_layout"), "only a mig_reconfigure fault takes mig_layout");
  }
  if (f.kind == FaultKind::kFallOffBus) f.xid = 79;
  s->faults.push_back(f);
}

}  // namespace

int NvlinkLinkCount(const GpuSpec& spec) {
  if (spec.nvlink_peers.empty()) return 0;
  if (spec.nvlink_link_count >= 0) return spec.nvlink_link_count;
  int by_model = nvidia::ExpectedNvlinkLinks(spec.model);
  return by_model > 0 ? by_model : static_cast<int>(spec.nvlink_peers.size());
}

const std::vector<MigInstanceSpec>& MigInstancesAt(const Scenario& scenario, int gpu,
                                                   std::chrono::milliseconds t) {
  const std::vector<MigInstanceSpec>* now = &scenario.gpus[static_cast<size_t>(gpu)].mig_instances;
  for (const Fault& f : scenario.faults) {
    if (f.at > t) break;
    if (f.kind == FaultKind::kMigReconfigure && f.gpu == gpu) now = &f.mig_instances;
  }
  return *now;
}

const char* FaultKindName(FaultKind kind) { return EnumName(kFaultKindNames, kind); }

Result<Scenario> ParseScenario(std::string_view text, std::string_view source_name) {
  if (Status s = CheckTomlText(text, source_name); !s.ok()) return s;
  toml::parse_result parsed = toml::parse(text, source_name);
  if (!parsed) {
    const toml::parse_error& e = parsed.error();
    return Status::InvalidArgument(
        fmt::format("{}:{}: {}", source_name, e.source().begin.line, e.description()));
  }
  const toml::table& root = parsed.table();
  Errors errors(source_name);
  Scenario s;
  Reader r(root, "", &errors);
  r.String("name", &s.name);
  r.Integer("seed", &s.seed, 0, INT64_MAX);
  if (const toml::node* n = r.Find("driver")) {
    if (!n->is_table()) {
      r.Fail(*n, "driver", "expected a table [driver]");
    } else {
      ParseDriver(*n->as_table(), &s, &errors);
    }
  }
  std::vector<std::pair<int, int>> nvlink_all;  // (gpu index, line)
  const toml::node* gpus = r.Find("gpu");
  if (gpus == nullptr) {
    errors.Add(1, "gpu", "missing: a scenario needs at least one [[gpu]] table");
  } else if (!gpus->is_array_of_tables()) {
    r.Fail(*gpus, "gpu", "expected [[gpu]] tables");
  } else {
    int i = 0;
    for (const toml::node& g : *gpus->as_array()) ParseGpu(*g.as_table(), i++, &s, &errors, &nvlink_all);
  }
  if (const toml::node* faults = r.Find("fault")) {
    if (!faults->is_array_of_tables()) {
      r.Fail(*faults, "fault", "expected [[fault]] tables");
    } else {
      int i = 0;
      for (const toml::node& f : *faults->as_array()) ParseFault(*f.as_table(), i++, &s, &errors);
    }
  }
  r.RejectUnknown();
  if (errors.any()) return Status::InvalidArgument(errors.first());

  // Links: "all" joins every such GPU to the others; explicit peers are
  // made symmetric, as physical links are.
  for (const auto& [a, line_a] : nvlink_all) {
    for (const auto& [b, line_b] : nvlink_all) {
      if (a != b) s.gpus[a].nvlink_peers.push_back(b);
    }
  }
  for (GpuSpec& g : s.gpus) {
    for (int peer : g.nvlink_peers) {
      if (peer >= static_cast<int>(s.gpus.size()) || peer == g.index) {
        return Status::InvalidArgument(
            fmt::format("{}: key 'nvlink': GPU {} names peer {}, which is not another GPU of the scenario",
                        source_name, g.index, peer));
      }
    }
  }
  for (GpuSpec& g : s.gpus) {
    for (int peer : std::vector<int>(g.nvlink_peers)) {
      std::vector<int>& back = s.gpus[peer].nvlink_peers;
      if (std::find(back.begin(), back.end(), g.index) == back.end()) back.push_back(g.index);
    }
  }
  for (GpuSpec& g : s.gpus) {
    std::sort(g.nvlink_peers.begin(), g.nvlink_peers.end());
    g.nvlink_peers.erase(std::unique(g.nvlink_peers.begin(), g.nvlink_peers.end()), g.nvlink_peers.end());
  }
  // NVLink faults name a link the GPU has (known once the peers are).
  for (const Fault& f : s.faults) {
    if (f.kind != FaultKind::kNvlinkDown && f.kind != FaultKind::kNvlinkErrors) continue;
    int links = NvlinkLinkCount(s.gpus[static_cast<size_t>(f.gpu)]);
    if (f.link >= links) {
      return Status::InvalidArgument(fmt::format("{}:{}: key 'fault.link': gpu {} has {} NVLink link{}",
                                                 source_name, f.line, f.gpu, links, links == 1 ? "" : "s"));
    }
  }
  std::stable_sort(s.faults.begin(), s.faults.end(),
                   [](const Fault& a, const Fault& b) { return a.at < b.at; });
  return s;
}

Result<Scenario> LoadScenario(const std::string& path) {
  std::string text;
  if (!ReadOperatorFile(path, &text, kMaxFileBytes))
    return Status::NotFound("cannot open scenario file", path);
  Result<Scenario> s = ParseScenario(text, path);
  if (s.ok()) s.value().path = path;
  return s;
}

}  // namespace tarmac::sim
