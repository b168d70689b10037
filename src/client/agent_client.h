// SPDX-License-Identifier: Apache-2.0
//
// AgentClient: the one client of the agent's local API (docs/protocol.md)
// for everything that asks the agent for something: the CLI, and whatever
// runs work on leased GPUs (a backfill runner, a Slurm prolog, a device
// plugin). Each call connects, sends one request and reads one answer;
// calls retry with backoff while the agent is busy or restarting, up to the
// call's patience. Lease answers come back typed (LeaseAnswer).
//
// Thread safety: const methods may run on any thread at once.
#pragma once

#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "client/lease_answer.h"
#include "common/result.h"
#include "node/node_view.h"

namespace tarmac::client {

struct CallOptions {
  // How long to keep retrying an agent that is unreachable or busy (0:
  // once). When no socket file exists and this is a minute or less, the
  // call fails at once: there is no agent.
  std::chrono::milliseconds patience{30000};
  // How long each try waits for the answer.
  std::chrono::milliseconds timeout{10000};
  // A descriptor (a signalfd) that ends the wait with kCancelled when it
  // becomes readable; -1 for none.
  int interrupt_fd = -1;
  // Keep trying, within the patience, while no agent listens on an existing
  // socket (one restarting); false: kFailedPrecondition at once.
  bool waits_out_restarts = true;
};

class AgentClient {
 public:
  explicit AgentClient(std::string socket_path) : socket_path_(std::move(socket_path)) {}

  const std::string& socket_path() const { return socket_path_; }

  // Calls `method`. kFailedPrecondition/kUnavailable when the agent never
  // answered; the agent's error otherwise (kNotFound, kPermissionDenied,
  // kResourceExhausted for no_fit, kInvalidArgument, kIOError for
  // storage_unavailable); kCancelled when interrupted.
  Result<nlohmann::json> Call(const std::string& method, nlohmann::json params,
                              CallOptions options = {}) const;

  // `status`: the agent's latest reading of the machine, with each GPU's
  // mean utilization over `recent_window` when asked. Retries (jittered) a
  // busy or slow agent for up to 15 s: kFailedPrecondition when no agent
  // listens, kDeadlineExceeded when one does but never answered.
  Result<node::NodeView> FetchStatus(std::optional<std::chrono::seconds> recent_window = std::nullopt) const;

  // lease.request with `params` (lease_request.h builds them).
  Result<LeaseAnswer> RequestLease(const nlohmann::json& params, CallOptions options = {}) const;
  // lease.get: where lease or request `id` stands now.
  Result<LeaseAnswer> GetLease(int64_t id, CallOptions options = {}) const;
  // lease.wait: answered the moment queued request `id` is granted or
  // ends, or after `wait` with where it stands then. Waits out an agent
  // restart (patience 10 minutes) unless interrupted.
  Result<LeaseAnswer> WaitLease(int64_t id, std::chrono::milliseconds wait, int interrupt_fd = -1) const;
  // lease.wait with watch: answered the moment granted lease `id` is
  // revoked (a backfill lease preempted: lease.revoke_by_unix is set) or
  // ends, or after `wait` as it stands then.
  Result<LeaseAnswer> WatchLease(int64_t id, std::chrono::milliseconds wait, int interrupt_fd = -1) const;
  Result<nlohmann::json> AttachLease(int64_t id, int64_t pid) const;
  // Ends lease `id` or cancels queued request `id`.
  Result<ReleaseAnswer> ReleaseLease(int64_t id, CallOptions options = {}) const;
  // `leases` and `queue`, decoded (the queue in the last decision's order).
  Result<std::vector<sched::LeaseShown>> Leases(CallOptions options = {}) const;
  Result<std::vector<sched::PendingShown>> Queue(CallOptions options = {}) const;

  // The lease id given (text), else $TARMAC_LEASE_ID, else the caller's
  // only lease (of `kind` when not empty). kNotFound/kInvalidArgument
  // saying why none could be chosen.
  Result<int64_t> ChooseLease(const std::string& given, const std::string& kind) const;

 private:
  std::string socket_path_;
};

}  // namespace tarmac::client
