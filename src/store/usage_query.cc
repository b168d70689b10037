// SPDX-License-Identifier: Apache-2.0
#include "store/usage_query.h"

#include <fmt/format.h>

#include <functional>

namespace tarmac::store {
namespace {

// Prepares `sql`, binds `args` in order, and calls `row` for each row.
Status QueryRows(Db* db, const std::string& sql, std::initializer_list<int64_t> args,
                 const std::function<void(const Stmt&)>& row) {
  Result<Stmt> stmt = db->Prepare(sql);
  if (!stmt.ok()) return stmt.status();
  int i = 1;
  for (int64_t a : args) stmt.value().Bind(i++, a);
  return stmt.value().ForEachRow(row);
}

}  // namespace

Result<std::vector<GpuUsage>> QueryGpuUsage(Db* db, int64_t first_hour, int64_t end_hour) {
  std::vector<GpuUsage> out;
  Status s = QueryRows(
      db,
      "SELECT g.gpu_id, g.gpu_index, g.uuid, g.name, SUM(r.covered_seconds), "
      "SUM(r.utilization_sum_permille_seconds), "
      "SUM(r.idle_seconds), SUM(r.held_idle_seconds), SUM(r.energy_joules), SUM(r.throttle_thermal_seconds), "
      "SUM(r.throttle_power_seconds), SUM(r.throttle_other_seconds), SUM(r.unknown_seconds), "
      "SUM(r.backfill_seconds) "
      "FROM gpu_rollup_1h r JOIN gpus g USING (gpu_id) WHERE r.hour >= ? AND r.hour < ? "
      "GROUP BY g.gpu_id ORDER BY g.gpu_index, g.uuid",
      {first_hour, end_hour}, [&](const Stmt& r) {
        out.push_back(GpuUsage{r.Int(0), static_cast<int>(r.Int(1)), r.Text(2), r.Text(3), r.Int(4), r.Int(5),
                               r.Int(6), r.Int(7), r.Int(8), r.Int(9), r.Int(10), r.Int(11), r.Int(12),
                               r.Int(13)});
      });
  if (!s.ok()) return s;
  return out;
}

Result<std::map<int64_t, int64_t>> QueryEventCounts(Db* db, const std::string& kind, int64_t since_t,
                                                    int64_t until_t) {
  std::map<int64_t, int64_t> out;
  Result<Stmt> stmt = db->Prepare(
      "SELECT gpu_id, COUNT(*) FROM events WHERE kind = ? AND t >= ? AND t < ? AND gpu_id IS NOT NULL "
      "GROUP BY gpu_id");
  if (!stmt.ok()) return stmt.status();
  stmt.value().Bind(1, kind).Bind(2, since_t).Bind(3, until_t);
  Status s = stmt.value().ForEachRow([&](const Stmt& r) { out[r.Int(0)] = r.Int(1); });
  if (!s.ok()) return s;
  return out;
}

Result<std::vector<RecentThrottle>> QueryRecentThrottle(Db* db, int64_t first_minute, int64_t end_minute) {
  std::vector<RecentThrottle> out;
  Status s = QueryRows(db,
                       "SELECT g.gpu_index, g.uuid, SUM(r.covered_seconds), SUM(r.throttle_thermal_seconds), "
                       "SUM(r.throttle_power_seconds), SUM(r.throttle_other_seconds) "
                       "FROM gpu_rollup_1m r JOIN gpus g USING (gpu_id) WHERE r.minute >= ? AND r.minute < ? "
                       "AND g.uuid NOT LIKE 'MIG-%' GROUP BY g.gpu_id ORDER BY g.gpu_index",
                       {first_minute, end_minute}, [&](const Stmt& r) {
                         out.push_back(RecentThrottle{static_cast<int>(r.Int(0)), r.Text(1), r.Int(2),
                                                      r.Int(3), r.Int(4), r.Int(5)});
                       });
  if (!s.ok()) return s;
  return out;
}

Result<std::vector<MigInstanceUse>> QueryMigInstanceUse(Db* db) {
  std::vector<MigInstanceUse> out;
  Status s = QueryRows(db,
                       "SELECT g.uuid, g.first_seen, g.last_seen, MAX(p.last_seen) FROM gpus g "
                       "LEFT JOIN process_sessions p ON p.gpu_id = g.gpu_id WHERE g.uuid LIKE 'MIG-%' "
                       "GROUP BY g.gpu_id ORDER BY g.uuid",
                       {}, [&](const Stmt& r) {
                         MigInstanceUse u{r.Text(0), r.Int(1), r.Int(2), std::nullopt};
                         if (!r.IsNull(3)) u.last_process_seen = r.Int(3);
                         out.push_back(std::move(u));
                       });
  if (!s.ok()) return s;
  return out;
}

Result<std::vector<HourlyUtilization>> QueryHourlyUtilization(Db* db, int64_t first_hour, int64_t end_hour) {
  std::vector<HourlyUtilization> out;
  Status s = QueryRows(
      db,
      "SELECT gpu_id, hour, utilization_sum_permille_seconds * 1.0 / MAX(covered_seconds, 1) / 1000.0, "
      "held_idle_seconds * 1.0 / MAX(covered_seconds, 1) "
      "FROM gpu_rollup_1h WHERE hour >= ? AND hour < ? ORDER BY gpu_id, hour",
      {first_hour, end_hour}, [&](const Stmt& r) {
        out.push_back({r.Int(0), r.Int(1), r.Double(2), r.Double(3)});
      });
  if (!s.ok()) return s;
  return out;
}

Result<std::vector<DecileMinutes>> QueryUtilizationDeciles(Db* db, int64_t first_hour, int64_t end_hour) {
  std::vector<DecileMinutes> out;
  Status s =
      QueryRows(db,
                "SELECT gpu_id, MIN(utilization_mean_permille / 100, 9), COUNT(*) FROM gpu_rollup_1m "
                "WHERE minute >= ? AND minute < ? AND utilization_mean_permille IS NOT NULL GROUP BY 1, 2",
                {first_hour * 60, end_hour * 60}, [&](const Stmt& r) {
                  out.push_back({r.Int(0), static_cast<int>(r.Int(1)), r.Int(2)});
                });
  if (!s.ok()) return s;
  return out;
}

Result<std::vector<OwnerUsage>> QueryOwnerUsage(Db* db, OwnerKey key, int64_t first_hour, int64_t end_hour) {
  const char* owner =
      key == OwnerKey::kWorkload
          ? "CASE WHEN s.pod_uid != '' THEN 'pod ' || s.pod_uid WHEN s.container_id != '' THEN "
            "'container ' || substr(s.container_id, 1, 12) WHEN s.slurm_job_id != '' THEN "
            "'slurm job ' || s.slurm_job_id WHEN s.systemd_unit != '' THEN s.systemd_unit "
            "ELSE 'host: ' || s.user END"
          : "s.user";
  std::vector<OwnerUsage> out;
  Status s = QueryRows(
      db,
      fmt::format("SELECT {}, s.gpu_id, SUM(p.seen_seconds), SUM(p.busy_seconds), SUM(p.held_idle_seconds), "
                  "SUM(p.memory_mib_seconds), SUM(p.held_idle_memory_mib_seconds) "
                  "FROM process_rollup_1h p JOIN process_sessions s USING (session_id) "
                  "WHERE p.hour >= ? AND p.hour < ? GROUP BY 1, 2",
                  owner),
      {first_hour, end_hour}, [&](const Stmt& r) {
        out.push_back({r.Text(0), r.Int(1), r.Int(2), r.Int(3), r.Int(4), r.Int(5), r.Int(6)});
      });
  if (!s.ok()) return s;
  return out;
}

Result<std::vector<UserChargeUsage>> QueryUserCharges(Db* db, int64_t first_hour, int64_t end_hour) {
  std::vector<UserChargeUsage> out;
  Status s = QueryRows(db,
                       "SELECT u.name, c.gpu_id, c.held_by, c.state, SUM(c.milliseconds) "
                       "FROM charge_rollup_1h c JOIN users u USING (user_id) "
                       "WHERE c.hour >= ? AND c.hour < ? GROUP BY 1, 2, 3, 4",
                       {first_hour, end_hour}, [&](const Stmt& r) {
                         out.push_back({r.Text(0), r.Int(1), r.Text(2), r.Text(3), r.Int(4)});
                       });
  if (!s.ok()) return s;
  return out;
}

Result<std::vector<AllocationUsage>> QueryAllocationUsage(Db* db, const std::string& kind, int64_t first_hour,
                                                          int64_t end_hour) {
  std::vector<AllocationUsage> out;
  Result<Stmt> stmt = db->Prepare(
      // A minute the allocation covers in part counts for that part.
      "WITH parts AS (SELECT a.allocation_id, a.scope, a.name, a.detail, a.gpu_id, r.covered_seconds, "
      "r.idle_seconds, "
      "r.unknown_seconds, r.utilization_mean_permille, r.memory_used_max_mib, "
      "(MIN(a.last_seen + 1, (r.minute + 1) * 60) - MAX(a.first_seen, r.minute * 60)) / 60.0 AS share "
      "FROM allocations a JOIN gpu_rollup_1m r ON r.gpu_id = a.gpu_id "
      "AND r.minute >= a.first_seen / 60 AND r.minute <= a.last_seen / 60 "
      "WHERE a.kind = ? AND r.minute >= ? AND r.minute < ? AND a.last_seen >= ? AND a.first_seen < ?) "
      "SELECT scope, name, detail, gpu_id, SUM(covered_seconds * share), SUM(idle_seconds * share), "
      "SUM(unknown_seconds * share), "
      "SUM(COALESCE(utilization_mean_permille, 0) * (covered_seconds - unknown_seconds) * share), "
      "MAX(memory_used_max_mib) FROM parts GROUP BY allocation_id");
  if (!stmt.ok()) return stmt.status();
  Status s = stmt.value()
                 .Bind(1, kind)
                 .Bind(2, first_hour * 60)
                 .Bind(3, end_hour * 60)
                 .Bind(4, first_hour * 3600)
                 .Bind(5, end_hour * 3600)
                 .ForEachRow([&](const Stmt& r) {
                   AllocationUsage u{r.Text(0),   r.Text(1),   r.Text(2),   r.Int(3),    r.Double(4),
                                     r.Double(5), r.Double(6), r.Double(7), std::nullopt};
                   if (!r.IsNull(8)) u.memory_max_mib = r.Int(8);
                   out.push_back(std::move(u));
                 });
  if (!s.ok()) return s;
  return out;
}

Result<std::vector<HeldIdleSession>> QueryTopHeldIdle(Db* db, int64_t first_hour, int64_t end_hour,
                                                      int limit) {
  std::vector<HeldIdleSession> out;
  Status s = QueryRows(
      db,
      "SELECT s.pid, s.user, s.command, g.gpu_index, s.first_seen, s.last_seen, SUM(p.held_idle_seconds), "
      "MAX(p.memory_max_mib) FROM process_rollup_1h p JOIN process_sessions s USING (session_id) "
      "JOIN gpus g ON g.gpu_id = s.gpu_id WHERE p.hour >= ? AND p.hour < ? GROUP BY s.session_id "
      "HAVING SUM(p.held_idle_seconds) > 0 ORDER BY 7 DESC LIMIT ?",
      {first_hour, end_hour, static_cast<int64_t>(limit)}, [&](const Stmt& r) {
        out.push_back({r.Int(0), r.Text(1), r.Text(2), static_cast<int>(r.Int(3)), r.Int(4), r.Int(5),
                       r.Int(6), r.Int(7)});
      });
  if (!s.ok()) return s;
  return out;
}

namespace {

// The first and last value of `sql`'s MIN and MAX over [first, end).
Result<std::optional<std::pair<int64_t, int64_t>>> Span(Db* db, const char* sql, int64_t first, int64_t end) {
  std::optional<std::pair<int64_t, int64_t>> out;
  Status s = QueryRows(db, sql, {first, end}, [&](const Stmt& r) {
    if (!r.IsNull(0)) out = std::make_pair(r.Int(0), r.Int(1));
  });
  if (!s.ok()) return s;
  return out;
}

}  // namespace

Result<std::optional<std::pair<int64_t, int64_t>>> QueryMinuteSpan(Db* db, int64_t first_minute,
                                                                   int64_t end_minute) {
  return Span(db, "SELECT MIN(minute), MAX(minute) FROM gpu_rollup_1m WHERE minute >= ? AND minute < ?",
              first_minute, end_minute);
}

Result<std::optional<std::pair<int64_t, int64_t>>> QueryHourSpan(Db* db, int64_t first_hour,
                                                                 int64_t end_hour) {
  return Span(db, "SELECT MIN(hour), MAX(hour) FROM gpu_rollup_1h WHERE hour >= ? AND hour < ?", first_hour,
              end_hour);
}

}  // namespace tarmac::store
