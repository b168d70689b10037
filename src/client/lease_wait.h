// SPDX-License-Identifier: Apache-2.0
//
// Waiting for a queued request, and watching a lease while its work runs.
//
// WaitForGrant holds a lease.wait call open, so the agent answers the moment
// the request is granted or ends; every `refresh` it hears where the request
// stands (position, why it waits) and tells `on_update`. LeaseWatcher asks
// at most once a second about a granted lease, for idle warnings and its
// end, while the client's work runs. RevocationWatch hears the moment a
// backfill lease is revoked.
//
// Thread safety: one thread at a time per object.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <thread>

#include "client/agent_client.h"
#include "client/lease_answer.h"
#include "common/clock.h"

namespace tarmac::client {

// Returns the answer that granted or ended `queued`; kCancelled when
// `interrupt_fd` became readable (the request is still queued: cancel it
// with ReleaseLease); the agent's error otherwise.
Result<LeaseAnswer> WaitForGrant(const AgentClient& agent, const LeaseAnswer& queued, int interrupt_fd,
                                 const std::function<void(const LeaseAnswer&)>& on_update,
                                 std::chrono::milliseconds refresh = std::chrono::seconds(5));

class LeaseWatcher {
 public:
  LeaseWatcher(const AgentClient* agent, int64_t id) : agent_(agent), id_(id) {}

  struct News {
    std::string warning;               // A new idle warning; empty when none.
    std::optional<std::string> ended;  // Why the lease ended, the first time it is seen ended.
  };
  // Asks the agent when a second has passed since the last time.
  News Poll();
  // Marks the end as told (Poll will not report it again); true the first time.
  bool MarkEnded();

 private:
  const AgentClient* agent_;
  int64_t id_;
  std::string warned_;
  bool has_told_end_ = false;
  std::chrono::steady_clock::time_point next_ = RealSteadyNow() + std::chrono::seconds(1);
};

// Holds lease.wait {watch} on granted lease `id` on a thread of its own, and
// calls `on_revoked` (on that thread) once, the moment the agent starts
// revoking the lease (a backfill lease preempted), with the lease as the
// agent shows it. The destructor ends the wait.
class RevocationWatch {
 public:
  RevocationWatch(const AgentClient* agent, int64_t id,
                  std::function<void(const sched::LeaseShown& lease)> on_revoked);
  ~RevocationWatch();
  RevocationWatch(const RevocationWatch&) = delete;
  RevocationWatch& operator=(const RevocationWatch&) = delete;

 private:
  int stop_fd_ = -1;  // An eventfd: readable once the watch is to end.
  std::thread thread_;
};

// Whether `lease` (as the agent shows it) is being revoked.
bool IsRevoking(const sched::LeaseShown& lease);

}  // namespace tarmac::client
