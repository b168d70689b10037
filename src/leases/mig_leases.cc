// SPDX-License-Identifier: Apache-2.0
//
// LeaseService and MIG instances: leases on instances that a layout change
// destroyed end with an event; free instances with processes outside any
// lease are not handed out.
#include <fmt/format.h>

#include <set>

#include "leases/lease_service.h"
#include "leases/lease_text.h"
#include "sched/lease_devices.h"

namespace tarmac::leases {}  // namespace tarmac::leases

namespace tarmac::leases {

void LeaseService::CheckMigInstances(const node::NodeView& fleet, TimePoint now) {
  std::vector<int64_t> gone;
  for (const auto& [id, l] : book_.leases()) {
    if (sched::IsLeasedInstanceGone(l, fleet)) gone.push_back(id);
  }
  for (int64_t id : gone) {
    const sched::Lease* l = book_.FindLease(id);
    EndLease(
        id, "mig_instance_gone",
        fmt::format("MIG instance {} ({}) on GPU {} is gone: the GPU's MIG layout changed; the lease ends",
                    l->uuids[0], l->mig_profile, l->gpus[0]),
        Actor{}, false, now);
  }
}

void LeaseService::MarkMigForeign(const node::NodeView& fleet) {
  std::set<std::string> leased;
  for (const auto& [id, l] : book_.leases()) {
    if (sched::IsMigLease(l)) leased.insert(l.uuids[0]);
  }
  for (sched::GpuSlot& s : slots_) {
    const node::GpuView& g = fleet.gpus[static_cast<size_t>(s.index)];
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
