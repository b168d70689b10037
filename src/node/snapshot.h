// SPDX-License-Identifier: Apache-2.0
//
// What the sampler publishes each tick: an immutable reading of the whole
// machine with its sequence number and timing, and the sampler's running
// figures (ticks, lateness). Consumers (metrics, store, leases, API) hold a
// shared_ptr<const Snapshot> and never see one change.
#pragma once

#include <chrono>
#include <cstdint>

#include "node/gpu_types.h"
#include "node/node_view.h"

namespace tarmac::node {

// A published reading of the whole machine.
struct Snapshot {
  NodeView node_view;
  int64_t sequence = 0;  // 1 for the first tick.
  std::chrono::steady_clock::time_point taken_at_steady;
  std::chrono::microseconds tick_duration{0};  // Wall time the tick took.
  // Failed driver calls since the agent started, across re-attaches.
  CallErrorCounts call_errors;
};

struct SamplerStats {
  int64_t ticks = 0;
  int64_t slow_ticks = 0;
  int64_t attaches = 0;  // Successful opens of the backend, the first included.
  int64_t xid_events = 0;
  int64_t mig_config_changes = 0;  // MIG layout changes the driver announced.
  std::chrono::microseconds last_tick_duration{0};
  std::chrono::microseconds max_lateness{0};  // Worst start delay versus schedule.
  std::chrono::microseconds p99_lateness{0};  // Over the last kLatenessWindow ticks.
};

}  // namespace tarmac::node
