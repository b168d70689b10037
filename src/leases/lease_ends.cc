// SPDX-License-Identifier: Apache-2.0
//
// How leases end (lease_core.h): the end itself, the signals it asks for
// and sends, and which processes a lease leaves behind: its token
// carriers, its job, the holder's processes on a whole GPU, a loan's by
// LoanProcesses, and who is spared.
#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "leases/callers.h"
#include "leases/lease_core.h"

namespace tarmac::leases {

using TimePoint = sched::TimePoint;

namespace {

void RecordSignals(LeaseCore& core, const std::vector<SignalEvent>& events) {
  for (const SignalEvent& e : events)
    core.Event(e.kind, e.lease_id, e.uid, UserName(e.uid), {}, e.actor, e.detail);
}

}  // namespace

void LeaseCore::EndLease(int64_t id, const std::string& kind, const std::string& detail, const Actor& actor,
                         bool terminate, TimePoint now, const std::set<int64_t>& spared) {
  const sched::Lease* found = book.FindLease(id);
  if (found == nullptr) return;
  sched::Lease l = *found;
  std::vector<sched::ProcessRef> victims;
  if (terminate) victims = LeaseVictims(l, spared);
  // A GPU is handed on empty: while the driver lists any process on it, it
  // counts as occupied (until a reading shows it empty).
  if (IsListedOnItsGpus(l)) {
    for (int g : l.gpus) {
      if (g < 0 || static_cast<size_t>(g) >= slots.size()) continue;
      sched::GpuSlot& slot = slots[static_cast<size_t>(g)];
      slot.is_emptying = !slot.has_foreign_processes;  // Others' processes there the next reading tells.
      slot.has_foreign_processes = true;
    }
  }
  // Backfill's settle counts from the end of other work, however short:
  // a lease granted and released between two ticks was never seen by one.
  if (l.priority != sched::Priority::kBackfill) {
    for (const std::string& uuid : l.uuids) gate.NoteUse(uuid, now);
  }
  if (l.priority == sched::Priority::kBackfill) {
    backfill_gpu_seconds_ended +=
        static_cast<double>(l.gpus.size()) * std::chrono::duration<double>(now - l.granted_at).count();
  }
  book.Release(kAgentCaller, id, now).IgnoreError();  // Found above; the agent may.
  runtime.erase(id);
  Erase("lease", id);
  SaveShare(l.uid);
  memory.RememberEnded(id, detail, kind);
  Event(kind, id, l.uid, l.user, l.gpus, actor, detail);
  if (!victims.empty()) TerminateProcesses(id, l.uid, std::move(victims), detail, actor);
}

void LeaseCore::TerminateProcesses(int64_t lease_id, int64_t uid, std::vector<sched::ProcessRef> processes,
                                   const std::string& why, const Actor& actor) {
  signaller.Ask(lease_id, uid, std::move(processes), why, actor);
}

void LeaseCore::SendSignals(TimePoint now) {
  RecordSignals(*this, signaller.SendAsked(now, policy.kill_grace));
}

void LeaseCore::FinishTerminations(TimePoint now) {
  RecordSignals(*this, signaller.Finish(now, policy.kill_grace));
}

void LeaseCore::MarkLetGo(const sched::Lease& l, TimePoint now) {
  LeaseRuntime& rt = runtime[l.id];
  if (rt.killed_at) return;
  rt.killed_at = now;
  rt.readings_at_let_go = readings_seen;
}

void LeaseCore::KillRevokedNow(const sched::Lease& l, const std::string& why, TimePoint now) {
  MarkLetGo(l, now);
  SweepRevoked(l, {}, why, Actor{});
}

void LeaseCore::SweepRevoked(const sched::Lease& l, const std::set<int64_t>& spared, const std::string& why,
                             const Actor& actor) {
  runtime[l.id].is_swept = true;
  std::vector<sched::ProcessRef> victims = LeaseVictims(l, spared);
  if (victims.empty()) return;
  TerminateProcesses(l.id, l.uid, std::move(victims), why, actor);
  signaller.KillNow(l.id);
}

bool LeaseCore::IsAlive(const sched::ProcessRef& ref) const {
  if (ref.pid == 0) return false;
  std::optional<ProcessIdentity> now = process_control->Identify(ref.pid);
  return now && now->start_ticks == ref.start_ticks;
}

namespace {

// A loan's GPU stays its lender's, and a MIG instance's or an external
// lease's GPU is not its own: nobody waits for them to be empty.
bool IsNotWaitedFor(const sched::Lease& l) {
  return sched::IsMigLease(l) || sched::IsExternal(l) || sched::IsLoan(l);
}

// Whether the latest reading lists, on one of `l`'s GPUs, a process for
// which `matches` holds.
template <typename Matches>
bool AnyListedOn(const std::map<int, std::vector<ProcessIdentity>>& processes_by_gpu, const sched::Lease& l,
                 Matches matches) {
  for (int g : l.gpus) {
    auto listed = processes_by_gpu.find(g);
    if (listed == processes_by_gpu.end()) continue;
    if (std::any_of(listed->second.begin(), listed->second.end(), matches)) return true;
  }
  return false;
}

}  // namespace

bool LeaseCore::IsListedOnItsGpus(const sched::Lease& l) const {
  return !IsNotWaitedFor(l) && AnyListedOn(processes_by_gpu, l, [](const ProcessIdentity&) { return true; });
}

void LeaseCore::AskReadingOnceEnded(const sched::Lease& l, TimePoint now) {
  constexpr std::chrono::milliseconds kAskEvery{100};
  if (!on_wants_reading || !IsListedOnItsGpus(l)) return;  // (Unlisted: its GPUs are free now.)
  if (ended_reading_asked_at && now < *ended_reading_asked_at + kAskEvery) return;
  bool is_waited_for = std::any_of(book.queue().begin(), book.queue().end(), [](const sched::Pending& p) {
    return p.request.priority != sched::Priority::kBackfill;
  });
  if (!is_waited_for || ListsALiveProcess(l)) return;
  ended_reading_asked_at = now;
  on_wants_reading();
}

bool LeaseCore::ListsALiveProcess(const sched::Lease& l) const {
  return AnyListedOn(processes_by_gpu, l, [this](const ProcessIdentity& p) {
    return IsAlive({p.pid, p.start_ticks});
  });
}

bool LeaseCore::IsHandedOverEmpty(const sched::Lease& l) const {
  if (IsNotWaitedFor(l)) return true;
  auto rt = runtime.find(l.id);
  return !IsListedOnItsGpus(l) && (rt == runtime.end() || readings_seen > rt->second.readings_at_let_go);
}

std::vector<sched::ProcessRef> LeaseCore::LeaseVictims(const sched::Lease& l,
                                                       const std::set<int64_t>& spared) {
  std::vector<sched::ProcessRef> victims;
  auto is_victim = [&victims, &spared](int64_t pid) {
    return spared.count(pid) != 0 || std::any_of(victims.begin(), victims.end(),
                                                 [pid](const sched::ProcessRef& v) { return v.pid == pid; });
  };
  // Its processes started after the client that asked for it.
  for (const ProcessIdentity& p : process_control->LeaseProcesses(l.token, l.uid, l.holder.start_ticks)) {
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
    auto listed = processes_by_gpu.find(g);
    if (listed == processes_by_gpu.end()) continue;
    for (const ProcessIdentity& p : listed->second) {
      if (p.uid == l.uid && p.start_ticks >= l.holder.start_ticks && !is_victim(p.pid)) {
        victims.push_back({p.pid, p.start_ticks});
      }
    }
  }
  return victims;
}

std::set<int64_t> LeaseCore::SelfAndAncestors(int64_t pid) const {
  std::set<int64_t> chain;
  for (int depth = 0; pid > 1 && depth < 256 && chain.insert(pid).second; ++depth) {
    std::optional<ProcessIdentity> p = process_control->Identify(pid);
    if (!p) break;
    pid = p->parent_pid;
  }
  return chain;
}

std::vector<ProcessIdentity> LeaseCore::LoanProcesses(const sched::Lease& loan) const {
  std::vector<ProcessIdentity> out =
      process_control->LeaseProcesses(loan.token, loan.uid, loan.holder.start_ticks);
  std::set<int64_t> counted;
  for (const ProcessIdentity& p : out) counted.insert(p.pid);
  if (const sched::Lease* lender = book.FindLease(loan.lent_from)) {
    for (const ProcessIdentity& p :
         process_control->LeaseProcesses(lender->token, lender->uid, lender->holder.start_ticks)) {
      counted.insert(p.pid);  // The lender's: never the loan's.
    }
  }
  auto listed = loan.gpus.empty() ? processes_by_gpu.end() : processes_by_gpu.find(loan.gpus[0]);
  if (listed == processes_by_gpu.end()) return out;
  for (const ProcessIdentity& p : listed->second) {
    if (counted.count(p.pid) != 0 ||
        loans.WasThereAtLoan({loan.lent_from, loan.gpus[0]}, p.pid, p.start_ticks))
      continue;
    if (p.uid != loan.uid || p.start_ticks < loan.holder.start_ticks) continue;
    out.push_back(p);
  }
  return out;
}

}  // namespace tarmac::leases
