// SPDX-License-Identifier: Apache-2.0
//
// `tarmac pick [--count N] [--min-free-memory SIZE] [--max-utilization PCT]`
// prints the best GPUs' UUIDs, comma-separated, for
// CUDA_VISIBLE_DEVICES=$(tarmac pick). Exit 1 with the reasons when not
// enough GPUs fit.
#pragma once

#include <CLI/CLI.hpp>

#include "cli/options.h"

namespace tarmac::cli {

struct PickOptions {
  int count = 1;
  std::string min_free_memory = "0";
  double max_utilization_percent = 50;
  int window_seconds = 10;
  bool json = false;
};

CLI::App* AddPickCommand(CLI::App* app, PickOptions* options);
int RunPick(const GlobalOptions& global, const PickOptions& options, Clock* clock, Logger* logger);

}  // namespace tarmac::cli
