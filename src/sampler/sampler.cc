// SPDX-License-Identifier: Apache-2.0
#include "sampler/sampler.h"

namespace tarmac::sampler {

using std::chrono::duration_cast;
using std::chrono::microseconds;
using std::chrono::steady_clock;

Sampler::Sampler(FleetReader reader, SamplerOptions options, Clock* clock, Logger* logger,
                 std::function<void(const Snapshot&)> on_tick)
    : reader_(std::move(reader)), clock_(clock), logger_(logger), on_tick_(std::move(on_tick)), options_(options) {
  if (options.call_timeout.count() > 0) reader_.BoundCalls(options.call_timeout, logger_);
}

Sampler::~Sampler() { Stop(); }

void Sampler::Start() {
  Tick(/*is_slow=*/true);
  thread_ = std::jthread([this](std::stop_token stop) { Loop(stop); });
}

void Sampler::Stop() {
  if (thread_.joinable()) {
    thread_.request_stop();
    thread_.join();
  }
}

std::shared_ptr<const Snapshot> Sampler::Latest() const {
  std::lock_guard<std::mutex> lock(mu_);
  return latest_;
}

SamplerStats Sampler::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void Sampler::SetIntervals(SamplerOptions options) {
  std::lock_guard<std::mutex> lock(mu_);
  options_ = options;
}

void Sampler::Tick(bool is_slow) {
  steady_clock::time_point start = clock_->SteadyNow();
  auto snapshot = std::make_shared<Snapshot>();
  // Thread entry points keep one last-resort catch: a bug in one tick is
  // logged, and sampling goes on.
  try {
    snapshot->fleet = reader_.Read(std::nullopt, is_slow ? gpu::kAllTiers : unsigned{gpu::kFastTier});
  } catch (const std::exception& e) {
    logger_->Log(LogLevel::kError, "sampler: tick failed: {}", e.what());
    return;
  }
  snapshot->taken_at_steady = clock_->SteadyNow();
  snapshot->tick_duration = duration_cast<microseconds>(snapshot->taken_at_steady - start);
  {
    std::lock_guard<std::mutex> lock(mu_);
    snapshot->sequence = stats_.ticks + 1;
    stats_.ticks++;
    if (is_slow) stats_.slow_ticks++;
    stats_.last_tick_duration = snapshot->tick_duration;
    latest_ = snapshot;
  }
  if (on_tick_) on_tick_(*snapshot);
}

void Sampler::Loop(std::stop_token stop) {
  // Ticks are scheduled on a fixed grid from the start, so a slow tick does
  // not shift the ones after it; a missed slot is skipped, not made up.
  steady_clock::time_point next = clock_->SteadyNow();
  steady_clock::time_point next_slow;
  {
    std::lock_guard<std::mutex> lock(mu_);
    next_slow = next + options_.slow_interval;
  }
  while (!stop.stop_requested()) {
    SamplerOptions options;
    {
      std::lock_guard<std::mutex> lock(mu_);
      options = options_;
    }
    next += options.fast_interval;
    steady_clock::time_point now = clock_->SteadyNow();
    while (next <= now) next += options.fast_interval;
    if (!clock_->SleepUntil(next, stop)) break;
    microseconds late = duration_cast<microseconds>(clock_->SteadyNow() - next);
    bool is_slow = clock_->SteadyNow() >= next_slow;
    if (is_slow) next_slow = next + options.slow_interval;
    Tick(is_slow);
    std::lock_guard<std::mutex> lock(mu_);
    if (late > stats_.max_lateness) stats_.max_lateness = late;
  }
}

}  // namespace tarmac::sampler
