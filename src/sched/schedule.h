// SPDX-License-Identifier: Apache-2.0
//
// One scheduling decision: which queued requests start now, on which GPUs,
// and why the others wait. Pure: GPUs, leases, queue, fair share and time
// are passed in.
//
// Order: priority (high first), then the user's decayed recent use (less
// first, fair_share.h), then arrival. The first request that does not fit
// (the head) gets a reservation: the GPUs it will get when enough running
// leases reach their end, and when (EASY backfilling). A later, smaller
// request may start now only if it does not delay the head: it uses no GPU
// of the reservation, or its --max-time ends before the reservation starts.
// Leases without an end never free for planning; then the head's
// reservation is empty and later requests take any free GPU, until the head
// has waited `keep_for_head_after` (when not 0): from then on the GPUs it
// would get were every lease gone are kept for it as they free up (no start
// time is known), so that a large request is not passed over for ever by a
// stream of small ones. Kept GPUs with no start time may still run
// backfill, which yields to the head when it fits.
//
// Backfill leases (priority kBackfill) are preemptible. A backfill request
// is placed last, only on GPUs that accept backfill (GpuSlot), and never
// holds a reservation. A request of any other priority that does not fit
// on free GPUs may take GPUs that backfill leases hold: the decision then
// names those leases (preemptions) and the request waits for them
// (kPreempting), its GPUs kept from everyone else. GPUs of leases already
// being revoked are used first, so a lease is revoked for one request only.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sched/fair_share.h"
#include "sched/placement.h"

namespace tarmac::sched {

enum class Priority { kBackfill = 0, kLow = 1, kNormal = 2, kHigh = 3 };

struct QueuedRequest {
  int64_t id = 0;
  int64_t uid = 0;  // Whose: fair share is per user.
  Priority priority = Priority::kNormal;
  GpuWants wants;
  int64_t sequence = 0;  // Arrival order.
  std::optional<std::chrono::seconds> max_time;
  std::chrono::steady_clock::time_point queued_at{};
};

struct RunningLease {
  std::vector<int> gpus;
  std::optional<std::chrono::steady_clock::time_point> ends_at;  // --max-time or --for.
  int64_t id = 0;
  bool is_backfill = false;       // Preemptible.
  bool is_revoking = false;       // Already being revoked for a request.
  bool yields_at_notice = false;  // A batch that stops on notice: revoked before other backfill.
};

enum class WaitReason {
  kNoFit,       // The head: not enough free GPUs (of the memory asked) now.
  kBehindHead,  // Fits nowhere without delaying the head.
  kPreempting,  // Backfill leases on the GPUs it will get are being revoked for it.
};

struct Waiting {
  int64_t request_id = 0;
  int position = 0;  // 1 for the head.
  WaitReason reason = WaitReason::kNoFit;
};

struct Grant {
  int64_t request_id = 0;
  std::vector<int> gpus;
};

// A backfill lease to revoke, and the request it makes way for.
struct Preemption {
  int64_t lease_id = 0;
  int64_t request_id = 0;
};

struct Decision {
  std::vector<Grant> grants;
  std::vector<Waiting> waiting;  // In queue order.
  // The head's reservation: the GPUs it will get and from when; empty when
  // nothing is waiting or no lease end can be planned on. With GPUs and no
  // time: they are kept for a head that has waited `keep_for_head_after`,
  // as they free up.
  std::vector<int> reserved_gpus;
  std::optional<std::chrono::steady_clock::time_point> reserved_from;
  // Backfill leases to revoke now (not those already being revoked).
  std::vector<Preemption> preemptions;
};

// REQUIRES: `queue` is in arrival order (ascending sequence); priorities
// are kBackfill..kHigh; gpus[i].index == i. `keep_for_head_after` 0: never
// kept without a planned start.
Decision Schedule(const std::vector<GpuSlot>& gpus, const std::vector<QueuedRequest>& queue,
                  const std::vector<RunningLease>& leases, const FairShare& share,
                  std::chrono::steady_clock::time_point now,
                  std::chrono::milliseconds keep_for_head_after = std::chrono::milliseconds(0));

}  // namespace tarmac::sched
