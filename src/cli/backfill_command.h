// SPDX-License-Identifier: Apache-2.0
//
// `tarmac backfill`: batch inference on idle GPUs. `tarmac backfill check
// FILE` validates a batch file (backfill/batch_input.h) and says what it
// holds, or every problem with its line; submit, list, status, pause,
// resume and cancel manage the batches the agent runs
// (backfill_batches.cc).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <map>
#include <string>

#include "common/clock.h"

namespace tarmac::cli {

struct BackfillCheckOptions {
  std::string path;
  std::string model;  // For prompt lines that name none.
  bool json = false;
};

struct GlobalOptions;

struct BackfillOptions {
  BackfillCheckOptions check;
  // submit
  std::string engine = "ollama";
  std::string url;
  std::string engine_command;
  std::string output;
  std::string errors;
  int gpus = 1;
  int concurrency = 4;
  int max_retries = 5;
  int request_timeout_s = 600;
  int ready_timeout_s = 120;
  // status, pause, resume, cancel
  int64_t id = 0;
  bool watch = false;
  bool json = false;
};

// Adds `backfill` and its commands; returns them by name.
std::map<std::string, CLI::App*> AddBackfillCommand(CLI::App* app, BackfillOptions* options,
                                                    GlobalOptions* global);
int RunBackfillCheck(const BackfillCheckOptions& options);
// `name` is the command that was parsed: submit, list, status, pause, resume, cancel.
int RunBackfillBatches(const std::string& name, const GlobalOptions& global, const BackfillOptions& options,
                       Clock* clock);

}  // namespace tarmac::cli
