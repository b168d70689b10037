// SPDX-License-Identifier: Apache-2.0
#include "sched/lease_devices.h"

namespace tarmac::sched {

const node::MigInstance* LeasedInstance(const Lease& lease, const node::GpuView& gpu) {
  if (!IsMigLease(lease)) return nullptr;
  for (const node::MigInstance& m : gpu.sample.mig_instances) {
    if (m.uuid == lease.uuids[0]) return &m;
  }
  return nullptr;
}

bool RunsInLease(const Lease& lease, const node::GpuView& gpu, const node::ProcessView& process) {
  if (!IsMigLease(lease)) return true;
  const node::MigInstance* m = LeasedInstance(lease, gpu);
  return m != nullptr && process.process.gpu_instance_id == m->gpu_instance_id;
}

bool IsLeasedInstanceGone(const Lease& lease, const node::NodeView& node_view) {
  if (!IsMigLease(lease) || lease.gpus.size() != 1) return false;
  int index = lease.gpus[0];
  if (index < 0 || index >= static_cast<int>(node_view.gpus.size())) return false;
  const node::GpuView& g = node_view.gpus[static_cast<size_t>(index)];
  if (g.sample.health != node::GpuHealth::kOk || !g.sample.has_mig_instances) return false;
  return LeasedInstance(lease, g) == nullptr;
}

}  // namespace tarmac::sched
