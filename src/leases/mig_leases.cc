// SPDX-License-Identifier: Apache-2.0
//
// Leases on MIG instances (lease_ticks.h): those whose instance is gone
// from its GPU's layout end; free instances with processes outside any
// lease are marked as foreign use.
#include <fmt/format.h>

#include <set>

#include "leases/lease_text.h"
#include "leases/lease_ticks.h"
#include "sched/lease_devices.h"

namespace tarmac::leases {

using TimePoint = sched::TimePoint;

void CheckMigInstances(LeaseCore& core, const node::NodeView& reading, TimePoint now) {
  std::vector<int64_t> gone;
  for (const auto& [id, l] : core.book.leases()) {
    if (sched::IsLeasedInstanceGone(l, reading)) gone.push_back(id);
  }
  for (int64_t id : gone) {
    const sched::Lease* l = core.book.FindLease(id);
    core.EndLease(
        id, "mig_instance_gone",
        fmt::format("MIG instance {} ({}) on GPU {} is gone: the GPU's MIG layout changed; the lease ends",
                    l->uuids[0], l->mig_profile, l->gpus[0]),
        Actor{}, false, now);
  }
}

void MarkMigForeign(LeaseCore& core, const node::NodeView& reading) {
  std::set<std::string> leased;
  for (const auto& [id, l] : core.book.leases()) {
    if (sched::IsMigLease(l)) leased.insert(l.uuids[0]);
  }
  for (sched::GpuSlot& s : core.slots) {
    const node::GpuView& g = reading.gpus[static_cast<size_t>(s.index)];
    for (sched::MigSlot& m : s.mig) {
      if (leased.count(m.uuid) != 0) continue;
      const node::MigInstance* mi = nullptr;
      for (const node::MigInstance& x : g.sample.mig_instances) {
        if (x.uuid == m.uuid) mi = &x;
      }
      if (mi == nullptr) continue;
      for (const node::ProcessView& p : g.processes) {
        m.has_foreign_processes |= p.process.gpu_instance_id == mi->gpu_instance_id && node::IsCompute(p);
      }
    }
  }
}

}  // namespace tarmac::leases
