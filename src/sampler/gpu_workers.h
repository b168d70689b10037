// SPDX-License-Identifier: Apache-2.0
//
// GpuWorkers reads the GPUs off the caller's thread, so a driver call that
// hangs on one GPU cannot stall the others or the caller: SampleAll hands
// the GPUs to one reader thread, which reads them one after another, and
// waits at most call_timeout for each read. A GPU whose read has not
// returned in time is reported unresponsive; its reader thread is left
// behind in the driver, and a fresh reader takes the remaining GPUs. The
// stuck GPU is skipped (nothing more queued behind the stuck call) until
// that read comes back. Hung reads are logged once when detected and once
// when they return.
//
// One reader for all GPUs, not one per GPU: a tick costs two thread
// hand-offs instead of two per GPU.
//
// Thread safety: SampleAll from one thread at a time.
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <vector>

#include "common/clock.h"
#include "common/log.h"
#include "gpu/gpu_backend.h"

namespace tarmac::sampler {

class GpuWorkers {
 public:
  GpuWorkers(gpu::GpuBackend* backend, std::vector<int> gpu_indices, std::chrono::milliseconds call_timeout,
             Clock* clock, Logger* logger);
  // Stops the reader. A reader still blocked in the driver is left to
  // finish on its own; the backend must then outlive it (HasCallInDriver).
  ~GpuWorkers();
  GpuWorkers(const GpuWorkers&) = delete;
  GpuWorkers& operator=(const GpuWorkers&) = delete;

  // One result per GPU, in the order of `gpu_indices`.
  std::vector<node::GpuSample> SampleAll(unsigned tiers);

  // True while some reader is blocked in a backend call.
  bool HasCallInDriver();

 private:
  struct Shared;  // State the reader threads share; outlives this object.
  std::shared_ptr<Shared> shared_;
  std::vector<int> indices_;
  std::chrono::milliseconds call_timeout_;
  Clock* clock_;
  Logger* logger_;
};

}  // namespace tarmac::sampler
