// SPDX-License-Identifier: Apache-2.0
//
// What the history commands (history, report, export, store info) share:
// finding the database (--db, else the config's store path), opening it
// read-only, and the --since/--until range.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "common/clock.h"
#include "common/result.h"
#include "config/config.h"
#include "store/sqlite_db.h"

namespace tarmac::cli {

struct StoreAccessOptions {
  std::string db;           // --db FILE
  std::string config_path;  // --config FILE (for the store path and prices)
};

// Adds --db and --config to `cmd`.
void AddStoreAccessOptions(CLI::App* cmd, StoreAccessOptions* options);

struct StoreAccess {
  config::Config config;
  std::string path;
  std::unique_ptr<store::Db> db;
};

Result<StoreAccess> OpenStore(const StoreAccessOptions& options);

struct TimeRange {
  int64_t since_t = 0;
  int64_t until_t = 0;
};

// Parses --since and --until (common/time_spec.h); kInvalidArgument naming
// the flag for a bad value or an empty range.
Result<TimeRange> ParseRange(const std::string& since, const std::string& until, Clock* clock);

}  // namespace tarmac::cli
