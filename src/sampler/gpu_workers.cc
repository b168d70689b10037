// SPDX-License-Identifier: Apache-2.0
#include "sampler/gpu_workers.h"

#include <fmt/format.h>

namespace tarmac::sampler {

using std::chrono::steady_clock;

GpuWorkers::GpuWorkers(gpu::GpuBackend* backend, std::vector<int> gpu_indices,
                       std::chrono::milliseconds call_timeout, Clock* clock, Logger* logger)
    : backend_(backend), call_timeout_(call_timeout), clock_(clock), logger_(logger) {
  for (int index : gpu_indices) {
    auto w = std::make_unique<Worker>();
    w->index = index;
    workers_.push_back(std::move(w));
  }
  for (auto& w : workers_) {
    Worker* worker = w.get();
    worker->thread = std::thread([this, worker] { Run(worker); });
  }
}

GpuWorkers::~GpuWorkers() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    is_stopping_ = true;
  }
  work_cv_.notify_all();
  for (auto& w : workers_) {
    bool is_busy = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      is_busy = w->is_busy;
    }
    if (is_busy) {
      w->thread.detach();
      w.release();  // The detached thread still refers to it.
    } else {
      w->thread.join();
    }
  }
}

void GpuWorkers::Run(Worker* w) {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    work_cv_.wait(lock, [&] { return is_stopping_ || w->has_work; });
    if (is_stopping_) return;
    w->has_work = false;
    w->is_busy = true;
    unsigned tiers = w->tiers;
    lock.unlock();
    gpu::GpuSample sample;
    // The last-resort catch of a thread entry point.
    try {
      Result<gpu::GpuSample> r = backend_->Sample(w->index, tiers);
      if (r.ok()) {
        sample = std::move(r).value();
      } else {
        sample.index = w->index;
        sample.health = gpu::GpuHealth::kError;
        sample.error = r.status().message();
      }
    } catch (const std::exception& e) {
      sample.index = w->index;
      sample.health = gpu::GpuHealth::kError;
      sample.error = fmt::format("sampler: gpu {}: {}", w->index, e.what());
    }
    lock.lock();
    w->is_busy = false;
    w->has_result = true;
    w->result = std::move(sample);
    if (w->is_reported_hung) {
      w->is_reported_hung = false;
      logger_->Log(LogLevel::kWarning, "sampler: gpu {} responds again", w->index);
    }
    done_cv_.notify_all();
  }
}

bool GpuWorkers::HasCallInDriver() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& w : workers_) {
    if (w->is_busy) return true;
  }
  return false;
}

std::vector<gpu::GpuSample> GpuWorkers::SampleAll(unsigned tiers) {
  std::unique_lock<std::mutex> lock(mu_);
  steady_clock::time_point now = clock_->SteadyNow();
  for (auto& w : workers_) {
    if (w->is_busy) continue;  // Still stuck in an earlier call: do not queue behind it.
    w->has_result = false;
    w->has_work = true;
    w->tiers = tiers;
    w->started_at = now;
  }
  work_cv_.notify_all();
  steady_clock::time_point deadline = now + call_timeout_;
  // Waiting on the real condition variable: the clock seam provides the
  // deadline; a fake clock's tests run with short real timeouts.
  done_cv_.wait_until(lock, std::chrono::steady_clock::now() + (deadline - clock_->SteadyNow()), [&] {
    for (auto& w : workers_) {
      if (w->has_work || (w->is_busy && clock_->SteadyNow() - w->started_at < call_timeout_)) return false;
    }
    return true;
  });
  std::vector<gpu::GpuSample> samples;
  for (auto& w : workers_) {
    if (w->has_result && !w->is_busy && !w->has_work) {
      samples.push_back(w->result);
      continue;
    }
    gpu::GpuSample hung;
    hung.index = w->index;
    hung.taken_at = clock_->WallNow();
    hung.health = gpu::GpuHealth::kUnresponsive;
    auto stuck_for = std::chrono::duration_cast<std::chrono::milliseconds>(clock_->SteadyNow() - w->started_at);
    hung.error = fmt::format("gpu {}: a driver call has not returned for {} ms", w->index, stuck_for.count());
    if (!w->is_reported_hung) {
      w->is_reported_hung = true;
      logger_->Log(LogLevel::kWarning, "sampler: {}; the other GPUs are still sampled", hung.error);
    }
    samples.push_back(std::move(hung));
  }
  return samples;
}

}  // namespace tarmac::sampler
