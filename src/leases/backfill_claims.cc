// SPDX-License-Identifier: Apache-2.0
//
// Backfill gives way to other schedulers (scheduler_leases.h): a Slurm prolog
// or the kubelet's Allocate that names a device a backfill lease holds
// revokes that lease as a queued request would (the same grace, the same
// preempting and preempted events, the GPU handed over empty), and its
// claim keeps the device from every other grant meanwhile. The caller asks
// again until the device is free, then records its hold.
#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "leases/lease_text.h"
#include "leases/scheduler_leases.h"

namespace tarmac::leases {

using TimePoint = sched::TimePoint;

using std::chrono::duration_cast;
using std::chrono::seconds;

bool GiveWay(LeaseCore& core, const std::vector<std::string>& uuids, const std::string& claim,
             TimePoint now) {
  std::vector<std::string> holders;
  std::set<int64_t> seen;  // A lease on two of the devices is named once.
  for (const std::string& uuid : uuids) {
    int gpu = -1;
    std::string mig;
    if (sched::FindMigSlot(core.slots, uuid, &gpu) != nullptr) {
      mig = uuid;
    } else {
      auto slot = std::find_if(core.slots.begin(), core.slots.end(),
                               [&](const sched::GpuSlot& g) { return g.uuid == uuid; });
      if (slot == core.slots.end()) continue;
      gpu = slot->index;
    }
    // Every backfill lease on the device, its GPU or its instances.
    for (const auto& [id, l] : core.book.leases()) {
      if (l.priority != sched::Priority::kBackfill || !seen.insert(id).second) continue;
      bool is_on = std::find(l.gpus.begin(), l.gpus.end(), gpu) != l.gpus.end() &&
                   (mig.empty() || !sched::IsMigLease(l) || l.uuids[0] == mig);
      if (!is_on) continue;
      holders.push_back(fmt::format("lease {} of {}", id, l.user));
      if (!core.book.Revoke(id, 0, now)) continue;  // Being revoked already.
      core.runtime[id].revoked_for_claim = claim;
      core.SaveLease(l);
      core.CountPreemption(l);
      core.Event("preempting", id, l.uid, l.user, l.gpus, Actor{},
                 fmt::format("revoked for {}, which places its job on {}: ends by {} ({} s of grace)", claim,
                             uuid, UtcText(core.Base().ToUnix(now + core.policy.backfill.grace)),
                             duration_cast<seconds>(core.policy.backfill.grace).count()));
    }
  }
  if (holders.empty()) {
    core.claims.Drop(claim);
    return true;
  }
  // Long enough for the grace and the hand-over; a caller that stops asking
  // leaves the devices to the queue after that.
  core.claims.Hold(claim, uuids, now + core.policy.backfill.grace + kHandoverBound + kClaimSlack,
                   fmt::format("backfill {} gives way first (grace {} s)", fmt::join(holders, ", "),
                               duration_cast<seconds>(core.policy.backfill.grace).count()));
  core.claims.MarkClaimed(now, &core.slots);
  return false;
}

}  // namespace tarmac::leases
