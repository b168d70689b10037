// SPDX-License-Identifier: Apache-2.0
//
// `tarmac query --query-gpu=FIELDS | --query-compute-apps=FIELDS
//  --format=csv[,noheader][,nounits] [-i/--id=0,2]`: nvidia-smi's query
// interface (query_fields.h).
#pragma once

#include <CLI/CLI.hpp>

#include "cli/options.h"

namespace tarmac::cli {

struct QueryOptions {
  std::string query_gpu;
  std::string query_compute_apps;
  std::string format = "csv";
  std::string ids;  // Comma-separated indices, UUIDs or PCI bus ids.
  bool help_gpu = false;
  bool help_apps = false;
};

CLI::App* AddQueryCommand(CLI::App* app, QueryOptions* options);
int RunQuery(const GlobalOptions& global, const QueryOptions& options, Clock* clock, Logger* logger);

}  // namespace tarmac::cli
