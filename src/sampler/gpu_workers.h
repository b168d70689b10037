// SPDX-License-Identifier: Apache-2.0
//
// GpuWorkers reads each GPU on its own thread, so a driver call that hangs
// on one GPU cannot stall the others: SampleAll waits at most call_timeout,
// reports a GPU whose read has not returned as unresponsive, and skips it
// (without queueing more work behind the stuck call) until that read comes
// back. Hung reads are logged once when detected and once when they return.
//
// Thread safety: SampleAll from one thread at a time.
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/log.h"
#include "gpu/gpu_backend.h"

namespace tarmac::sampler {

class GpuWorkers {
 public:
  GpuWorkers(gpu::GpuBackend* backend, std::vector<int> gpu_indices, std::chrono::milliseconds call_timeout,
             Clock* clock, Logger* logger);
  // Stops the workers. A worker still blocked in the driver is detached: it
  // cannot be interrupted, and the process is ending.
  ~GpuWorkers();
  GpuWorkers(const GpuWorkers&) = delete;
  GpuWorkers& operator=(const GpuWorkers&) = delete;

  // One result per GPU, in the order of `gpu_indices`.
  std::vector<gpu::GpuSample> SampleAll(unsigned tiers);

  // True while some worker is blocked in a backend call: the backend must
  // then outlive this object (see the destructor).
  bool HasCallInDriver();

 private:
  struct Worker {
    int index = 0;
    bool has_work = false;   // Posted, not yet taken.
    bool is_busy = false;    // In the backend call.
    bool has_result = false;
    bool is_reported_hung = false;
    unsigned tiers = 0;
    gpu::GpuSample result;
    std::chrono::steady_clock::time_point started_at;
    std::thread thread;
  };
  void Run(Worker* w);

  gpu::GpuBackend* backend_;
  std::chrono::milliseconds call_timeout_;
  Clock* clock_;
  Logger* logger_;
  std::mutex mu_;
  std::condition_variable work_cv_;
  std::condition_variable done_cv_;
  bool is_stopping_ = false;  // Guarded by mu_.
  std::vector<std::unique_ptr<Worker>> workers_;  // Fields guarded by mu_.
};

}  // namespace tarmac::sampler
