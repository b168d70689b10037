// SPDX-License-Identifier: Apache-2.0
//
// Where a lease or request stands, as lease.request, lease.get and
// lease.wait answer it: granted (with the lease), queued (with its position
// and why it waits) or ended (with why). Pure parsing.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "common/result.h"

namespace tarmac::client {

struct LeaseAnswer {
  enum class State { kGranted, kQueued, kEnded };
  State state = State::kQueued;
  int64_t id = 0;
  nlohmann::json lease;    // kGranted: the lease as the agent shows it to this caller.
  nlohmann::json request;  // kQueued: the queue entry.
  int64_t position = 0;    // kQueued: 1 is next.
  std::string reason;      // kQueued: why it waits; kEnded: why it ended.

  bool is_granted() const { return state == State::kGranted; }
  bool is_queued() const { return state == State::kQueued; }
  bool is_ended() const { return state == State::kEnded; }
};

// kCorruption when `answer` is not one of the three forms. `id` is used for
// an ended answer, which does not carry it.
Result<LeaseAnswer> LeaseAnswerFromJson(const nlohmann::json& answer, int64_t id = 0);

// "GPU-a,GPU-b" from a lease's "uuids".
std::string UuidList(const nlohmann::json& lease);

// "GPU 3", "GPUs 0,1", or a MIG instance's "GPU 0 MIG-…": the lease's GPUs
// as a person names them (its indices), for messages.
std::string GpuNames(const nlohmann::json& lease);

// The environment work in a lease runs with, in this order:
// CUDA_VISIBLE_DEVICES and NVIDIA_VISIBLE_DEVICES (its UUIDs),
// TARMAC_LEASE_ID, TARMAC_LEASE_TOKEN (which marks its processes), and for
// a loan (leases/loans.h) TARMAC_LENT_MEMORY_BYTES, the memory it may take.
std::vector<std::pair<std::string, std::string>> LeaseEnvironment(const nlohmann::json& lease);

}  // namespace tarmac::client
