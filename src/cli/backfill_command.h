// SPDX-License-Identifier: Apache-2.0
//
// `tarmac backfill`: batch inference on idle GPUs. `tarmac backfill check
// FILE` validates a batch file (backfill/batch_input.h) and says what it
// holds, or every problem with its line.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

namespace tarmac::cli {

struct BackfillCheckOptions {
  std::string path;
  std::string model;  // For prompt lines that name none.
  bool json = false;
};

// Adds `backfill` and its `check`; *check is set to the latter.
CLI::App* AddBackfillCommand(CLI::App* app, BackfillCheckOptions* options, CLI::App** check);
int RunBackfillCheck(const BackfillCheckOptions& options);

}  // namespace tarmac::cli
