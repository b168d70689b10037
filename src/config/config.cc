// SPDX-License-Identifier: Apache-2.0
#include "config/config.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "common/proc_files.h"
#include "common/toml_text.h"
#include "config/toml_reader.h"

namespace tarmac::config {
namespace {

using std::chrono::milliseconds;

// Reads `key` into *out when present and within [min, max].
// A duration as a person writes it: "100ms", "1m", "30d".
std::string DurationText(milliseconds d) {
  int64_t ms = d.count();
  if (ms == 0 || ms % 1000 != 0) return fmt::format("{}ms", ms);
  int64_t s = ms / 1000;
  if (s % 86400 == 0) return fmt::format("{}d", s / 86400);
  if (s % 3600 == 0) return fmt::format("{}h", s / 3600);
  if (s % 60 == 0) return fmt::format("{}m", s / 60);
  return fmt::format("{}s", s);
}

void ReadInterval(Reader& r, const toml::table& table, std::string_view key, milliseconds min,
                  milliseconds max, milliseconds* out) {
  std::optional<milliseconds> value;
  r.Duration(key, &value);
  if (!value) return;
  if (*value < min || *value > max) {
    if (const toml::node* n = table.get(key)) {
      r.Fail(*n, key, fmt::format("must be from {} to {}", DurationText(min), DurationText(max)));
    }
    return;
  }
  *out = *value;
}

void ReadOneOf(Reader& r, const toml::table& table, std::string_view key,
               std::initializer_list<std::string_view> allowed, std::string* out) {
  std::string value = *out;
  r.String(key, &value);
  if (std::find(allowed.begin(), allowed.end(), value) == allowed.end()) {
    std::string names;
    for (std::string_view a : allowed) names += fmt::format("{}\"{}\"", names.empty() ? "" : ", ", a);
    if (const toml::node* n = table.get(key)) r.Fail(*n, key, fmt::format("expected one of {}", names));
    return;
  }
  *out = value;
}

// Each section: a table, or an error.
const toml::table* Section(Reader& root, std::string_view name) {
  const toml::node* n = root.Find(name);
  if (n == nullptr) return nullptr;
  if (!n->is_table()) {
    root.Fail(*n, name, fmt::format("expected a table [{}]", name));
    return nullptr;
  }
  return n->as_table();
}

}  // namespace

namespace {

// [agent]: the socket, the state directory, the log level.
void ReadAgentSection(Reader& r, const toml::table* t, Errors* /*errors*/, Config& c) {
  r.String("socket", &c.socket_path);
  r.String("state_dir", &c.state_dir);
  ReadOneOf(r, *t, "log_level", {"debug", "info", "warning", "error"}, &c.log_level);
  if (c.socket_path.empty() || c.socket_path.size() > 100) {
    if (const toml::node* n = t->get("socket")) r.Fail(*n, "socket", "must be a path of 1 to 100 bytes");
  }
  r.RejectUnknown();
}

// [gpu]: which backend reads the GPUs.
void ReadGpuSection(Reader& r, const toml::table* t, Errors* /*errors*/, Config& c) {
  ReadOneOf(r, *t, "backend", {"auto", "nvml", "sim"}, &c.backend);
  r.String("nvml_library", &c.nvml_library);
  r.String("scenario", &c.scenario);
  r.String("sim_dir", &c.sim_dir);
  r.RejectUnknown();
  if (c.backend == "sim" && c.scenario.empty()) {
    if (const toml::node* n = t->get("backend")) r.Fail(*n, "scenario", "backend \"sim\" needs a scenario");
  }
}

// [sampler]: how often each tier is read, and how long a read may take.
void ReadSamplerSection(Reader& r, const toml::table* t, Errors* /*errors*/, Config& c) {
  ReadInterval(r, *t, "fast_interval", milliseconds(100), milliseconds(60000), &c.fast_interval);
  ReadInterval(r, *t, "slow_interval", milliseconds(1000), milliseconds(3600000), &c.slow_interval);
  ReadInterval(r, *t, "call_timeout", milliseconds(100), milliseconds(60000), &c.call_timeout);
  ReadInterval(r, *t, "reattach_interval", milliseconds(100), milliseconds(3600000), &c.reattach_interval);
  r.RejectUnknown();
  if (c.slow_interval < c.fast_interval) {
    if (const toml::node* n = t->get("slow_interval")) r.Fail(*n, "slow_interval", "must not be shorter than fast_interval");
  }
}

// [store]: the history database and how long each tier is kept.
void ReadStoreSection(Reader& r, const toml::table* t, Errors* /*errors*/, Config& c) {
  r.Bool("enabled", &c.is_store_enabled);
  r.String("path", &c.store_path);
  milliseconds day = std::chrono::hours(24);
  ReadInterval(r, *t, "raw_retention", day, day * 365 * 10, &c.raw_retention);
  ReadInterval(r, *t, "minute_retention", day, day * 365 * 10, &c.minute_retention);
  ReadInterval(r, *t, "hour_retention", day, day * 365 * 30, &c.hour_retention);
  ReadInterval(r, *t, "integrity_check_interval", milliseconds(0), day * 30, &c.integrity_check_interval);
  r.RejectUnknown();
  if (c.minute_retention < c.raw_retention || c.hour_retention < c.minute_retention) {
    if (const toml::node* n = t->get("minute_retention") ? t->get("minute_retention") : t->get("hour_retention")) {
      r.Fail(*n, "minute_retention", "tiers must keep longer as they get coarser (raw <= minute <= hour)");
    }
  }
}

// [report]: currency and prices of a GPU-hour.
void ReadReportSection(Reader& r, const toml::table* /*t*/, Errors* errors_out, Config& c) {
  Errors& errors = *errors_out;
  r.String("currency", &c.currency);
  r.Number("gpu_hour_cost", &c.gpu_hour_cost, 0, 1e6);
  if (const toml::node* n = r.Find("gpu_hour_cost_by_model")) {
    if (!n->is_table()) {
      r.Fail(*n, "gpu_hour_cost_by_model", "expected a table of GPU names and prices");
    } else {
      Reader models(*n->as_table(), "report.gpu_hour_cost_by_model", &errors);
      for (const auto& [model, price] : *n->as_table()) {
        double value = 0;
        models.Number(model.str(), &value, 0, 1e6);
        c.gpu_hour_cost_by_model[std::string(model.str())] = value;
      }
    }
  }
  r.RejectUnknown();
}

// [http]: the metrics and health endpoint.
void ReadHttpSection(Reader& r, const toml::table* t, Errors* /*errors*/, Config& c) {
  r.String("listen", &c.http_listen);
  r.String("hostname", &c.hostname);
  r.Bool("dcgm_compatible", &c.is_dcgm_compatible);
  ReadOneOf(r, *t, "dcgm_hostname_label", {"Hostname", "hostname"}, &c.dcgm_hostname_label);
  r.Integer("max_process_series", &c.max_process_series, 0, 100000);
  r.RejectUnknown();
  if (c.http_listen != "off") {
    size_t colon = c.http_listen.rfind(':');
    bool is_ok = colon != std::string::npos && colon > 0 && colon + 1 < c.http_listen.size() &&
                 c.http_listen.find_first_not_of("0123456789", colon + 1) == std::string::npos &&
                 c.http_listen.size() - colon - 1 <= 5 && std::stoi(c.http_listen.substr(colon + 1)) <= 65535;
    if (!is_ok) {
      if (const toml::node* n = t->get("listen")) r.Fail(*n, "listen", "expected HOST:PORT or \"off\"");
    }
  }
}

// [zombies]: what counts as a process holding a GPU idle, and what to do.
void ReadZombiesSection(Reader& r, const toml::table* t, Errors* /*errors*/, Config& c) {
  r.Bytes("min_memory", &c.zombie_min_memory_bytes);
  ReadInterval(r, *t, "idle_for", milliseconds(1000), milliseconds(7LL * 24 * 3600 * 1000), &c.zombie_idle_for);
  r.Strings("allowlist", &c.zombie_allowlist);
  r.Bool("include_system_users", &c.zombie_includes_system_users);
  ReadOneOf(r, *t, "policy", {"report", "terminate"}, &c.zombie_policy);
  r.RejectUnknown();
}

// [leases]: who administers leases, grace periods and idle policies.
void ReadLeasesSection(Reader& r, const toml::table* t, Errors* errors_out, Config& c) {
  Errors& errors = *errors_out;
  r.String("admin_group", &c.admin_group);
  milliseconds week = std::chrono::hours(24 * 7);
  ReadInterval(r, *t, "kill_grace", milliseconds(0), milliseconds(600000), &c.kill_grace);
  ReadInterval(r, *t, "idle_timeout", milliseconds(0), week, &c.idle_timeout);
  ReadInterval(r, *t, "idle_grace", milliseconds(0), week, &c.idle_grace);
  ReadOneOf(r, *t, "idle_policy", {"warn", "release", "terminate"}, &c.idle_policy);
  ReadOneOf(r, *t, "foreign_policy", {"report", "terminate"}, &c.foreign_policy);
  for (auto [key, out, keys] : {std::tuple{"idle_policy_by_user", &c.idle_policy_by_user, false},
                                std::tuple{"idle_policy_by_priority", &c.idle_policy_by_priority, true}}) {
    const toml::node* n = r.Find(key);
    if (n == nullptr) continue;
    if (!n->is_table()) {
      r.Fail(*n, key, "expected a table of policies (\"warn\", \"release\" or \"terminate\")");
      continue;
    }
    std::string prefix = std::string("leases.") + key;
    Reader each(*n->as_table(), prefix, &errors);
    for (const auto& [name, value] : *n->as_table()) {
      std::string policy;
      ReadOneOf(each, *n->as_table(), name.str(), {"warn", "release", "terminate"}, &policy);
      if (keys && name.str() != "low" && name.str() != "normal" && name.str() != "high") {
        each.Fail(value, name.str(), "expected a priority: low, normal or high");
        continue;
      }
      if (!policy.empty()) (*out)[std::string(name.str())] = policy;
    }
  }
  r.RejectUnknown();
}

// [api]: limits of the local API socket.
void ReadApiSection(Reader& r, const toml::table* t, Errors* /*errors*/, Config& c) {
  r.Integer("max_connections", &c.max_connections, 1, 65536);
  r.Bytes("max_request_bytes", &c.max_request_bytes);
  ReadInterval(r, *t, "request_timeout", milliseconds(100), milliseconds(600000), &c.request_timeout);
  if (c.max_request_bytes < 1024 || c.max_request_bytes > (int64_t{16} << 20)) {
    if (const toml::node* n = t->get("max_request_bytes")) {
      r.Fail(*n, "max_request_bytes", "must be from 1KiB to 16MiB");
    }
  }
  r.RejectUnknown();
}

}  // namespace

Result<Config> ParseConfig(std::string_view text, std::string_view source_name) {
  if (Status s = CheckTomlText(text, source_name); !s.ok()) return s;
  toml::parse_result parsed = toml::parse(text, source_name);
  if (!parsed) {
    const toml::parse_error& e = parsed.error();
    return Status::InvalidArgument(fmt::format("{}:{}: {}", source_name, e.source().begin.line, e.description()));
  }
  Errors errors(source_name);
  Config c;
  Reader root(parsed.table(), "", &errors);
  // Each section is read by its own function, in this order.
  using SectionReader = void (*)(Reader&, const toml::table*, Errors*, Config&);
  static constexpr std::pair<const char*, SectionReader> kSections[] = {
      {"agent", ReadAgentSection},     {"gpu", ReadGpuSection},         {"sampler", ReadSamplerSection},
      {"store", ReadStoreSection},     {"report", ReadReportSection},   {"http", ReadHttpSection},
      {"zombies", ReadZombiesSection}, {"leases", ReadLeasesSection},   {"api", ReadApiSection}};
  for (const auto& [name, read] : kSections) {
    if (const toml::table* t = Section(root, name)) {
      Reader r(*t, name, &errors);
      read(r, t, &errors, c);
    }
  }
  root.RejectUnknown();
  if (errors.any()) {
    std::string all;
    for (const std::string& e : errors.all()) all += (all.empty() ? "" : "\n") + e;
    return Status::InvalidArgument(all);
  }
  return c;
}

std::string StorePath(const Config& config) {
  return config.store_path.empty() ? config.state_dir + "/tarmac.db" : config.store_path;
}

double GpuHourCost(const Config& config, const std::string& model) {
  auto it = config.gpu_hour_cost_by_model.find(model);
  return it != config.gpu_hour_cost_by_model.end() ? it->second : config.gpu_hour_cost;
}

Result<Config> LoadConfig(const std::string& path, bool must_exist) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 && !must_exist && path == kDefaultConfigPath) return Config{};
  std::string text;
  // One byte past the limit tells a file over it from one exactly at it:
  // an oversized file is refused, never read in part.
  if (!ReadSmallFile(path, &text, kMaxConfigBytes + 1)) {
    return Status::InvalidArgument(fmt::format("{}: cannot read the config file: {}", path, std::strerror(errno)));
  }
  if (text.size() > kMaxConfigBytes) {
    return Status::InvalidArgument(
        fmt::format("{}: the config file is larger than {} KiB; refused (is it the right file?)", path,
                    kMaxConfigBytes / 1024));
  }
  return ParseConfig(text, path);
}

}  // namespace tarmac::config
