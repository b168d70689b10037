// SPDX-License-Identifier: Apache-2.0
#include "slurm/job_answer_json.h"

#include <fmt/format.h>

#include "common/json_fields.h"

namespace tarmac::slurm {

using nlohmann::json;

Result<PrologAnswer> PrologAnswerFromJson(const json& j) {
  PrologAnswer a;
  JsonFields f(j, "slurm.prolog answer");
  f.Optional("job", &a.job);
  f.Optional("waiting", &a.is_waiting);
  f.Optional("retry_after_ms", &a.retry_after_ms);
  f.Optional("detail", &a.detail);
  if (f.has("lease")) {
    JsonFields lease = f.Object("lease");
    int64_t id = 0;
    lease.Get("id", &id);
    lease.Optional("gpus", &a.gpus);
    a.lease_id = id;
  }
  if (!f.ok()) return Status::Corruption(f.status().message());
  return a;
}

json EpilogAnswerToJson(const EpilogAnswer& a) {
  json leftovers = json::array();
  for (const EpilogAnswer::Leftover& l : a.terminated)
    leftovers.push_back({{"pid", l.pid}, {"gpu", l.gpu}, {"command", l.command}});
  return {
      {"job", a.job},
      {"lease", a.lease_id},
      {"gpus", a.gpus},
      {"held_seconds", a.held_seconds},
      {"idle_gpu_seconds", a.idle_gpu_seconds},
      {"mean_utilization_ratio", a.mean_utilization_ratio ? json(*a.mean_utilization_ratio) : json(nullptr)},
      {"memory_max_bytes", a.memory_max_bytes},
      {"terminated", leftovers}};
}

Result<EpilogAnswer> EpilogAnswerFromJson(const json& j) {
  EpilogAnswer a;
  JsonFields f(j, "slurm.epilog answer");
  f.Get("job", &a.job);
  f.Optional("lease", &a.lease_id);
  f.Optional("gpus", &a.gpus);
  f.Optional("held_seconds", &a.held_seconds);
  f.Optional("idle_gpu_seconds", &a.idle_gpu_seconds);
  f.Optional("mean_utilization_ratio", &a.mean_utilization_ratio);
  f.Optional("memory_max_bytes", &a.memory_max_bytes);
  if (!f.ok()) return Status::Corruption(f.status().message());
  if (j.contains("terminated") && j["terminated"].is_array()) {
    for (const json& item : j["terminated"]) {
      EpilogAnswer::Leftover l;
      JsonFields t(item, fmt::format("terminated[{}]", a.terminated.size()));
      t.Get("pid", &l.pid);
      t.Optional("gpu", &l.gpu);
      t.Optional("command", &l.command);
      if (!t.ok()) return Status::Corruption(t.status().message());
      a.terminated.push_back(std::move(l));
    }
  }
  return a;
}

std::string EpilogSummary(const EpilogAnswer& a) {
  size_t gpus = a.gpus.size();
  size_t left = a.terminated.size();
  std::string mean = a.mean_utilization_ratio ? fmt::format("mean {:.0f} %", *a.mean_utilization_ratio * 100)
                                              : std::string("mean unknown");
  std::string out =
      fmt::format("tarmac: job {}: {} GPU{} for {:.2f} h, {}, {:.2f} GPU-hours idle, peak {:.1f} GiB", a.job,
                  gpus, gpus == 1 ? "" : "s", a.held_seconds / 3600, mean, a.idle_gpu_seconds / 3600,
                  static_cast<double>(a.memory_max_bytes) / (1 << 30));
  if (left > 0) out += fmt::format("; {} process{} left on its GPUs terminated", left, left == 1 ? "" : "es");
  return out;
}

}  // namespace tarmac::slurm
