// SPDX-License-Identifier: Apache-2.0
#include "top/top_model.h"

#include <fmt/format.h>

namespace tarmac::top {

using nlohmann::json;

const char* SortKeyTitle(SortKey key) {
  switch (key) {
    case SortKey::kGpu:
      return "GPU";
    case SortKey::kPid:
      return "PID";
    case SortKey::kUser:
      return "USER";
    case SortKey::kGpuMemory:
      return "GMEM";
    case SortKey::kSm:
      return "SM%";
    case SortKey::kCpu:
      return "CPU%";
    case SortKey::kHostMemory:
      return "HMEM";
    case SortKey::kElapsed:
      return "TIME";
    case SortKey::kName:
      return "NAME";
  }
  return "?";
}

SortKey NextSortKey(SortKey key) {
  constexpr SortKey kOrder[] = {SortKey::kPid,        SortKey::kUser,    SortKey::kGpu,
                                SortKey::kGpuMemory,  SortKey::kSm,      SortKey::kCpu,
                                SortKey::kHostMemory, SortKey::kElapsed, SortKey::kName};
  for (size_t i = 0; i < std::size(kOrder); ++i) {
    if (kOrder[i] == key) return kOrder[(i + 1) % std::size(kOrder)];
  }
  return SortKey::kPid;
}

namespace {

std::string HolderOf(const json& lease) {
  if (!lease.is_object()) return "";
  std::string kind = lease.value("kind", std::string());
  if (!lease.value("slurm_job", std::string()).empty())
    return "slurm " + lease.value("slurm_job", std::string());
  return fmt::format("lease {}{}", lease.value("id", int64_t{0}), kind.empty() ? "" : " " + kind);
}

template <typename T>
std::optional<T> Optional(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  return it->get<T>();
}

}  // namespace

std::vector<TopProcess> ProcessesFromStatus(const json& status) {
  std::vector<TopProcess> out;
  if (!status.contains("gpus")) return out;
  for (const json& g : status["gpus"]) {
    int index = g.value("index", 0);
    std::string gpu_holder = HolderOf(g.value("lease", json()));
    if (gpu_holder.empty() && g.contains("pod") && g["pod"].is_object()) {
      gpu_holder =
          "pod " + g["pod"].value("namespace", std::string()) + "/" + g["pod"].value("name", std::string());
    }
    // MIG instances: which processes run on which, and who holds each.
    std::map<int64_t, std::pair<std::string, std::string>> on_instance;  // pid -> (profile, holder)
    for (const json& m : g.value("mig_instances", json::array())) {
      std::string holder = HolderOf(m.value("lease", json()));
      for (const json& pid : m.value("pids", json::array())) {
        on_instance[pid.get<int64_t>()] = {m.value("profile", std::string()), holder};
      }
    }
    for (const json& p : g.value("processes", json::array())) {
      TopProcess t;
      t.pid = p.value("pid", int64_t{0});
      t.parent_pid = p.value("parent_pid", int64_t{0});
      t.gpu = index;
      t.uid = p.value("uid", int64_t{-1});
      t.user = p.value("user", t.uid >= 0 ? std::to_string(t.uid) : std::string("?"));
      t.name = p.value("name", std::string("?"));
      t.command = p.value("command", std::string());
      t.gpu_memory_bytes = Optional<double>(p, "used_memory_bytes");
      t.sm_ratio = Optional<double>(p, "sm_utilization_ratio");
      t.is_idle_holding = p.value("is_idle_holding", false);
      t.holder = gpu_holder;
      if (auto it = on_instance.find(t.pid); it != on_instance.end()) {
        t.mig = it->second.first;
        t.holder = it->second.second;
      }
      if (t.holder.empty() && p.contains("pod")) {
        t.holder = "pod " + p.value("namespace", std::string()) + "/" + p.value("pod", std::string());
      }
      if (t.holder.empty() && p.contains("slurm_job_id"))
        t.holder = "slurm " + p.value("slurm_job_id", std::string());
      out.push_back(std::move(t));
    }
  }
  return out;
}

}  // namespace tarmac::top
