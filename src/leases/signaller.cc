// SPDX-License-Identifier: Apache-2.0
#include "leases/signaller.h"

#include <fmt/format.h>
#include <signal.h>

#include <algorithm>

#include "common/units.h"

namespace tarmac::leases {

void Signaller::Ask(int64_t lease_id, int64_t uid, std::vector<sched::ProcessRef> processes, std::string why,
                    Actor actor) {
  asked_.push_back({lease_id, uid, std::move(processes), std::move(why), std::move(actor)});
}

void Signaller::KillNow(int64_t lease_id) {
  for (Asked& a : asked_) a.kills_now |= a.lease_id == lease_id;
}

void Signaller::TakeBack(size_t keep) {
  if (keep < asked_.size()) asked_.resize(keep);
}

std::vector<SignalEvent> Signaller::SendAsked(TimePoint now, std::chrono::milliseconds grace) {
  std::vector<SignalEvent> events;
  std::vector<Asked> asked = std::move(asked_);
  asked_.clear();
  for (Asked& a : asked) {
    int signal = a.kills_now ? SIGKILL : SIGTERM;
    const char* name = a.kills_now ? "SIGKILL" : "SIGTERM";
    std::vector<sched::ProcessRef> signalled;
    for (const sched::ProcessRef& p : a.processes) {
      Status s = processes_->Signal(p, a.uid, signal);
      if (s.ok()) {
        signalled.push_back(p);
        if (a.kills_now)
          events.push_back(
              {"sigkill", a.lease_id, a.uid, a.actor, fmt::format("SIGKILL to pid {}: {}", p.pid, a.why)});
      } else if (s.code() != StatusCode::kNotFound) {
        events.push_back(
            {"signal_failed", a.lease_id, a.uid, a.actor, fmt::format("{}: {}", name, s.message())});
      }
    }
    if (a.kills_now || signalled.empty()) continue;
    std::string pids;
    for (const sched::ProcessRef& p : signalled) pids += (pids.empty() ? "" : ",") + std::to_string(p.pid);
    events.push_back({"sigterm", a.lease_id, a.uid, a.actor,
                      fmt::format("SIGTERM to pid {} ({}); SIGKILL in {} if still running", pids, a.why,
                                  FormatDuration(grace))});
    terminations_.push_back({a.lease_id, a.uid, std::move(signalled), now + grace});
  }
  return events;
}

void Signaller::Watch(int64_t lease_id, int64_t uid, std::vector<sched::ProcessRef> processes,
                      TimePoint kill_at) {
  terminations_.push_back({lease_id, uid, std::move(processes), kill_at});
}

std::vector<SignalEvent> Signaller::Finish(TimePoint now, std::chrono::milliseconds grace) {
  std::vector<SignalEvent> events;
  std::vector<Termination> still;
  for (Termination& t : terminations_) {
    if (now < t.kill_at) {
      bool any = std::any_of(t.processes.begin(), t.processes.end(),
                             [this](const sched::ProcessRef& p) { return IsAlive(p); });
      if (any) still.push_back(std::move(t));
      continue;
    }
    for (const sched::ProcessRef& p : t.processes) {
      if (processes_->Signal(p, t.uid, SIGKILL).ok()) {
        events.push_back(
            {"sigkill", t.lease_id, t.uid, Actor{},
             fmt::format("SIGKILL to pid {}: still running {} after SIGTERM", p.pid, FormatDuration(grace))});
      }
    }
  }
  terminations_ = std::move(still);
  return events;
}

bool Signaller::IsTerminating(const sched::ProcessRef& p) const {
  return std::any_of(terminations_.begin(), terminations_.end(), [&](const Termination& t) {
    return std::any_of(t.processes.begin(), t.processes.end(), [&](const sched::ProcessRef& q) {
      return q.pid == p.pid && q.start_ticks == p.start_ticks;
    });
  });
}

bool Signaller::IsAlive(const sched::ProcessRef& ref) const {
  if (ref.pid == 0) return false;
  std::optional<ProcessIdentity> now = processes_->Identify(ref.pid);
  return now && now->start_ticks == ref.start_ticks;
}

}  // namespace tarmac::leases
