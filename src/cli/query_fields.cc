// SPDX-License-Identifier: Apache-2.0
#include "cli/query_fields.h"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include "common/split.h"
#include "common/text_wrap.h"
#include "node/sample_fields.h"
#include "nvidia/clock_event_reasons.h"

namespace tarmac::cli {
namespace {

using Opt = std::optional<std::string>;

constexpr const char* kNotAvailable = "[N/A]";

template <typename T>
Opt Num(const std::optional<T>& v) {
  if (!v) return std::nullopt;
  return fmt::format("{}", *v);
}

Opt Mib(const std::optional<int64_t>& bytes) {
  if (!bytes) return std::nullopt;
  return fmt::format("{}", *bytes / (1024 * 1024));
}

Opt Watts(const std::optional<int64_t>& milliwatts) {
  if (!milliwatts) return std::nullopt;
  return fmt::format("{:.2f}", static_cast<double>(*milliwatts) / 1000.0);
}

Opt Mhz(const std::optional<int64_t>& hertz) {
  if (!hertz) return std::nullopt;
  return fmt::format("{}", *hertz / 1000000);
}

Opt Enabled(const std::optional<bool>& v) {
  if (!v) return std::nullopt;
  return std::string(*v ? "Enabled" : "Disabled");
}

Opt Text(const std::string& s) {
  if (s.empty()) return std::nullopt;
  return s;
}

std::string Timestamp(std::chrono::system_clock::time_point t) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
  std::time_t seconds = static_cast<std::time_t>(ms / 1000);
  std::tm local{};
  localtime_r(&seconds, &local);
  return fmt::format("{:%Y/%m/%d %H:%M:%S}.{:03}", local, ms % 1000);
}

// "Active" / "Not Active" for one clock event reason bit.
Opt ReasonActive(const node::GpuView& g, uint64_t bit) {
  if (!g.sample.clock_event_reasons) return std::nullopt;
  return std::string((*g.sample.clock_event_reasons & bit) ? "Active" : "Not Active");
}

// nvidia-smi's unit for a reading of `unit` (sample_fields.h).
std::string QueryUnit(std::string_view unit) {
  if (unit == "ratio") return "%";
  if (unit == "bytes") return "MiB";
  if (unit == "milliwatts") return "W";
  if (unit == "hertz") return "MHz";
  return "";
}

// A reading as nvidia-smi writes it: by its unit, the number in QueryUnit.
template <typename T>
std::string FormatReading(std::string_view unit, T v) {
  if constexpr (std::is_same_v<T, bool>) {
    return v ? "Yes" : "No";
  } else {
    if (unit == "NVML bit set") return fmt::format("0x{:016X}", static_cast<uint64_t>(v));
    double value = static_cast<double>(v);
    if (unit == "ratio") return fmt::format("{:.0f}", value * 100);
    if (unit == "bytes") return fmt::format("{}", static_cast<int64_t>(v) / (1024 * 1024));
    if (unit == "milliwatts") return fmt::format("{:.2f}", value / 1000.0);
    if (unit == "hertz") return fmt::format("{}", static_cast<int64_t>(v) / 1000000);
    if (unit == "P-state (0..15)") return fmt::format("P{}", static_cast<int64_t>(v));
    return fmt::format("{:.0f}", value);
  }
}

Opt QueryValue(const node::SampleField& reading, const node::GpuSample& sample) {
  return std::visit(
      [&](auto member) -> Opt {
        const auto& v = sample.*member;
        if (!v) return std::nullopt;
        return FormatReading(reading.unit, *v);
      },
      reading.member);
}

// Who the GPU is, and the query's own time and count.
std::vector<GpuField> IdentityFields() {
  return {
      {{"timestamp"},
       "",
       "Time of the query (YYYY/MM/DD HH:MM:SS.msec)",
       [](const node::NodeView& fl, const node::GpuView&) -> Opt { return Timestamp(fl.taken_at); }},
      {{"driver_version"},
       "",
       "Installed NVIDIA display driver version",
       [](const node::NodeView& fl, const node::GpuView&) { return Text(fl.system.driver_version); }},
      {{"count"},
       "",
       "Number of GPUs",
       [](const node::NodeView& fl, const node::GpuView&) -> Opt {
         return fmt::format("{}", fl.gpus.size());
       }},
      {{"index"},
       "",
       "Zero-based index of the GPU",
       [](const node::NodeView&, const node::GpuView& g) -> Opt { return fmt::format("{}", g.info.index); }},
      {{"name", "gpu_name"},
       "",
       "Product name of the GPU",
       [](const node::NodeView&, const node::GpuView& g) { return Text(g.info.name); }},
      {{"serial", "gpu_serial"},
       "",
       "Board serial number",
       [](const node::NodeView&, const node::GpuView& g) { return g.info.serial; }},
      {{"uuid", "gpu_uuid"},
       "",
       "Globally unique immutable identifier of the GPU",
       [](const node::NodeView&, const node::GpuView& g) { return Text(g.info.uuid); }},
      {{"pci.bus_id", "gpu_bus_id"},
       "",
       "PCI bus id as domain:bus:device.function",
       [](const node::NodeView&, const node::GpuView& g) { return Text(g.info.pci_bus_id); }},
      {{"minor_number"},
       "",
       "Minor number of the device (/dev/nvidiaN)",
       [](const node::NodeView&, const node::GpuView& g) { return Num(g.info.minor_number); }},
      {{"persistence_mode"},
       "",
       "Persistence mode: Enabled or Disabled",
       [](const node::NodeView&, const node::GpuView& g) {
         return Enabled(g.info.is_persistence_mode_enabled);
       }},
      {{"mig.mode.current"},
       "",
       "MIG mode: Enabled or Disabled",
       [](const node::NodeView&, const node::GpuView& g) { return Enabled(g.info.is_mig_enabled); }},
      {{"mig.mode.pending"},
       "",
       "MIG mode after the next GPU reset: Enabled or Disabled",
       [](const node::NodeView&, const node::GpuView& g) -> Opt {
         if (!g.info.is_mig_enabled) return std::nullopt;
         return Enabled(*g.info.is_mig_enabled != g.info.is_mig_pending.value_or(false));
       }},
  };
}

// The readings nvidia-smi also has, from their table (node/sample_fields.h).
std::vector<GpuField> SampleTableFields() {
  std::vector<GpuField> f;
  for (const node::SampleField& reading : node::SampleFields()) {
    if (reading.smi.names[0].empty()) continue;
    GpuField field;
    for (std::string_view name : reading.smi.names) {
      if (!name.empty()) field.names.emplace_back(name);
    }
    field.unit = QueryUnit(reading.unit);
    field.help = std::string(reading.smi.help);
    field.value = [&reading](const node::NodeView&, const node::GpuView& g) {
      return QueryValue(reading, g.sample);
    };
    f.push_back(std::move(field));
  }
  return f;
}

// Limits read once, and the error counters.
std::vector<GpuField> LimitAndErrorFields() {
  return {
      {{"memory.total"},
       "MiB",
       "Total installed GPU memory",
       [](const node::NodeView&, const node::GpuView& g) {
         return Mib(g.sample.memory_total_bytes ? g.sample.memory_total_bytes : g.info.memory_total_bytes);
       }},
      {{"power.default_limit"},
       "W",
       "Default power management limit",
       [](const node::NodeView&, const node::GpuView& g) {
         return Watts(g.info.power_limit_default_milliwatts);
       }},
      {{"clocks.max.sm", "clocks.max.sm"},
       "MHz",
       "Maximum SM clock",
       [](const node::NodeView&, const node::GpuView& g) { return Mhz(g.info.sm_clock_max_hertz); }},
      {{"clocks.max.memory", "clocks.max.mem"},
       "MHz",
       "Maximum memory clock",
       [](const node::NodeView&, const node::GpuView& g) { return Mhz(g.info.memory_clock_max_hertz); }},
      {{"pcie.link.gen.max", "pcie.link.gen.gpumax"},
       "",
       "Maximum PCIe link generation",
       [](const node::NodeView&, const node::GpuView& g) { return Num(g.info.pcie_generation_max); }},
      {{"pcie.link.width.max"},
       "",
       "Maximum PCIe link width",
       [](const node::NodeView&, const node::GpuView& g) { return Num(g.info.pcie_width_max); }},
      {{"ecc.errors.corrected.volatile.total"},
       "",
       "Corrected ECC errors since the driver loaded",
       [](const node::NodeView&, const node::GpuView& g) { return Num(g.sample.ecc.volatile_corrected); }},
      {{"ecc.errors.uncorrected.volatile.total"},
       "",
       "Uncorrected ECC errors since the driver loaded",
       [](const node::NodeView&, const node::GpuView& g) { return Num(g.sample.ecc.volatile_uncorrected); }},
      {{"ecc.errors.corrected.aggregate.total"},
       "",
       "Corrected ECC errors over the board's life",
       [](const node::NodeView&, const node::GpuView& g) { return Num(g.sample.ecc.aggregate_corrected); }},
      {{"ecc.errors.uncorrected.aggregate.total"},
       "",
       "Uncorrected ECC errors over the board's life",
       [](const node::NodeView&, const node::GpuView& g) { return Num(g.sample.ecc.aggregate_uncorrected); }},
      {{"remapped_rows.correctable"},
       "",
       "Rows remapped after correctable errors",
       [](const node::NodeView&, const node::GpuView& g) -> Opt {
         if (!g.sample.remapped_rows) return std::nullopt;
         return fmt::format("{}", g.sample.remapped_rows->corrected);
       }},
      {{"remapped_rows.uncorrectable"},
       "",
       "Rows remapped after uncorrectable errors",
       [](const node::NodeView&, const node::GpuView& g) -> Opt {
         if (!g.sample.remapped_rows) return std::nullopt;
         return fmt::format("{}", g.sample.remapped_rows->uncorrected);
       }},
      {{"remapped_rows.pending"},
       "",
       "A remap waits for a GPU reset: yes or no",
       [](const node::NodeView&, const node::GpuView& g) -> Opt {
         if (!g.sample.remapped_rows) return std::nullopt;
         return std::string(g.sample.remapped_rows->is_pending ? "yes" : "no");
       }},
  };
}

// One field per clock event reason, under both of nvidia-smi's names.
std::vector<GpuField> ClockReasonFields() {
  std::vector<GpuField> f;
  struct Reason {
    const char* suffix;
    uint64_t bit;
  };
  static constexpr Reason kReasons[] = {
      {"gpu_idle", nvidia::kReasonGpuIdle},
      {"applications_clocks_setting", nvidia::kReasonApplicationsClocksSetting},
      {"sw_power_cap", nvidia::kReasonSwPowerCap},
      {"hw_slowdown", nvidia::kReasonHwSlowdown},
      {"hw_thermal_slowdown", nvidia::kReasonHwThermalSlowdown},
      {"hw_power_brake_slowdown", nvidia::kReasonHwPowerBrakeSlowdown},
      {"sw_thermal_slowdown", nvidia::kReasonSwThermalSlowdown},
      {"sync_boost", nvidia::kReasonSyncBoost},
  };
  for (const Reason& r : kReasons) {
    uint64_t bit = r.bit;
    f.push_back({{fmt::format("clocks_event_reasons.{}", r.suffix),
                  fmt::format("clocks_throttle_reasons.{}", r.suffix)},
                 "",
                 "Active or Not Active",
                 [bit](const node::NodeView&, const node::GpuView& g) { return ReasonActive(g, bit); }});
  }
  return f;
}

std::vector<GpuField> MakeGpuFields() {
  std::vector<GpuField> f;
  for (std::vector<GpuField> (*part)() :
       {&IdentityFields, &SampleTableFields, &LimitAndErrorFields, &ClockReasonFields}) {
    std::vector<GpuField> fields = part();
    f.insert(f.end(), std::make_move_iterator(fields.begin()), std::make_move_iterator(fields.end()));
  }
  return f;
}

std::vector<AppField> MakeAppFields() {
  return {
      {{"timestamp"},
       "",
       "Time of the query",
       [](const node::NodeView& fl, const node::GpuView&, const node::ProcessView&) -> Opt {
         return Timestamp(fl.taken_at);
       }},
      {{"gpu_name"},
       "",
       "Product name of the GPU",
       [](const node::NodeView&, const node::GpuView& g, const node::ProcessView&) {
         return Text(g.info.name);
       }},
      {{"gpu_bus_id"},
       "",
       "PCI bus id of the GPU",
       [](const node::NodeView&, const node::GpuView& g, const node::ProcessView&) {
         return Text(g.info.pci_bus_id);
       }},
      {{"gpu_serial"},
       "",
       "Serial number of the GPU",
       [](const node::NodeView&, const node::GpuView& g, const node::ProcessView&) { return g.info.serial; }},
      {{"gpu_uuid"},
       "",
       "UUID of the GPU",
       [](const node::NodeView&, const node::GpuView& g, const node::ProcessView&) {
         return Text(g.info.uuid);
       }},
      {{"pid"},
       "",
       "Process id",
       [](const node::NodeView&, const node::GpuView&, const node::ProcessView& p) -> Opt {
         return fmt::format("{}", p.process.pid);
       }},
      {{"process_name", "name"},
       "",
       "Process name (the executable as started)",
       [](const node::NodeView&, const node::GpuView&, const node::ProcessView& p) -> Opt {
         if (!p.details.exists) return std::nullopt;
         std::string first = p.details.command.substr(0, p.details.command.find(' '));
         return first.empty() ? p.details.name : first;
       }},
      {{"used_gpu_memory", "used_memory"},
       "MiB",
       "GPU memory used by the process",
       [](const node::NodeView&, const node::GpuView&, const node::ProcessView& p) {
         return Mib(p.process.used_memory_bytes);
       }},
      {{"gpu_instance_id"},
       "",
       "MIG GPU instance the process runs in ([N/A] without MIG)",
       [](const node::NodeView&, const node::GpuView&, const node::ProcessView& p) {
         return Num(p.process.gpu_instance_id);
       }},
      {{"compute_instance_id"},
       "",
       "MIG compute instance the process runs in ([N/A] without MIG)",
       [](const node::NodeView&, const node::GpuView&, const node::ProcessView& p) {
         return Num(p.process.compute_instance_id);
       }},
  };
}

std::string Join(const std::vector<std::string>& cells) {
  std::string line;
  for (size_t i = 0; i < cells.size(); ++i) {
    if (i > 0) line += ", ";
    line += cells[i];
  }
  return line + "\n";
}

template <typename Field>
Result<std::vector<const Field*>> Resolve(std::string_view list, const std::vector<Field>& table) {
  std::vector<const Field*> out;
  for (const std::string& name : SplitCommas(list, Empties::kKeep)) {
    const Field* found = nullptr;
    for (const Field& f : table) {
      for (const std::string& n : f.names) {
        if (n == name) found = &f;
      }
    }
    if (found == nullptr) {
      return Status::InvalidArgument(fmt::format("Field \"{}\" is not a valid field to query.", name));
    }
    out.push_back(found);
  }
  return out;
}

template <typename Field>
std::string Header(const std::vector<const Field*>& fields, const CsvFormat& format) {
  std::vector<std::string> cells;
  for (const Field* f : fields) {
    cells.push_back(format.has_units && !f->unit.empty() ? fmt::format("{} [{}]", f->names[0], f->unit)
                                                         : f->names[0]);
  }
  return Join(cells);
}

template <typename Field>
std::string Cell(const Opt& value, const Field& f, const CsvFormat& format) {
  if (!value) return kNotAvailable;
  if (format.has_units && !f.unit.empty()) return fmt::format("{} {}", *value, f.unit);
  return *value;
}

constexpr size_t kHelpColumns = 100;

template <typename Field>
std::string Describe(const std::vector<Field>& table) {
  std::string out;
  for (const Field& f : table) {
    // Each name quoted, as nvidia-smi writes them ("a" or "b"); a line
    // that would pass 100 columns goes on with the next name.
    std::string names = "\"" + f.names[0] + "\"";
    size_t line_start = 0;
    for (size_t i = 1; i < f.names.size(); ++i) {
      std::string next = "\"" + f.names[i] + "\"";
      if (names.size() - line_start + 4 + next.size() > kHelpColumns) {
        names += " or\n";
        line_start = names.size();
        names += next;
      } else {
        names += " or " + next;
      }
    }
    std::string help = f.help + (f.unit.empty() ? "" : fmt::format(" [{}]", f.unit)) + ".";
    out += fmt::format("{}\n{}\n\n", names, WrapText(help, kHelpColumns, 0, 0));
  }
  return out;
}

}  // namespace

