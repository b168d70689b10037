// SPDX-License-Identifier: Apache-2.0
#include "sampler/gpu_workers.h"

#include <fmt/format.h>

#include <thread>

#include "common/clock.h"
#include "common/mutex.h"

namespace tarmac::sampler {

using std::chrono::steady_clock;

// A reader takes the GPUs of `queue` in order. Each reader has a
// generation; SampleAll abandons a stuck reader by starting a new
// generation, and an abandoned reader exits once its call returns.
struct GpuWorkers::Shared {
  gpu::GpuBackend* backend = nullptr;
  Logger* logger = nullptr;
  Mutex mu;
  std::condition_variable_any work_cv;
  std::condition_variable_any done_cv;
  bool is_stopping GUARDED_BY(mu) = false;
  int64_t generation GUARDED_BY(mu) = 0;     // Of the current reader.
  std::vector<size_t> queue GUARDED_BY(mu);  // Slots still to read this tick.
  unsigned tiers GUARDED_BY(mu) = 0;
  bool is_in_call GUARDED_BY(mu) = false;  // The current reader is in the backend.
  size_t current_slot GUARDED_BY(mu) = 0;
  steady_clock::time_point call_started GUARDED_BY(mu);
  std::vector<node::GpuSample> results GUARDED_BY(mu);
  std::vector<bool> has_result GUARDED_BY(mu);
  std::vector<bool> is_stuck GUARDED_BY(mu);  // An abandoned reader is in this GPU's call.
  int stuck_calls GUARDED_BY(mu) = 0;

  void Run(int64_t my_generation, const std::vector<int>& indices) EXCLUDES(mu) {
    MutexLock lock(&mu);
    for (;;) {
      lock.Wait(work_cv,
                [&]() REQUIRES(mu) { return is_stopping || generation != my_generation || !queue.empty(); });
      if (is_stopping || generation != my_generation) return;
      size_t slot = queue.front();
      queue.erase(queue.begin());
      is_in_call = true;
      current_slot = slot;
      call_started = RealSteadyNow();  // Timed by the real condition variable below.
      unsigned t = tiers;
      lock.Unlock();
      node::GpuSample sample = Read(indices[slot], t);
      lock.Lock();
      if (generation != my_generation) {
        // Abandoned while in the driver: the GPU answers again.
        is_stuck[slot] = false;
        --stuck_calls;
        logger->Log(LogLevel::kWarning, "sampler: gpu {} responds again", indices[slot]);
        return;
      }
      is_in_call = false;
      results[slot] = std::move(sample);
      has_result[slot] = true;
      if (queue.empty()) done_cv.notify_all();
    }
  }

  node::GpuSample Read(int index, unsigned t) {
    node::GpuSample sample;
    // The last-resort catch of a thread entry point.
    try {
      Result<node::GpuSample> r = backend->Sample(index, t);
      if (r.ok()) return std::move(r).value();
      sample.error = r.status().message();
    } catch (const std::exception& e) {
      sample.error = fmt::format("sampler: gpu {}: {}", index, e.what());
    }
    sample.index = index;
    sample.health = node::GpuHealth::kError;
    return sample;
  }
};

GpuWorkers::GpuWorkers(gpu::GpuBackend* backend, std::vector<int> gpu_indices,
                       std::chrono::milliseconds call_timeout, Clock* clock, Logger* logger)
    : shared_(std::make_shared<Shared>()),
      indices_(std::move(gpu_indices)),
      call_timeout_(call_timeout),
      clock_(clock),
      logger_(logger) {
  shared_->backend = backend;
  shared_->logger = logger;
  {
    MutexLock lock(&shared_->mu);
    shared_->results.resize(indices_.size());
    shared_->has_result.assign(indices_.size(), false);
    shared_->is_stuck.assign(indices_.size(), false);
  }
  std::thread([s = shared_, indices = indices_] { s->Run(0, indices); }).detach();
}

GpuWorkers::~GpuWorkers() {
  MutexLock lock(&shared_->mu);
  shared_->is_stopping = true;
  shared_->work_cv.notify_all();
  // Readers hold `shared_` and exit on their own: at once when idle, after
  // their call when in the driver.
}

bool GpuWorkers::HasCallInDriver() {
  MutexLock lock(&shared_->mu);
  return shared_->is_in_call || shared_->stuck_calls > 0;
}

std::vector<node::GpuSample> GpuWorkers::SampleAll(unsigned tiers) {
  Shared& s = *shared_;
  MutexLock lock(&s.mu);
  s.tiers = tiers;
  s.queue.clear();
  for (size_t slot = 0; slot < indices_.size(); ++slot) {
    s.has_result[slot] = false;
    if (!s.is_stuck[slot]) s.queue.push_back(slot);  // Do not queue behind a stuck call.
  }
  s.work_cv.notify_all();
  for (;;) {
    // Waiting on the real condition variable: the clock seam provides the
    // deadline; a fake clock's tests run with short real timeouts.
    bool is_done = lock.WaitFor(s.done_cv, call_timeout_,
                                [&]() REQUIRES(s.mu) { return s.queue.empty() && !s.is_in_call; });
    if (is_done) break;
    if (!s.is_in_call || RealSteadyNow() - s.call_started < call_timeout_) continue;
    // The current call is stuck: leave that reader in the driver and hand
    // the rest to a new one.
    size_t slot = s.current_slot;
    s.is_stuck[slot] = true;
    s.stuck_calls++;
    s.is_in_call = false;
    int64_t generation = ++s.generation;
    logger_->Log(
        LogLevel::kWarning,
        "sampler: gpu {}: a driver call has not returned for {} ms; the other GPUs are still sampled",
        indices_[slot], call_timeout_.count());
    std::thread([sp = shared_, generation, indices = indices_] { sp->Run(generation, indices); }).detach();
    s.work_cv.notify_all();
  }
  std::vector<node::GpuSample> samples;
  for (size_t slot = 0; slot < indices_.size(); ++slot) {
    if (s.has_result[slot]) {
      samples.push_back(s.results[slot]);
      continue;
    }
    node::GpuSample hung;
    hung.index = indices_[slot];
    hung.taken_at = clock_->WallNow();
    hung.health = node::GpuHealth::kUnresponsive;
    hung.error = fmt::format("gpu {}: a driver call has not returned for over {} ms", indices_[slot],
                             call_timeout_.count());
    samples.push_back(std::move(hung));
  }
  return samples;
}

}  // namespace tarmac::sampler
