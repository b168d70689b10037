// SPDX-License-Identifier: Apache-2.0
//
// The batch runner (tarmac-backfill-runner): runs one submitted batch
// (batch_spec.h) to its end on idle GPUs, as the user who submitted it.
//
//  - Holds the batch's runner.lock (flock): a second runner exits at once.
//  - Skips every request whose custom_id already has a result or error
//    line (result_log.h): a restarted runner repeats at most what was in
//    flight when the last one died.
//  - Per GPU up to `gpus`: asks the agent for a backfill lease, waits in
//    the queue, starts the engine in the lease (or uses the running
//    server), checks the model, and keeps `concurrency` requests in flight.
//  - Revoked (another request needs the GPU, told through lease.wait
//    watch): stops at once, with the requests in flight closed and put back
//    in the queue, stops the engine (or unloads the model), waits until the
//    agent's NVML reading shows the memory free, releases the lease, and
//    asks again.
//  - 5xx, 429, cut streams and connection errors retry with exponential
//    backoff (0.5 s doubling, at most 30 s), up to max_retries, then the
//    request gets an error line (its input line number in error.line);
//    other 4xx get an error line at once; 404
//    (no such model) and a results file that cannot be written (a full
//    disk) stop the batch (kRunnerFailed) with nothing lost.
//  - Writes progress.json every second.
//  - `stop_fd` readable (SIGTERM: pause, cancel, the agent's shutdown):
//    stops as when revoked and returns kRunnerStopped.
//
// Thread safety: RunBatch runs threads of its own; call it once.
#pragma once

#include <string>

#include "common/clock.h"
#include "common/log.h"

namespace tarmac::backfill {

struct RunnerOptions {
  std::string dir;     // The batch's directory (batch.json).
  std::string socket;  // The agent's socket.
};

// Returns one of the kRunner* exit codes (batch_spec.h).
int RunBatch(const RunnerOptions& options, int stop_fd, Clock* clock, Logger* logger);

}  // namespace tarmac::backfill
