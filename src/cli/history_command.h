// SPDX-License-Identifier: Apache-2.0
//
// `tarmac history [--gpu N|UUID] [--metric utilization,memory,...]
// [--since 6h] [--until now] [--step 1m] [--format table|csv|json]` and
// `tarmac export --since ... [--until ...] [--gpu ...] --format csv|jsonl`:
// time series from the history store.
#pragma once

#include <CLI/CLI.hpp>

#include "cli/store_access.h"

namespace tarmac::cli {

struct HistoryOptions {
  StoreAccessOptions store;
  std::string gpu;
  std::string metrics;
  std::string since = "6h";
  std::string until = "now";
  std::string step;  // Default: fits the range.
  std::string format = "table";
};

CLI::App* AddHistoryCommand(CLI::App* app, HistoryOptions* options);
int RunHistory(const HistoryOptions& options, Clock* clock);

struct ExportOptions {
  StoreAccessOptions store;
  std::string gpu;
  std::string since = "1d";
  std::string until = "now";
  std::string format = "csv";
};

CLI::App* AddExportCommand(CLI::App* app, ExportOptions* options);
int RunExport(const ExportOptions& options, Clock* clock);

}  // namespace tarmac::cli
