// SPDX-License-Identifier: Apache-2.0
//
// Which processes a lease leaves behind when it ends or is revoked: its
// token carriers, its job, the holder's processes on a whole GPU, a
// loan's by LoanProcesses (lease_service.h), and who is spared.
#include <algorithm>
#include <set>

#include "leases/lease_service.h"

namespace tarmac::leases {

std::vector<sched::ProcessRef> LeaseService::LeaseVictims(const sched::Lease& l,
                                                          const std::set<int64_t>& spared) {
  std::vector<sched::ProcessRef> victims;
  auto is_victim = [&victims, &spared](int64_t pid) {
    return spared.count(pid) != 0 || std::any_of(victims.begin(), victims.end(),
                                                 [pid](const sched::ProcessRef& v) { return v.pid == pid; });
  };
  // Its processes started after the client that asked for it.
  for (const ProcessIdentity& p : processes_->LeaseProcesses(l.token, l.uid, l.holder.start_ticks)) {
    if (!is_victim(p.pid)) victims.push_back({p.pid, p.start_ticks});
  }
  if (l.job.pid != 0 && !is_victim(l.job.pid) && IsAlive(l.job)) victims.push_back(l.job);
  // A loan shares its GPU with its lender: its processes are what the one
  // loan model says (LoanProcesses), never the lender's.
  if (sched::IsLoan(l)) {
    for (const ProcessIdentity& p : LoanProcesses(l)) {
      if (!is_victim(p.pid)) victims.push_back({p.pid, p.start_ticks});
    }
    return victims;
  }
  // On a whole GPU (not a MIG instance, whose GPU others share), the
  // holder's processes the driver lists, token or not, are the lease's too.
  if (sched::IsMigLease(l) || sched::IsExternal(l)) return victims;
  for (int g : l.gpus) {
    auto listed = processes_by_gpu_.find(g);
    if (listed == processes_by_gpu_.end()) continue;
    for (const ProcessIdentity& p : listed->second) {
      if (p.uid == l.uid && p.start_ticks >= l.holder.start_ticks && !is_victim(p.pid)) {
        victims.push_back({p.pid, p.start_ticks});
      }
    }
  }
  return victims;
}

std::set<int64_t> LeaseService::SelfAndAncestors(int64_t pid) {
  std::set<int64_t> chain;
  for (int depth = 0; pid > 1 && depth < 256 && chain.insert(pid).second; ++depth) {
    std::optional<ProcessIdentity> p = processes_->Identify(pid);
    if (!p) break;
    pid = p->parent_pid;
  }
  return chain;
}

}  // namespace tarmac::leases
