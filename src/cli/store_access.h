// SPDX-License-Identifier: Apache-2.0
//
// What the history commands (history, report, export, store info, and the
// doctor's history) share: finding the database, opening it read-only, and
// the --since/--until range.
//
// The database is --db; else, with --config, that config's store path;
// else the store of the agent answering on --socket (its `hello` says
// where it keeps it, wherever its state folder is); else the store path of
// the default config (/var/lib/tarmac/tarmac.db).
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
  std::string db;                                  // --db FILE
  std::string config_path;                         // --config FILE (for the store path and prices)
  std::string socket = "/run/tarmac/tarmac.sock";  // --socket, TARMAC_SOCKET: the agent asked
};

// Adds --db, --config and (unless the command has its own) --socket to `cmd`.
void AddStoreAccessOptions(CLI::App* cmd, StoreAccessOptions* options, bool adds_socket = true);

struct StoreAccess {
  config::Config config;
  std::string path;
  std::string source;  // Where `path` came from: "--db", "--config", "the agent", "the default config".
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
