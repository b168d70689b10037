// SPDX-License-Identifier: Apache-2.0
#include "sim/load.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>

#include "common/enum_names.h"
#include "common/fs.h"
#include "common/proc_files.h"
#include "nvidia/vendor_facts.h"

namespace tarmac::sim {
namespace {

int64_t ToNanos(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

std::chrono::system_clock::time_point FromNanos(int64_t ns) {
  return std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(std::chrono::nanoseconds(ns)));
}

constexpr std::pair<LoadPattern, const char*> kPatternNames[] = {
    {LoadPattern::kSteady, "steady"}, {LoadPattern::kBursty, "bursty"}, {LoadPattern::kIdle, "idle"}};

}  // namespace

const char* LoadPatternName(LoadPattern pattern) { return EnumName(kPatternNames, pattern); }

bool ParseLoadPattern(std::string_view text, LoadPattern* pattern) {
  return ParseEnum(kPatternNames, text, pattern);
}

std::string EncodeLoad(const Load& load) {
  nlohmann::json j = {
      {"pid", load.pid},
      {"start_ticks", load.start_ticks},
      {"gpus", load.gpus},
      {"memory_bytes", load.memory_bytes},
      {"utilization_ratio", load.utilization_ratio},
      {"tensor_ratio", load.tensor_ratio},
      {"pattern", LoadPatternName(load.pattern)},
      {"started_at_ns", ToNanos(load.started_at)},
      {"command", load.command},
  };
  if (load.ended_at) j["ended_at_ns"] = ToNanos(*load.ended_at);
  if (!load.mig_uuids.empty()) j["mig"] = load.mig_uuids;
  return j.dump();
}

Result<Load> DecodeLoad(std::string_view text, std::string_view source) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  auto bad = [&](std::string_view what) {
    return Status::Corruption(fmt::format("load file {}: {}", source, what));
  };
  if (!j.is_object()) return bad("not a JSON object");
  Load load;
  auto integer = [&](const char* key, int64_t* out) {
    auto it = j.find(key);
    if (it == j.end() || !it->is_number_integer()) return false;
    *out = it->get<int64_t>();
    return true;
  };
  int64_t started_ns = 0;
  if (!integer("pid", &load.pid) || load.pid <= 0) return bad("bad pid");
  if (!integer("start_ticks", &load.start_ticks)) return bad("bad start_ticks");
  if (!integer("memory_bytes", &load.memory_bytes) || load.memory_bytes < 0) return bad("bad memory_bytes");
  if (!integer("started_at_ns", &started_ns)) return bad("bad started_at_ns");
  load.started_at = FromNanos(started_ns);
  auto util = j.find("utilization_ratio");
  if (util == j.end() || !util->is_number()) return bad("bad utilization_ratio");
  load.utilization_ratio = util->get<double>();
  if (!(load.utilization_ratio >= 0 && load.utilization_ratio <= 1)) return bad("bad utilization_ratio");
  if (auto tensor = j.find("tensor_ratio"); tensor != j.end()) {  // Optional: older loads lack it.
    if (!tensor->is_number()) return bad("bad tensor_ratio");
    load.tensor_ratio = tensor->get<double>();
    if (!(load.tensor_ratio >= 0 && load.tensor_ratio <= 1)) return bad("bad tensor_ratio");
  }
  auto pattern = j.find("pattern");
  if (pattern == j.end() || !pattern->is_string() ||
      !ParseLoadPattern(pattern->get<std::string>(), &load.pattern)) {
    return bad("bad pattern");
  }
  auto gpus = j.find("gpus");
  if (gpus == j.end() || !gpus->is_array()) return bad("bad gpus");
  for (const nlohmann::json& g : *gpus) {
    if (!g.is_number_integer() || g.get<int64_t>() < 0 || g.get<int64_t>() > 1023) return bad("bad gpus");
    load.gpus.push_back(g.get<int>());
  }
  if (auto mig = j.find("mig"); mig != j.end()) {  // Optional: loads on whole GPUs lack it.
    if (!mig->is_array()) return bad("bad mig");
    for (const nlohmann::json& m : *mig) {
      if (!m.is_string() || !nvidia::IsMigUuid(m.get<std::string>())) return bad("bad mig");
      load.mig_uuids.push_back(m.get<std::string>());
    }
  }
  auto command = j.find("command");
  if (command != j.end() && command->is_string()) load.command = command->get<std::string>();
  int64_t ended_ns = 0;
  if (j.contains("ended_at_ns")) {
    if (!integer("ended_at_ns", &ended_ns)) return bad("bad ended_at_ns");
    load.ended_at = FromNanos(ended_ns);
  }
  return load;
}

// A zombie's context is gone, as the CUDA driver frees it at exit.
std::optional<int64_t> ProcessStartTicks(int64_t pid) { return LiveStartTicks(pid); }

