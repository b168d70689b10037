// SPDX-License-Identifier: Apache-2.0
//
// A submitted backfill batch, as the agent keeps it and its runner reads
// it: <state>/backfill/<id>/batch.json (the agent's, written atomically) and
// progress.json beside it (the runner's). The runner is a process of its
// own (tarmac-backfill-runner), run as the user who submitted the batch:
// it takes backfill leases, starts or calls the engine, and writes the
// results (result_log.h).
//
// Pure; thread-safe.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "common/result.h"

namespace tarmac::backfill {

// Where the requests go. kind "ollama" (Ollama's API: model check with
// /api/tags, unload with keep_alive 0) or "openai" (an OpenAI-compatible
// server: model check with /v1/models). Either `url` (a running server,
// "http://127.0.0.1:11434") or `command` (started in each lease, one per
// GPU, with CUDA_VISIBLE_DEVICES and a private port: "{port}" in the
// command and $TARMAC_ENGINE_PORT name it; stopped when the lease ends).
struct EngineSpec {
  std::string kind = "ollama";
  std::string url;
  std::string command;
  int ready_timeout_s = 120;  // For a started engine to answer.
};

enum class BatchState { kQueued, kRunning, kPaused, kCancelled, kDone, kFailed };
const char* BatchStateName(BatchState state);
bool ParseBatchState(std::string_view text, BatchState* state);
// Whether a runner should be working on it.
inline bool IsActive(BatchState s) { return s == BatchState::kQueued || s == BatchState::kRunning; }

struct BatchSpec {
  int64_t id = 0;
  std::string input;   // Absolute path of the batch file.
  std::string output;  // Results (OpenAI Batch output), absolute.
  std::string errors;  // Failed requests, absolute.
  std::string model;   // For prompt lines without one; empty: none.
  EngineSpec engine;
  int gpus = 1;         // GPUs at most, one lease (and engine) each.
  int concurrency = 4;  // Requests in flight per GPU.
  int max_retries = 5;  // Per request, on 5xx, 429, cut streams and connection errors.
  int request_timeout_s = 600;
  int64_t total = 0;  // Requests in the file, as checked at submit.
  int64_t uid = -1;
  std::string user;
  BatchState state = BatchState::kQueued;
  std::string message;  // Why it failed, or what it waits for.
  int64_t submitted_unix = 0;
  int64_t finished_unix = 0;
};

nlohmann::json EncodeBatchSpec(const BatchSpec& spec);
// kInvalidArgument naming the field (and `source`) that is wrong.
Result<BatchSpec> DecodeBatchSpec(const nlohmann::json& j, std::string_view source);
// Checks what a submitter chose: kInvalidArgument naming the field.
Status CheckBatchSpec(const BatchSpec& spec);

// What the runner says of its batch, rewritten every second.
struct BatchProgress {
  int64_t runner_pid = 0;
  int64_t total = 0;
  int64_t done = 0;    // Results written (ever, this file).
  int64_t failed = 0;  // Error lines written.
  int64_t in_flight = 0;
  int64_t retries = 0;             // Requests sent again, by this runner.
  int64_t completion_tokens = 0;   // Generated, all runners.
  double tokens_per_second = 0;    // Over the last minute.
  double requests_per_second = 0;  // Over the last minute.
  double gpu_seconds = 0;          // Backfill GPU time held for this batch, all runners.
  int64_t preemptions = 0;         // Leases revoked, all runners.
  int64_t gpus_held = 0;
  std::string phase;    // "waiting for an idle GPU", "running on 2 GPUs", "done", ...
  std::string problem;  // The last problem (engine down, a full disk); empty when none.
  int64_t updated_unix = 0;
};

nlohmann::json EncodeProgress(const BatchProgress& p);
// Missing fields stay zero; never fails (a torn or absent file reads empty).
BatchProgress DecodeProgress(const nlohmann::json& j);
// Seconds to go at the recent rate; -1 when unknown.
double EtaSeconds(const BatchProgress& p);

// The runner's exit codes.
inline constexpr int kRunnerFinished = 0;  // Every request has a result or an error line.
inline constexpr int kRunnerFailed = 3;    // The batch cannot go on (progress.problem says why).
inline constexpr int kRunnerBusy = 4;      // Another runner holds the batch.
inline constexpr int kRunnerStopped = 75;  // Told to stop (pause, cancel, shutdown): resumable.

// Writes `j` to `path` whole or not at all (temp file, fsync, rename).
Status WriteJsonFile(const std::string& path, const nlohmann::json& j);
// The file's JSON; kNotFound when absent, kCorruption when not JSON.
Result<nlohmann::json> ReadJsonFile(const std::string& path);

}  // namespace tarmac::backfill
