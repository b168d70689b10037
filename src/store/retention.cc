// SPDX-License-Identifier: Apache-2.0
#include "store/retention.h"

#include <fmt/format.h>

namespace tarmac::store {

Status EnforceRetention(Db* db, int64_t now_t, const Retention& retention) {
  int64_t raw_minute = (now_t - retention.raw.count()) / 60;
  int64_t rollup_minute = (now_t - retention.minute.count()) / 60;
  int64_t hour = (now_t - retention.hour.count()) / 3600;
  Transaction tx(db);
  if (!tx.begin_status().ok()) return tx.begin_status();
  // Per GPU, so each delete walks the primary key from its start.
  const char* statements[] = {
      "DELETE FROM gpu_samples WHERE gpu_id IN (SELECT gpu_id FROM gpus) AND minute < ?1",
      ("DELETE FROM process_samples WHERE session_id IN "
       "(SELECT session_id FROM process_sessions WHERE first_seen < ?1 * 60) AND minute < ?1"),
      "DELETE FROM gpu_rollup_1m WHERE gpu_id IN (SELECT gpu_id FROM gpus) AND minute < ?2",
      "DELETE FROM gpu_rollup_1h WHERE gpu_id IN (SELECT gpu_id FROM gpus) AND hour < ?3",
      "DELETE FROM process_rollup_1h WHERE hour < ?3",
      "DELETE FROM charge_rollup_1h WHERE hour < ?3",
      "DELETE FROM process_sessions WHERE last_seen < ?3 * 3600",
      "DELETE FROM allocations WHERE last_seen < ?3 * 3600",
      "DELETE FROM events WHERE t < ?3 * 3600",
  };
  for (const char* sql : statements) {
    Result<Stmt> stmt = db->Prepare(sql);
    if (!stmt.ok()) return stmt.status();
    Status s = stmt.value().Bind(1, raw_minute).Bind(2, rollup_minute).Bind(3, hour).Run();
    if (!s.ok()) return s;
  }
  Status s = tx.Commit();
  if (!s.ok()) return s;
  return db->Exec(fmt::format("PRAGMA incremental_vacuum({})", kVacuumPagesPerRun));
}

}  // namespace tarmac::store