LoadRegistry::LoadRegistry(std::string dir)
    : loads_dir_(std::move(dir) + "/loads"), ended_dir_(loads_dir_ + "/" + kEndedFolder) {}

Result<std::string> LoadRegistry::Register(const Load& load, int serial) const {
  if (::mkdir(loads_dir_.c_str(), 0755) != 0 && errno != EEXIST) {
    return Status::IOError(fmt::format("cannot create {}", loads_dir_), std::strerror(errno));
  }
  std::string path = serial == 0
                         ? fmt::format("{}/{}-{}.json", loads_dir_, load.pid, load.start_ticks)
                         : fmt::format("{}/{}-{}-{}.json", loads_dir_, load.pid, load.start_ticks, serial);
  Status s = WriteLoad(path, load);
  if (!s.ok()) return s;
  return path;
}

Status LoadRegistry::End(const std::string& path, Load load,
                         std::chrono::system_clock::time_point now) const {
  load.ended_at = now;
  return WriteLoad(path, load);
}

Status LoadRegistry::WriteLoad(const std::string& path, const Load& load) const {
  return WriteFileAtomically(path, EncodeLoad(load));
}

Status LoadRegistry::Heartbeat(const std::string& path) const {
  if (::utimensat(AT_FDCWD, path.c_str(), nullptr, 0) != 0) {
    return Status::IOError(fmt::format("cannot touch {}", path), std::strerror(errno));
  }
  return Status::OK();
}

int64_t LoadRegistry::ChangedNanos() const {
  struct stat st {};
  if (::stat(loads_dir_.c_str(), &st) != 0) return 0;
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

std::vector<std::pair<std::string, Load>> LoadRegistry::ListFolder(const std::string& dir_path,
                                                                   std::vector<std::string>* dead) const {
  std::vector<std::pair<std::string, Load>> loads;
  DIR* dir = ::opendir(dir_path.c_str());
  if (dir == nullptr) return loads;
  while (dirent* entry = ::readdir(dir)) {
    std::string name(entry->d_name);
    if (name.size() < 6 || name.substr(name.size() - 5) != ".json") continue;
    std::string path = dir_path + "/" + name;
    std::string text;
    struct stat st {};
    if (!ReadSmallFile(path, &text) || ::stat(path.c_str(), &st) != 0) continue;  // (Set aside meanwhile.)
    Result<Load> load = DecodeLoad(text, path);
    if (!load.ok()) continue;
    Load& l = load.value();
    std::optional<int64_t> ticks = ProcessStartTicks(l.pid);
    bool is_dead = !ticks || *ticks != l.start_ticks;
    if (is_dead && !l.ended_at)
      l.ended_at = FromNanos(int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec);
    if (is_dead && dead != nullptr) dead->push_back(name);
    loads.emplace_back(std::move(name), std::move(l));
  }
  ::closedir(dir);
  return loads;
}

void LoadRegistry::SetAside(const std::vector<std::string>& names) const {
  if (names.empty()) return;
  int loads = ::open(loads_dir_.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (loads < 0) return;
  struct stat folder {};
  if (::fstat(loads, &folder) == 0 && folder.st_uid == ::geteuid()) {
    (void)::mkdirat(loads, kEndedFolder, 0755);
    int ended = ::openat(loads, kEndedFolder, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat aside {};
    if (ended >= 0 && ::fstat(ended, &aside) == 0 && aside.st_uid == ::geteuid()) {
      for (const std::string& name : names) (void)::renameat(loads, name.c_str(), ended, name.c_str());
    }
    if (ended >= 0) ::close(ended);
  }
  ::close(loads);
}

namespace {

void ByStart(std::vector<Load>* loads) {
  std::sort(loads->begin(), loads->end(), [](const Load& a, const Load& b) {
    return a.started_at != b.started_at ? a.started_at < b.started_at : a.pid < b.pid;
  });
}

}  // namespace

std::vector<Load> LoadRegistry::List() const {
  // The folder first, then what is set aside (by a program's start,
  // meanwhile too): each file once, by name. Nothing is moved here: the
  // agent's NVML reads the world as root.
  std::vector<Load> loads;
  std::set<std::string> seen;
  for (auto& [name, load] : ListFolder(loads_dir_, nullptr)) {
    seen.insert(name);
    loads.push_back(std::move(load));
  }
  for (auto& [name, load] : ListFolder(ended_dir_, nullptr)) {
    if (seen.count(name) == 0) loads.push_back(std::move(load));
  }
  ByStart(&loads);
  return loads;
}

std::vector<Load> LoadRegistry::ListLive() const {
  std::vector<Load> loads;
  std::vector<std::string> dead;
  for (auto& [name, load] : ListFolder(loads_dir_, &dead)) {
    if (!load.ended_at) loads.push_back(std::move(load));
  }
  SetAside(dead);
  ByStart(&loads);
  return loads;
}

}  // namespace tarmac::sim
