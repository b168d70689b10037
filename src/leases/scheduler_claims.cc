// SPDX-License-Identifier: Apache-2.0
#include "leases/scheduler_claims.h"

namespace tarmac::leases {

void SchedulerClaims::Hold(const std::string& claim, const std::vector<std::string>& uuids,
                           TimePoint expires_at, std::string waiting_for) {
  auto [it, is_new] = claims_.try_emplace(claim);
  it->second.uuids = uuids;
  if (is_new) it->second.expires_at = expires_at;
  it->second.waiting_for = std::move(waiting_for);
}

const SchedulerClaims::Claim* SchedulerClaims::Find(const std::string& claim) const {
  auto it = claims_.find(claim);
  return it == claims_.end() ? nullptr : &it->second;
}

void SchedulerClaims::MarkClaimed(TimePoint now, std::vector<sched::GpuSlot>* slots) {
  std::erase_if(claims_, [now](const auto& entry) { return now >= entry.second.expires_at; });
  // A claimed device counts as held by someone outside tarmac: no grant
  // takes it, nor its GPU or instances.
  for (const auto& [claim, c] : claims_) {
    for (const std::string& uuid : c.uuids) {
      for (sched::GpuSlot& g : *slots) {
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

std::vector<SchedulerClaims::SlurmAction> SchedulerClaims::TakeSlurmActions() {
  std::vector<SlurmAction> taken = std::move(slurm_actions_);
  slurm_actions_.clear();
  return taken;
}

}  // namespace tarmac::leases