const std::vector<GpuField>& GpuFields() {
  static const std::vector<GpuField>* const fields = new std::vector<GpuField>(MakeGpuFields());
  return *fields;
}

const std::vector<AppField>& AppFields() {
  static const std::vector<AppField>* const fields = new std::vector<AppField>(MakeAppFields());
  return *fields;
}

Result<CsvFormat> ParseCsvFormat(std::string_view text) {
  CsvFormat format;
  bool first = true;
  for (const std::string& item : SplitCommas(text, Empties::kKeep)) {
    if (first && item != "csv") {
      return Status::InvalidArgument(fmt::format("--format: \"{}\" is not a valid format (use csv)", text));
    }
    if (!first) {
      if (item == "noheader")
        format.has_header = false;
      else if (item == "nounits")
        format.has_units = false;
      else
        return Status::InvalidArgument(fmt::format("--format: unknown option \"{}\"", item));
    }
    first = false;
  }
  return format;
}

Result<std::vector<const GpuField*>> ResolveGpuFields(std::string_view list) {
  return Resolve(list, GpuFields());
}

Result<std::vector<const AppField*>> ResolveAppFields(std::string_view list) {
  return Resolve(list, AppFields());
}

std::string RenderGpuQuery(const node::NodeView& node_view, const std::vector<const GpuField*>& fields,
                           const CsvFormat& format) {
  std::string out = format.has_header ? Header(fields, format) : "";
  for (const node::GpuView& g : node_view.gpus) {
    std::vector<std::string> cells;
    bool is_readable = g.sample.health == node::GpuHealth::kOk;
    for (const GpuField* f : fields) {
      // A lost GPU still has an index; its readings are unknown.
      bool is_static = f->names[0] == "index" || f->names[0] == "count" || f->names[0] == "timestamp" ||
                       f->names[0] == "driver_version";
      if (!is_readable && !is_static) {
        cells.emplace_back(g.sample.health == node::GpuHealth::kLost ? "[GPU is lost]" : "[Unknown Error]");
        continue;
      }
      cells.push_back(Cell(f->value(node_view, g), *f, format));
    }
    out += Join(cells);
  }
  return out;
}

std::string RenderAppQuery(const node::NodeView& node_view, const std::vector<const AppField*>& fields,
                           const CsvFormat& format) {
  std::string out = format.has_header ? Header(fields, format) : "";
  for (const node::GpuView& g : node_view.gpus) {
    for (const node::ProcessView& p : g.processes) {
      std::vector<std::string> cells;
      for (const AppField* f : fields) cells.push_back(Cell(f->value(node_view, g, p), *f, format));
      out += Join(cells);
    }
  }
  return out;
}

std::string DescribeGpuFields() { return Describe(GpuFields()); }
std::string DescribeAppFields() { return Describe(AppFields()); }

}  // namespace tarmac::cli
