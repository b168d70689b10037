// SPDX-License-Identifier: Apache-2.0
//
// Where a lease or request stands, as lease.request, lease.get and
// lease.wait answer it: granted (with the lease), queued (with its position
// and why it waits) or ended (with why). Decoded once, into the structs the
// agent encodes from (sched/lease_json.h); never throws.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "common/result.h"
#include "sched/lease_json.h"

namespace tarmac::client {

struct LeaseAnswer {
  enum class State { kGranted, kQueued, kEnded };
  State state = State::kQueued;
  int64_t id = 0;
  sched::LeaseShown lease;      // kGranted: the lease as the agent shows it to this caller.
  sched::PendingShown request;  // kQueued: the queue entry.
  int64_t position = 0;         // kQueued: 1 is next.
  std::string reason;           // kQueued: why it waits; kEnded: why it ended.

  bool is_granted() const { return state == State::kGranted; }
  bool is_queued() const { return state == State::kQueued; }
  bool is_ended() const { return state == State::kEnded; }
};

// kCorruption when `answer` is not one of the three forms, or its lease or
// request is malformed (naming the field). `id` is used for an ended
// answer, which does not carry it. Times are read with UnixTimeBase.
Result<LeaseAnswer> LeaseAnswerFromJson(const nlohmann::json& answer, int64_t id = 0);

// What lease.release answered: the lease released or the request
// cancelled, or (`was_ended`) the lease had already ended, with why.
struct ReleaseAnswer {
  bool was_cancelled = false;
  bool was_ended = false;
  std::string reason;    // was_ended: why it ended.
  std::string ended_by;  // was_ended: the end's kind ("expired"), when known.
};
Result<ReleaseAnswer> ReleaseAnswerFromJson(const nlohmann::json& answer);

// The `leases` and `queue` answers' lists. kCorruption naming the first
// malformed entry.
Result<std::vector<sched::LeaseShown>> LeasesFromJson(const nlohmann::json& answer);
Result<std::vector<sched::PendingShown>> QueueFromJson(const nlohmann::json& answer);

// "GPU-a,GPU-b" from a lease's UUIDs.
std::string UuidList(const sched::Lease& lease);

// "GPU 3", "GPUs 0,1", or a MIG instance's "GPU 0 MIG-…": the lease's GPUs
// as a person names them (its indices), for messages.
std::string GpuNames(const sched::Lease& lease);

// The environment work in a lease runs with, in this order:
// CUDA_VISIBLE_DEVICES and NVIDIA_VISIBLE_DEVICES (its UUIDs),
// TARMAC_LEASE_ID, TARMAC_LEASE_TOKEN (which marks its processes), and for
// a loan (leases/loans.h) TARMAC_LENT_MEMORY_BYTES, the memory it may take.
std::vector<std::pair<std::string, std::string>> LeaseEnvironment(const sched::Lease& lease);

}  // namespace tarmac::client
