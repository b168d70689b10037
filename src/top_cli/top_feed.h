// SPDX-License-Identifier: Apache-2.0
//
// Where `tarmac top` gets its data, on a thread of its own so the screen
// never waits for a slow agent or a GPU stuck in the driver: every
// interval it asks the agent (status with each GPU's utilization readings
// of the last ten minutes, leases, queue, the newest event) or, with no
// agent, reads the GPUs directly; it adds what /proc says of each GPU
// process (CPU, host memory, elapsed time, start time), and wakes the
// screen through a pipe.
//
// Thread safety: Latest and the pipe from any thread; the reading thread
// is the feed's own (detached: a read stuck in the driver never holds up
// quitting).
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cli/options.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/mutex.h"
#include "top/top_model.h"

namespace tarmac::top {

class TopFeed {
 public:
  // Starts reading at once, then every `interval`.
  static std::shared_ptr<TopFeed> Start(const cli::GlobalOptions& global, std::chrono::milliseconds interval,
                                        Clock* clock, Logger* logger);
  ~TopFeed();

  // The latest data, its age and staleness filled in.
  top::TopData Latest() const EXCLUDES(mu_);
  // Readable after each read (drain it with DrainWake).
  int wake_fd() const { return wake_[0]; }
  void DrainWake() const;
  // The details overlay's process and its GPU variables (or why not).
  void SetDetails(int64_t pid, std::vector<std::string> env, std::string error) EXCLUDES(mu_);
  void Stop() EXCLUDES(mu_);

 private:
  TopFeed() = default;
  void Run(cli::GlobalOptions global, Clock* clock, Logger* logger) EXCLUDES(mu_);

  std::chrono::milliseconds interval_{1000};
  Clock* clock_ = nullptr;
  int wake_[2] = {-1, -1};
  mutable Mutex mu_;
  top::TopData data_ GUARDED_BY(mu_);
  std::chrono::steady_clock::time_point read_at_ GUARDED_BY(mu_);
  bool is_stopping_ GUARDED_BY(mu_) = false;
};

// What /proc says of process `pid` read at `now`: its CPU ticks so far and
// start time (into `out`), its resident memory and how long it has run.
// False when it is gone or unreadable.
struct ProcSample {
  int64_t cpu_ticks = 0;
  int64_t start_ticks = 0;
  std::chrono::steady_clock::time_point at;
};
// /proc/PID/stat's CPU ticks (utime + stime) and start time into `out`;
// false when it is not that file's form.
bool ParseProcStat(std::string_view stat, ProcSample* out);
bool ReadProcSample(int64_t pid, std::chrono::steady_clock::time_point now, ProcSample* out,
                    int64_t* rss_bytes, double* elapsed_seconds);

// The GPU variables in `pid`'s environment (CUDA_*, NVIDIA_*, TARMAC_LEASE_ID,
// SLURM_*GPUS*; never the lease's token), or why it cannot be read.
Result<std::vector<std::string>> GpuEnvironment(int64_t pid);

}  // namespace tarmac::top
