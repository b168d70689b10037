// SPDX-License-Identifier: Apache-2.0
//
// The signals a lease change sends: SIGTERM asked while a change is made
// (Ask) and sent once it is saved (SendAsked), then SIGKILL to what still
// runs after the grace (Finish); a revoked lease whose grace has passed gets
// SIGKILL at once (KillNow). Every signal goes through ProcessControl,
// which checks the process's start time and owner, so a PID reused by
// another process is never signalled. What it did comes back as events for
// the lease service to record.
//
// Thread safety: none of its own. The lease service owns it and calls it
// under its one lock, which orders it among the service's other state.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "leases/process_control.h"
#include "sched/lease_book.h"

namespace tarmac::leases {

// Who acted on a lease, as events name them.
struct Actor {
  int64_t uid = -1;  // -1: the agent's policy.
  std::string name = "policy";
};

// One thing the signaller did or could not do ("sigterm", "sigkill",
// "signal_failed"), for the lease's event log.
struct SignalEvent {
  const char* kind = "";
  int64_t lease_id = 0;
  int64_t uid = -1;
  Actor actor;
  std::string detail;
};

class Signaller {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;

  explicit Signaller(ProcessControl* processes) : processes_(processes) {}

  // SIGTERM to `processes` (owned by `uid`) for lease `lease_id`, sent by
  // the next SendAsked.
  void Ask(int64_t lease_id, int64_t uid, std::vector<sched::ProcessRef> processes, std::string why,
           Actor actor);
  // What is asked for lease `lease_id` gets SIGKILL at once instead.
  void KillNow(int64_t lease_id);
  // How many asks wait; TakeBack(n) drops those asked after the first n (a
  // change that could not be saved sends nothing).
  size_t asked() const { return asked_.size(); }
  void TakeBack(size_t keep);
  // Sends what was asked; processes that took SIGTERM get SIGKILL at
  // `now + grace` if they still run then.
  std::vector<SignalEvent> SendAsked(TimePoint now, std::chrono::milliseconds grace);
  // A SIGTERM sent elsewhere (a zombie by policy) whose SIGKILL follows.
  void Watch(int64_t lease_id, int64_t uid, std::vector<sched::ProcessRef> processes, TimePoint kill_at);
  // SIGKILL to what still runs past its time; forgets what has exited.
  // `grace` names the wait in the events.
  std::vector<SignalEvent> Finish(TimePoint now, std::chrono::milliseconds grace);
  // Whether `p` took SIGTERM and is waited on.
  bool IsTerminating(const sched::ProcessRef& p) const;

 private:
  struct Asked {
    int64_t lease_id = 0;
    int64_t uid = -1;
    std::vector<sched::ProcessRef> processes;
    std::string why;
    Actor actor;
    // SIGKILL at once, not SIGTERM and the grace: a revoked backfill lease
    // whose grace has passed already had its time to let go.
    bool kills_now = false;
  };
  struct Termination {
    int64_t lease_id = 0;
    int64_t uid = -1;
    std::vector<sched::ProcessRef> processes;
    TimePoint kill_at;
  };
  bool IsAlive(const sched::ProcessRef& ref) const;

  ProcessControl* processes_;
  std::vector<Asked> asked_;
  std::vector<Termination> terminations_;
};

}  // namespace tarmac::leases
