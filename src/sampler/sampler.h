// SPDX-License-Identifier: Apache-2.0
//
// The Sampler owns the GPU backend and reads it on a schedule: the fast tier
// every fast_interval, the slow tier as well every slow_interval. Each tick
// publishes an immutable snapshot; readers take a shared_ptr copy and never
// wait for a tick in progress.
//
// Thread safety: Start/Stop from one thread; Latest(), stats() and
// SetIntervals() from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "common/clock.h"
#include "common/log.h"
#include "sampler/fleet_reader.h"

namespace tarmac::sampler {

struct SamplerOptions {
  std::chrono::milliseconds fast_interval{1000};
  std::chrono::milliseconds slow_interval{30000};
  // A GPU read longer than this marks the GPU unresponsive (0: unbounded).
  // Fixed at construction.
  std::chrono::milliseconds call_timeout{0};
};

// A published reading of the whole machine.
struct Snapshot {
  FleetView fleet;
  int64_t sequence = 0;                       // 1 for the first tick.
  std::chrono::steady_clock::time_point taken_at_steady;
  std::chrono::microseconds tick_duration{0};  // Wall time the tick took.
};

struct SamplerStats {
  int64_t ticks = 0;
  int64_t slow_ticks = 0;
  std::chrono::microseconds last_tick_duration{0};
  std::chrono::microseconds max_lateness{0};  // Worst start delay versus schedule.
};

class Sampler {
 public:
  // `on_tick` (optional) runs on the sampler thread after each publish (the
  // agent uses it for the systemd watchdog).
  Sampler(FleetReader reader, SamplerOptions options, Clock* clock, Logger* logger,
          std::function<void(const Snapshot&)> on_tick = {});
  ~Sampler();
  Sampler(const Sampler&) = delete;
  Sampler& operator=(const Sampler&) = delete;

  // Takes the first sample (both tiers) on the calling thread, publishes it,
  // then starts the sampler thread. So once Start returns, Latest() has data.
  void Start();

  // Stops the thread and waits for it (at most one tick).
  void Stop();

  // The newest snapshot; null before Start.
  std::shared_ptr<const Snapshot> Latest() const;

  SamplerStats stats() const;

  // New intervals take effect from the next tick (SIGHUP reload).
  void SetIntervals(SamplerOptions options);

 private:
  void Tick(bool is_slow);
  void Loop(std::stop_token stop);

  FleetReader reader_;
  Clock* clock_;
  Logger* logger_;
  std::function<void(const Snapshot&)> on_tick_;
  std::jthread thread_;

  // State below is protected by mu_.
  mutable std::mutex mu_;
  SamplerOptions options_;
  std::shared_ptr<const Snapshot> latest_;
  SamplerStats stats_;
};

}  // namespace tarmac::sampler
