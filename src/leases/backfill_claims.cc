// SPDX-License-Identifier: Apache-2.0
//
// Backfill gives way to other schedulers (lease_service.h): a Slurm prolog
// or the kubelet's Allocate that names a device a backfill lease holds
// revokes that lease as a queued request would (the same grace, the same
// preempting and preempted events, the GPU handed over empty), and its
// claim keeps the device from every other grant meanwhile. The caller asks
// again until the device is free, then records its hold.
#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "leases/lease_service.h"
#include "leases/lease_text.h"

namespace tarmac::leases {

using std::chrono::duration_cast;
using std::chrono::seconds;

bool LeaseService::GiveWay(const std::vector<std::string>& uuids, const std::string& claim, TimePoint now) {
  std::vector<std::string> holders;
  std::set<int64_t> seen;  // A lease on two of the devices is named once.
  for (const std::string& uuid : uuids) {
    int gpu = -1;
    std::string mig;
    if (sched::FindMigSlot(slots_, uuid, &gpu) != nullptr) {
      mig = uuid;
    } else {
      auto slot =
          std::find_if(slots_.begin(), slots_.end(), [&](const sched::GpuSlot& g) { return g.uuid == uuid; });
      if (slot == slots_.end()) continue;
      gpu = slot->index;
    }
    // Every backfill lease on the device, its GPU or its instances.
    for (const auto& [id, l] : book_.leases()) {
      if (l.priority != sched::Priority::kBackfill || !seen.insert(id).second) continue;
      bool is_on = std::find(l.gpus.begin(), l.gpus.end(), gpu) != l.gpus.end() &&
                   (mig.empty() || !sched::IsMigLease(l) || l.uuids[0] == mig);
      if (!is_on) continue;
      holders.push_back(fmt::format("lease {} of {}", id, l.user));
      if (!book_.Revoke(id, 0, now)) continue;  // Being revoked already.
      runtime_[id].revoked_for_claim = claim;
      SaveLease(l);
      CountPreemption(l);
      Event("preempting", id, l.uid, l.user, l.gpus, Actor{},
            fmt::format("revoked for {}, which places its job on {}: ends by {} ({} s of grace)", claim, uuid,
                        UtcText(Base().ToUnix(now + policy_.backfill.grace)),
                        duration_cast<seconds>(policy_.backfill.grace).count()));
    }
  }
  if (holders.empty()) {
    claims_.erase(claim);
    return true;
  }
  auto [it, is_new] = claims_.try_emplace(claim);
  it->second.uuids = uuids;
  // Long enough for the grace and the hand-over; a caller that stops asking
  // leaves the devices to the queue after that.
  if (is_new) it->second.expires_at = now + policy_.backfill.grace + kHandoverBound + kClaimSlack;
  it->second.waiting_for = fmt::format("backfill {} gives way first (grace {} s)", fmt::join(holders, ", "),
                                       duration_cast<seconds>(policy_.backfill.grace).count());
  MarkClaimed(now);
  return false;
}

void LeaseService::MarkClaimed(TimePoint now) {
  for (auto it = claims_.begin(); it != claims_.end();) {
    if (now >= it->second.expires_at) {
      it = claims_.erase(it);
    } else {
      ++it;
    }
  }
  // A claimed device counts as held by someone outside tarmac: no grant
  // takes it, nor its GPU or instances.
  for (const auto& [claim, c] : claims_) {
    for (const std::string& uuid : c.uuids) {
      for (sched::GpuSlot& g : slots_) {
        bool is_gpu = g.uuid == uuid;
        for (sched::MigSlot& m : g.mig) {
          if (is_gpu || m.uuid == uuid) {
            m.has_foreign_processes = true;
            g.has_foreign_processes = true;
          }
        }
        if (is_gpu) g.has_foreign_processes = true;
      }
    }
  }
}

}  // namespace tarmac::leases
