// SPDX-License-Identifier: Apache-2.0
#include "store/store_info.h"

#include <fmt/format.h>

#include "store/schema.h"

namespace tarmac::store {

Result<StoreInfo> ReadStoreInfo(Db* db) {
  if (Status s = CheckIntegrity(db); !s.ok()) return s;
  StoreInfo info;
  Status failed;
  auto one = [&](const std::string& sql) -> std::optional<int64_t> {
    if (!failed.ok()) return std::nullopt;
    Result<std::optional<int64_t>> v = db->QueryInt(sql);
    if (!v.ok()) {
      failed = v.status();
      return std::nullopt;
    }
    return v.value();
  };
  info.schema_version = one("PRAGMA user_version").value_or(0);
  info.free_pages = one("PRAGMA freelist_count").value_or(0);
  for (const char* table : {"gpus", "gpu_samples", "tick_journal", "process_sessions", "process_samples",
                            "gpu_rollup_1m", "gpu_rollup_1h", "process_rollup_1h", "allocations", "events"}) {
    info.rows[table] = one(fmt::format("SELECT COUNT(*) FROM {}", table)).value_or(0);
  }
  info.oldest_raw_unix = one("SELECT MIN(minute) * 60 FROM gpu_samples");
  info.oldest_minute_unix = one("SELECT MIN(minute) * 60 FROM gpu_rollup_1m");
  info.oldest_hour_unix = one("SELECT MIN(hour) * 3600 FROM gpu_rollup_1h");
  info.newest_unix = one("SELECT MAX(t) FROM tick_journal");
  if (!info.newest_unix) info.newest_unix = one("SELECT MAX(minute) * 60 + 59 FROM gpu_samples");
  info.gpu_seconds_recorded = one("SELECT SUM(covered_seconds) FROM gpu_rollup_1m").value_or(0);
  if (!failed.ok()) return failed;
  return info;
}

}  // namespace tarmac::store
