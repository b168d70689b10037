// SPDX-License-Identifier: Apache-2.0
#include "node/lease_marks.h"

namespace tarmac::node {

void ApplyLeaseMarks(const LeaseMarks& marks, NodeView* node_view) {
  for (GpuView& g : node_view->gpus) ApplyLeaseMarks(marks, &g);
}

void ApplyLeaseMarks(const LeaseMarks& marks, GpuView* gpu) {
  GpuView& g = *gpu;
  auto lease = marks.leases.find(g.info.index);
  g.lease = lease != marks.leases.end() ? std::optional<GpuLease>(lease->second) : std::nullopt;
  g.mig_leases.clear();
  for (const MigInstance& m : g.sample.mig_instances) {
    if (auto it = marks.mig_leases.find(m.uuid); it != marks.mig_leases.end())
      g.mig_leases[m.uuid] = it->second;
  }
  auto preempted = marks.preemptions.find(g.info.index);
  g.backfill_preemptions = preempted != marks.preemptions.end() ? preempted->second : 0;
  auto drained = marks.drains.find(g.info.uuid);
  g.drained = drained != marks.drains.end() ? std::optional<GpuDrain>(drained->second) : std::nullopt;
}

}  // namespace tarmac::node
