// SPDX-License-Identifier: Apache-2.0
//
// What the history store says about usage over a range of hours, as plain
// rows in the store's own units (seconds, permille-seconds, joules, MiB-
// seconds): per GPU, per owner, the processes that held memory idle, event
// counts (Xid errors, backfill preemptions), and the hourly and per-minute utilization the charts draw. The
// report (src/report) turns them into hours, ratios and costs; no SQL lives
// outside src/store. Hours are Unix hours (t / 3600), [first_hour,
// end_hour).
//
// Thread safety: as the Db passed in (one thread at a time).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/result.h"
#include "store/sqlite_db.h"

namespace tarmac::store {

struct GpuUsage {
  int64_t gpu_id = 0;
  int index = 0;
  std::string uuid;
  std::string name;
  int64_t covered_seconds = 0;  // Sampled: busy, idle or unknown.
  int64_t utilization_sum_permille_seconds = 0;
  int64_t idle_seconds = 0;
  int64_t held_idle_seconds = 0;
  int64_t energy_joules = 0;
  int64_t throttle_thermal_seconds = 0;
  int64_t throttle_power_seconds = 0;
  int64_t throttle_other_seconds = 0;
  int64_t unknown_seconds = 0;   // Could not be read.
  int64_t backfill_seconds = 0;  // Held by a backfill lease.
};
// One row per GPU with samples in the range, by index then UUID.
Result<std::vector<GpuUsage>> QueryGpuUsage(Db* db, int64_t first_hour, int64_t end_hour);

// Events of `kind` ("xid", "backfill_preempted") per gpu_id in [since_t, until_t).
Result<std::map<int64_t, int64_t>> QueryEventCounts(Db* db, const std::string& kind, int64_t since_t,
                                                    int64_t until_t);

// Clock throttling per GPU over [first_minute, end_minute), from the
// minute rollups.
struct RecentThrottle {
  int index = 0;
  std::string uuid;
  int64_t covered_seconds = 0;
  int64_t thermal_seconds = 0;
  int64_t power_seconds = 0;
  int64_t other_seconds = 0;
};
Result<std::vector<RecentThrottle>> QueryRecentThrottle(Db* db, int64_t first_minute, int64_t end_minute);

// Each MIG instance the store has seen (a device of its own, by its MIG
// UUID): when it was first and last seen, and when a process last ran in it.
struct MigInstanceUse {
  std::string uuid;
  int64_t first_seen = 0;  // Unix seconds.
  int64_t last_seen = 0;
  std::optional<int64_t> last_process_seen;  // Empty: never a process.
};
Result<std::vector<MigInstanceUse>> QueryMigInstanceUse(Db* db);

struct HourlyUtilization {
  int64_t gpu_id = 0;
  int64_t hour = 0;
  double ratio = 0;            // Mean over the hour's covered time, 0..1.
  double held_idle_ratio = 0;  // Share of the covered time a process held memory at 0 % SM.
};
Result<std::vector<HourlyUtilization>> QueryHourlyUtilization(Db* db, int64_t first_hour, int64_t end_hour);

struct DecileMinutes {
  int64_t gpu_id = 0;
  int decile = 0;  // 0: under 10 %, ..., 9: 90 % and over.
  int64_t minutes = 0;
};
Result<std::vector<DecileMinutes>> QueryUtilizationDeciles(Db* db, int64_t first_hour, int64_t end_hour);

// Whom process time is counted to: the user, or the workload (pod,
// container, Slurm job, systemd unit, else "host: <user>").
enum class OwnerKey { kUser, kWorkload };
struct OwnerUsage {
  std::string owner;
  int64_t gpu_id = 0;
  int64_t seen_seconds = 0;
  int64_t busy_seconds = 0;
  int64_t held_idle_seconds = 0;
  int64_t memory_mib_seconds = 0;
  int64_t held_idle_memory_mib_seconds = 0;
};
// One row per (owner, GPU).
Result<std::vector<OwnerUsage>> QueryOwnerUsage(Db* db, OwnerKey key, int64_t first_hour, int64_t end_hour);

// GPU time charged to a user (node/gpu_charge.h): held by "lease" or
// "process", in state "busy", "idle" or "unknown".
struct UserChargeUsage {
  std::string user;
  int64_t gpu_id = 0;
  std::string held_by;
  std::string state;
  int64_t milliseconds = 0;
};
// One row per (user, GPU, held by, state) charged in the range.
Result<std::vector<UserChargeUsage>> QueryUserCharges(Db* db, int64_t first_hour, int64_t end_hour);

// A GPU's time while another scheduler had it allocated (the allocations
// table against the GPU's minute rollups, each minute counted once per
// stretch): `scope`, `name`, `detail` as schema.cc says for the kind.
struct AllocationUsage {
  std::string scope;   // pod: namespace; slurm: user.
  std::string name;    // pod: pod; slurm: job id.
  std::string detail;  // pod: container.
  int64_t gpu_id = 0;
  // Seconds (fractions of sampled minutes while allocated: a job of a few
  // seconds counts for those seconds).
  double allocated_seconds = 0;
  double idle_seconds = 0;                  // ... under the idle threshold.
  double unknown_seconds = 0;               // ... unreadable.
  double utilization_permille_seconds = 0;  // Mean utilization x readable time.
  std::optional<int64_t> memory_max_mib;    // The most memory used in a minute.
};
// One row per allocation stretch of `kind` ("pod", "slurm") in [first_hour, end_hour).
Result<std::vector<AllocationUsage>> QueryAllocationUsage(Db* db, const std::string& kind, int64_t first_hour,
                                                          int64_t end_hour);

struct HeldIdleSession {
  int64_t pid = 0;
  std::string user;
  std::string command;
  int gpu_index = 0;
  int64_t first_seen = 0;
  int64_t last_seen = 0;
  int64_t held_idle_seconds = 0;
  int64_t memory_max_mib = 0;
};
// The `limit` process sessions that held memory idle longest, longest first.
Result<std::vector<HeldIdleSession>> QueryTopHeldIdle(Db* db, int64_t first_hour, int64_t end_hour,
                                                      int limit);

// The first and last hour with samples in the range; empty when none.
Result<std::optional<std::pair<int64_t, int64_t>>> QueryHourSpan(Db* db, int64_t first_hour,
                                                                 int64_t end_hour);

// The first and last minute with samples in [first_minute, end_minute),
// from the 1-minute rollups (kept for a shorter time than the hourly ones);
// empty when none.
Result<std::optional<std::pair<int64_t, int64_t>>> QueryMinuteSpan(Db* db, int64_t first_minute,
                                                                   int64_t end_minute);

}  // namespace tarmac::store
