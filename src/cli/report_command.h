// SPDX-License-Identifier: Apache-2.0
//
// `tarmac report [--since 7d] [--until now] [--by gpu|user|container]
// [--format text|json|csv|html] [--out FILE]` and `tarmac store info
// [--json]`: what the history says about where GPU time and money went, and
// the history store itself.
#pragma once

#include <CLI/CLI.hpp>

#include "cli/store_access.h"

namespace tarmac::cli {

struct ReportOptions {
  StoreAccessOptions store;
  std::string since = "7d";
  std::string until = "now";
  std::string by = "user";
  std::string format = "text";
  std::string out;
  // Prices for this report, over [report] of the config (which --config
  // would also take the history path from).
  std::optional<double> gpu_hour_cost;
  std::string currency;
};

CLI::App* AddReportCommand(CLI::App* app, ReportOptions* options);
int RunReport(const ReportOptions& options, Clock* clock);

struct StoreInfoOptions {
  StoreAccessOptions store;
  bool json = false;
};

// Adds `store` with its `info` subcommand; `*info` is set to the latter.
CLI::App* AddStoreCommand(CLI::App* app, StoreInfoOptions* options, CLI::App** info);
int RunStoreInfo(const StoreInfoOptions& options);

}  // namespace tarmac::cli
