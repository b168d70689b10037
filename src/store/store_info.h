// SPDX-License-Identifier: Apache-2.0
//
// What a history database holds (`tarmac store info`): schema, sizes, rows
// per table, and the oldest and newest time of each tier. Every failure
// comes back as a Status (a corrupt page or WAL is kCorruption naming the
// file); nothing aborts.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "common/result.h"
#include "store/sqlite_db.h"

namespace tarmac::store {

struct StoreInfo {
  int64_t schema_version = 0;
  int64_t free_pages = 0;
  std::map<std::string, int64_t> rows;  // By table.
  std::optional<int64_t> oldest_raw_unix;
  std::optional<int64_t> oldest_minute_unix;
  std::optional<int64_t> oldest_hour_unix;
  std::optional<int64_t> newest_unix;
  int64_t gpu_seconds_recorded = 0;
};

// Reads it all, checking the file's integrity first (PRAGMA quick_check).
Result<StoreInfo> ReadStoreInfo(Db* db);

}  // namespace tarmac::store
