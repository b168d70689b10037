// SPDX-License-Identifier: Apache-2.0
#include "config/config.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/proc_files.h"
#include "common/toml_reader.h"
#include "common/toml_text.h"
#include "config/toml_section.h"
#include "doctor/doctor_config.h"
#include "gpu/backend_config.h"
#include "http/http_config.h"
#include "ipc/server_config.h"
#include "kube/kube_config.h"
#include "leases/lease_config.h"
#include "metrics/metrics_config.h"
#include "sampler/sampler_config.h"
#include "sched/zombie_config.h"

namespace tarmac::config {
namespace {

using std::chrono::milliseconds;

// [agent]: the socket, the state directory, the log level.
void ReadAgentSection(ConfigSection& section, AgentSection* out) {
  section.String("socket", &out->socket_path);
  section.String("state_dir", &out->state_dir);
  section.OneOf("log_level", {"debug", "info", "warning", "error"}, &out->log_level);
  if (out->socket_path.empty() || out->socket_path.size() > 100) {
    section.Fail("socket", "must be a path of 1 to 100 bytes");
  }
}

// Each section and who reads it, in this order. A section read by two
// modules gives each its own keys; a key neither asked for is unknown.
using SectionReader = void (*)(ConfigSection&, Config&);
constexpr std::pair<const char*, SectionReader> kSections[] = {
    {"agent", [](ConfigSection& s, Config& c) { ReadAgentSection(s, &c.agent); }},
    {"gpu", [](ConfigSection& s, Config& c) { gpu::ReadGpuSection(s, &c.gpu); }},
    {"sampler", [](ConfigSection& s, Config& c) { sampler::ReadSamplerSection(s, &c.sampler); }},
    {"store", [](ConfigSection& s, Config& c) { store::ReadStoreSection(s, &c.store); }},
    {"report", [](ConfigSection& s, Config& c) { report::ReadReportSection(s, &c.report); }},
    {"http",
     [](ConfigSection& s, Config& c) {
       http::ReadHttpSection(s, &c.http);
       metrics::ReadMetricsKeys(s, &c.metrics);
     }},
    {"web", [](ConfigSection& s, Config& c) { http::ReadWebSection(s, &c.web); }},
    {"zombies",
     [](ConfigSection& s, Config& c) {
       sched::ReadZombieKeys(s, &c.leases.zombies);
       leases::ReadZombieAction(s, &c.leases);
     }},
    {"leases", [](ConfigSection& s, Config& c) { leases::ReadLeasesSection(s, &c.leases); }},
    {"backfill", [](ConfigSection& s, Config& c) { leases::ReadBackfillSection(s, &c.leases.backfill); }},
    {"slurm", [](ConfigSection& s, Config& c) { leases::ReadSlurmSection(s, &c.leases.slurm); }},
    {"api", [](ConfigSection& s, Config& c) { ipc::ReadApiSection(s, &c.api); }},
    {"doctor", [](ConfigSection& s, Config& c) { doctor::ReadDoctorSection(s, &c.doctor); }},
    {"kubernetes", [](ConfigSection& s, Config& c) { kube::ReadKubernetesSection(s, &c.kubernetes); }},
    {"fleet", [](ConfigSection& s, Config& c) { fleet::ReadFleetSection(s, &c.fleet); }},
};

// A section with no keys that notes each key its readers ask for.
class KeyRecorder : public ConfigSection {
 public:
  explicit KeyRecorder(std::string section) : section_(std::move(section)) {}
  const std::vector<std::string>& keys() const { return keys_; }

  bool Has(std::string_view key) override { return Note(key); }
  void Fail(std::string_view, std::string_view, std::string_view) override {}
  void String(std::string_view key, std::string*) override { Note(key); }
  bool IsWord(std::string_view key, std::string_view) override { return Note(key); }
  void Bool(std::string_view key, bool*) override { Note(key); }
  void Integer(std::string_view key, int64_t*, int64_t, int64_t) override { Note(key); }
  void Number(std::string_view key, double*, double, double) override { Note(key); }
  void Bytes(std::string_view key, int64_t*) override { Note(key); }
  void Interval(std::string_view key, milliseconds, milliseconds, milliseconds*) override { Note(key); }
  void OneOf(std::string_view key, std::initializer_list<std::string_view>, std::string*) override {
    Note(key);
  }
  void Strings(std::string_view key, std::vector<std::string>*) override { Note(key); }
  std::unique_ptr<ConfigSection> Table(std::string_view key, std::string_view) override {
    Note(key);
    return nullptr;
  }
  std::vector<std::string> Keys() const override { return {}; }

 private:
  bool Note(std::string_view key) {
    std::string full = section_ + "." + std::string(key);
    if (std::find(keys_.begin(), keys_.end(), full) == keys_.end()) keys_.push_back(full);
    return false;
  }
  std::string section_;
  std::vector<std::string> keys_;
};

}  // namespace

std::vector<std::string> ConfigKeys() {
  std::vector<std::string> all;
  Config c;
  for (const auto& [name, read] : kSections) {
    KeyRecorder recorder(name);
    read(recorder, c);
    all.insert(all.end(), recorder.keys().begin(), recorder.keys().end());
  }
  return all;
}

Result<Config> ParseConfig(std::string_view text, std::string_view source_name) {
  if (Status s = CheckTomlText(text, source_name); !s.ok()) return s;
  toml::parse_result parsed = toml::parse(text, source_name);
  if (!parsed) {
    const toml::parse_error& e = parsed.error();
    return Status::InvalidArgument(
        fmt::format("{}:{}: {}", source_name, e.source().begin.line, e.description()));
  }
  Errors errors(source_name);
  Config c;
  Reader root(parsed.table(), "", &errors);
  for (const auto& [name, read] : kSections) {
    const toml::node* n = root.Find(name);
    if (n == nullptr) continue;
    if (!n->is_table()) {
      root.Fail(*n, name, fmt::format("expected a table [{}]", name));
      continue;
    }
    TomlSection section(*n->as_table(), name, &errors);
    read(section, c);
    section.RejectUnknown();
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
  return config.store.options.path.empty() ? config.agent.state_dir + "/tarmac.db"
                                           : config.store.options.path;
}

Result<Config> LoadConfig(const std::string& path, bool must_exist) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 && !must_exist && path == kDefaultConfigPath) return Config{};
  std::string text;
  // One byte past the limit tells a file over it from one exactly at it:
  // an oversized file is refused, never read in part.
  if (!ReadOperatorFile(path, &text, kMaxConfigBytes + 1)) {
    return Status::InvalidArgument(
        fmt::format("{}: cannot read the config file: {}", path, std::strerror(errno)));
  }
  if (text.size() > kMaxConfigBytes) {
    return Status::InvalidArgument(
        fmt::format("{}: the config file is larger than {} KiB; refused (is it the right file?)", path,
                    kMaxConfigBytes / 1024));
  }
  return ParseConfig(text, path);
}

}  // namespace tarmac::config
