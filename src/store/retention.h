// SPDX-License-Identifier: Apache-2.0
//
// Retention per tier: raw samples, 1-minute and 1-hour rollups are deleted
// once older than their tier's limit, and freed pages are returned to the
// file system a few at a time (incremental vacuum), so disk use stays
// bounded and no run holds the write lock for long.
#pragma once

#include <chrono>

#include "common/status.h"
#include "store/sqlite_db.h"

namespace tarmac::store {

struct Retention {
  std::chrono::seconds raw{std::chrono::hours(24 * 7)};
  std::chrono::seconds minute{std::chrono::hours(24 * 90)};
  std::chrono::seconds hour{std::chrono::hours(24 * 365 * 3)};

  bool operator==(const Retention&) const = default;
};

// Pages given back per run (4 KiB each).
inline constexpr int64_t kVacuumPagesPerRun = 2048;

// Deletes what is older than each tier's limit at `now_t` (Unix seconds),
// in one transaction, then vacuums up to kVacuumPagesPerRun pages.
Status EnforceRetention(Db* db, int64_t now_t, const Retention& retention);

}  // namespace tarmac::store
