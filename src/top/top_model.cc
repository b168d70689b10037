// SPDX-License-Identifier: Apache-2.0
#include "top/top_model.h"

#include <fmt/format.h>

#include "node/gpu_marks.h"
#include "node/lease_kind.h"

namespace tarmac::top {

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

std::string HolderOf(const node::GpuLease& lease) {
  if (!lease.slurm_job.empty()) return "slurm " + lease.slurm_job;
  return fmt::format("lease {} {}", lease.id, node::LeaseKindName(lease.kind));
}

namespace {

std::string PodText(const node::KubernetesNames& pod) { return "pod " + pod.pod_namespace + "/" + pod.pod; }

// One process of GPU `g` as top lists it; `gpu_holder` holds its GPU.
TopProcess ProcessOf(const node::GpuView& g, const node::ProcessView& p, const std::string& gpu_holder) {
  TopProcess t;
  t.pid = p.process.pid;
  t.parent_pid = p.details.parent_pid;
  t.gpu = g.info.index;
  t.uid = p.details.uid;
  t.user = !p.details.user.empty() ? p.details.user : t.uid >= 0 ? std::to_string(t.uid) : std::string("?");
  t.name = p.details.name.empty() ? "?" : p.details.name;
  t.command = p.details.command;
  if (p.process.used_memory_bytes) t.gpu_memory_bytes = static_cast<double>(*p.process.used_memory_bytes);
  t.sm_ratio = p.process.sm_utilization_ratio;
  t.is_idle_holding = node::IsIdleHolding(p, g);
  t.holder = gpu_holder;
  // On a MIG instance: its profile, and whoever holds the instance.
  if (p.process.gpu_instance_id) {
    if (const node::MigInstance* m = node::FindMigInstance(g.sample, *p.process.gpu_instance_id)) {
      t.mig = m->profile;
      auto lease = g.mig_leases.find(m->uuid);
      t.holder = lease != g.mig_leases.end() ? HolderOf(lease->second) : "";
    }
  }
  if (t.holder.empty() && !p.details.kubernetes.pod.empty()) t.holder = PodText(p.details.kubernetes);
  if (t.holder.empty() && !p.details.cgroup.slurm_job_id.empty())
    t.holder = "slurm " + p.details.cgroup.slurm_job_id;
  return t;
}

}  // namespace

std::vector<TopProcess> ProcessesFromStatus(const node::NodeView& status) {
  std::vector<TopProcess> out;
  for (const node::GpuView& g : status.gpus) {
    std::string gpu_holder = g.lease ? HolderOf(*g.lease) : g.allocated_to ? PodText(*g.allocated_to) : "";
    for (const node::ProcessView& p : g.processes) out.push_back(ProcessOf(g, p, gpu_holder));
  }
  return out;
}

}  // namespace tarmac::top
