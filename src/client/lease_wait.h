// SPDX-License-Identifier: Apache-2.0
//
// Waiting for a queued request, and watching a lease while its work runs.
//
// WaitForGrant holds a lease.wait call open, so the agent answers the moment
// the request is granted or ends; every `refresh` it hears where the request
// stands (position, why it waits) and tells `on_update`. LeaseWatcher asks
// at most once a second about a granted lease, for idle warnings and its
// end, while the client's work runs.
//
// Thread safety: one thread at a time per object.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include "client/agent_client.h"
#include "client/lease_answer.h"

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
    std::string warning;                // A new idle warning; empty when none.
    std::optional<std::string> ended;   // Why the lease ended, the first time it is seen ended.
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
  std::chrono::steady_clock::time_point next_ = std::chrono::steady_clock::now() + std::chrono::seconds(1);
};

}  // namespace tarmac::client
