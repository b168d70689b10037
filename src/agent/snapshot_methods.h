// SPDX-License-Identifier: Apache-2.0
//
// The local API's two methods that the agent answers from its latest
// snapshot rather than the lease service: `hello` (who the agent is, and
// who the kernel says the caller is) and `status` (the GPUs, marked with
// their leases). agent/api_methods.h puts them in the one method table;
// the transport (ipc/) knows neither. Pure but for the hooks in AgentInfo.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "ipc/protocol.h"
#include "node/lease_marks.h"
#include "node/snapshot.h"
#include "node/utilization_history.h"

namespace tarmac::agent {

struct AgentInfo {
  std::string version;
  pid_t pid = 0;
  std::string backend;
  int64_t started_at_unix = 0;
  // The history writer's state for `hello` (empty: no history).
  std::function<nlohmann::json()> store_status;
  // Who holds each GPU and MIG instance (node::ApplyLeaseMarks marks the
  // status with it). Empty: no leases.
  std::function<std::shared_ptr<const node::LeaseMarks>()> lease_marks;
  // The lease state for `hello`: path, whether it saves, and why not.
  std::function<nlohmann::json()> lease_state;
  // The HTTP endpoint for `hello`: {"url", "token_required"}; null when off.
  nlohmann::json http = nullptr;
};

// The `status` result for `snapshot`, leases marked; with `window` and
// `history`, each GPU's mean utilization over the window too
// (utilization_gpu_recent_ratio), and with `series` its readings over that
// span, oldest first (utilization_gpu_series).
nlohmann::json SnapshotStatus(const AgentInfo& agent, const node::Snapshot& snapshot,
                              const node::UtilizationHistory* history = nullptr,
                              std::optional<std::chrono::seconds> window = std::nullopt,
                              std::optional<std::chrono::seconds> series = std::nullopt);

// Appends SnapshotStatus(agent, snapshot) as dump() writes it, after
// `edit` (may be empty) changed each part (the header and each GPU's
// object): the same text, built one GPU at a time, so one GPU's tree
// exists at once instead of the whole node's (the console's stream writes it
// each sample).
void AppendSnapshotStatus(std::string* out, const AgentInfo& agent, const node::Snapshot& snapshot,
                          const std::function<void(nlohmann::json*)>& edit);

// Answers `hello` and `status` from the latest snapshot (null before the
// first tick), the sampler's counters and its utilization history (null
// when not known); unknown_method for any other method.
std::string AnswerSnapshotMethod(const ipc::Request& request, const ipc::PeerCredentials& peer,
                                 const AgentInfo& agent, const node::Snapshot* snapshot,
                                 const node::SamplerStats* stats = nullptr,
                                 const node::UtilizationHistory* history = nullptr);

}  // namespace tarmac::agent
