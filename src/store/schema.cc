// SPDX-License-Identifier: Apache-2.0
#include "store/schema.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <cstdio>

namespace tarmac::store {
namespace {

// Version 1. Times are Unix seconds (t), minutes (t / 60) or hours
// (t / 3600), all UTC. docs/store.md explains every column.
constexpr const char* kSchemaV1 = R"sql(
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;

CREATE TABLE gpus (
  gpu_id INTEGER PRIMARY KEY,
  uuid TEXT NOT NULL UNIQUE,
  gpu_index INTEGER NOT NULL,
  name TEXT NOT NULL,
  memory_total_bytes INTEGER,
  first_seen INTEGER NOT NULL,
  last_seen INTEGER NOT NULL);

-- Raw tier: one row per GPU and minute, the samples packed (store/codec.h).
CREATE TABLE gpu_samples (
  gpu_id INTEGER NOT NULL,
  minute INTEGER NOT NULL,
  samples BLOB NOT NULL,
  PRIMARY KEY (gpu_id, minute)) WITHOUT ROWID;

-- Ticks of the minute in progress, one row per tick, folded into the
-- tables above when the minute ends (and at start-up after a crash).
CREATE TABLE tick_journal (t INTEGER PRIMARY KEY, payload BLOB NOT NULL);

-- A process on a GPU, from when it was first seen there to the last time.
CREATE TABLE process_sessions (
  session_id INTEGER PRIMARY KEY,
  gpu_id INTEGER NOT NULL,
  pid INTEGER NOT NULL,
  start_ticks INTEGER NOT NULL,
  uid INTEGER NOT NULL,
  user TEXT NOT NULL,
  command TEXT NOT NULL,
  container_id TEXT NOT NULL DEFAULT '',
  pod_uid TEXT NOT NULL DEFAULT '',
  systemd_unit TEXT NOT NULL DEFAULT '',
  slurm_job_id TEXT NOT NULL DEFAULT '',
  first_seen INTEGER NOT NULL,
  last_seen INTEGER NOT NULL);
CREATE INDEX process_sessions_last_seen ON process_sessions (last_seen);

-- Raw tier of processes: per session and minute, SM percent and MiB.
CREATE TABLE process_samples (
  session_id INTEGER NOT NULL,
  minute INTEGER NOT NULL,
  samples BLOB NOT NULL,
  PRIMARY KEY (session_id, minute)) WITHOUT ROWID;

-- Rollups per GPU. Utilization in per-mille of the GPU; seconds are
-- time-weighted (each sample stands for the time until the next).
CREATE TABLE gpu_rollup_1m (
  gpu_id INTEGER NOT NULL,
  minute INTEGER NOT NULL,
  covered_seconds INTEGER NOT NULL,
  utilization_min_permille INTEGER,
  utilization_mean_permille INTEGER,
  utilization_max_permille INTEGER,
  memory_used_mean_mib INTEGER,
  memory_used_max_mib INTEGER,
  power_mean_deciwatts INTEGER,
  temperature_max_celsius INTEGER,
  energy_joules INTEGER NOT NULL,
  idle_seconds INTEGER NOT NULL,
  held_idle_seconds INTEGER NOT NULL,
  throttle_thermal_seconds INTEGER NOT NULL,
  throttle_power_seconds INTEGER NOT NULL,
  throttle_other_seconds INTEGER NOT NULL,
  PRIMARY KEY (gpu_id, minute)) WITHOUT ROWID;

CREATE TABLE gpu_rollup_1h (
  gpu_id INTEGER NOT NULL,
  hour INTEGER NOT NULL,
  covered_seconds INTEGER NOT NULL,
  utilization_min_permille INTEGER,
  utilization_sum_permille_seconds INTEGER NOT NULL,
  utilization_max_permille INTEGER,
  memory_used_max_mib INTEGER,
  power_sum_deciwatt_seconds INTEGER NOT NULL,
  temperature_max_celsius INTEGER,
  energy_joules INTEGER NOT NULL,
  idle_seconds INTEGER NOT NULL,
  held_idle_seconds INTEGER NOT NULL,
  throttle_thermal_seconds INTEGER NOT NULL,
  throttle_power_seconds INTEGER NOT NULL,
  throttle_other_seconds INTEGER NOT NULL,
  PRIMARY KEY (gpu_id, hour)) WITHOUT ROWID;

-- Per session and hour: how long it was on the GPU, computing (SM > 0), and
-- holding memory at SM = 0; memory held in MiB-seconds.
CREATE TABLE process_rollup_1h (
  session_id INTEGER NOT NULL,
  hour INTEGER NOT NULL,
  seen_seconds INTEGER NOT NULL,
  busy_seconds INTEGER NOT NULL,
  held_idle_seconds INTEGER NOT NULL,
  memory_mib_seconds INTEGER NOT NULL,
  held_idle_memory_mib_seconds INTEGER NOT NULL,
  memory_max_mib INTEGER NOT NULL,
  PRIMARY KEY (session_id, hour)) WITHOUT ROWID;
CREATE INDEX process_rollup_1h_hour ON process_rollup_1h (hour);

CREATE TABLE events (
  event_id INTEGER PRIMARY KEY,
  t INTEGER NOT NULL,
  gpu_id INTEGER,
  kind TEXT NOT NULL,
  detail TEXT NOT NULL);
CREATE INDEX events_t ON events (t);

-- Views for ad-hoc questions (sqlite3 /var/lib/tarmac/tarmac.db).
CREATE VIEW gpu_minutes AS
  SELECT datetime(r.minute * 60, 'unixepoch') AS time, g.gpu_index, g.uuid, g.name,
         r.utilization_mean_permille / 10.0 AS utilization_percent,
         r.memory_used_mean_mib AS memory_used_mib, r.power_mean_deciwatts / 10.0 AS power_watts,
         r.temperature_max_celsius, r.idle_seconds, r.held_idle_seconds
  FROM gpu_rollup_1m r JOIN gpus g USING (gpu_id);

CREATE VIEW gpu_hours AS
  SELECT datetime(r.hour * 3600, 'unixepoch') AS time, g.gpu_index, g.uuid, g.name,
         r.utilization_sum_permille_seconds / 10.0 / MAX(r.covered_seconds, 1) AS utilization_percent,
         r.energy_joules / 3600000.0 AS energy_kwh, r.idle_seconds, r.held_idle_seconds, r.covered_seconds
  FROM gpu_rollup_1h r JOIN gpus g USING (gpu_id);

CREATE VIEW processes AS
  SELECT s.session_id, g.gpu_index, g.uuid AS gpu_uuid, s.pid, s.user, s.command, s.container_id, s.pod_uid,
         s.systemd_unit, s.slurm_job_id, datetime(s.first_seen, 'unixepoch') AS first_seen,
         datetime(s.last_seen, 'unixepoch') AS last_seen, s.last_seen - s.first_seen AS seconds
  FROM process_sessions s JOIN gpus g USING (gpu_id);

CREATE VIEW event_log AS
  SELECT datetime(e.t, 'unixepoch') AS time, g.gpu_index, e.kind, e.detail
  FROM events e LEFT JOIN gpus g USING (gpu_id);
)sql";

// Version 2: time a GPU could not be read is kept apart (unknown_seconds),
// so that it is counted neither busy nor idle.
constexpr const char* kSchemaV2 = R"sql(
ALTER TABLE gpu_rollup_1m ADD COLUMN unknown_seconds INTEGER NOT NULL DEFAULT 0;
ALTER TABLE gpu_rollup_1h ADD COLUMN unknown_seconds INTEGER NOT NULL DEFAULT 0;
DROP VIEW gpu_hours;
CREATE VIEW gpu_hours AS
  SELECT datetime(r.hour * 3600, 'unixepoch') AS time, g.gpu_index, g.uuid, g.name,
         r.utilization_sum_permille_seconds / 10.0 / MAX(r.covered_seconds - r.unknown_seconds, 1)
           AS utilization_percent,
         r.energy_joules / 3600000.0 AS energy_kwh, r.idle_seconds, r.unknown_seconds, r.held_idle_seconds,
         r.covered_seconds
  FROM gpu_rollup_1h r JOIN gpus g USING (gpu_id);
)sql";

// Version 3: time a backfill lease held the GPU (idle time put to work).
constexpr const char* kSchemaV3 = R"sql(
ALTER TABLE gpu_rollup_1m ADD COLUMN backfill_seconds INTEGER NOT NULL DEFAULT 0;
ALTER TABLE gpu_rollup_1h ADD COLUMN backfill_seconds INTEGER NOT NULL DEFAULT 0;
DROP VIEW gpu_hours;
CREATE VIEW gpu_hours AS
  SELECT datetime(r.hour * 3600, 'unixepoch') AS time, g.gpu_index, g.uuid, g.name,
         r.utilization_sum_permille_seconds / 10.0 / MAX(r.covered_seconds - r.unknown_seconds, 1)
           AS utilization_percent,
         r.energy_joules / 3600000.0 AS energy_kwh, r.idle_seconds, r.unknown_seconds, r.held_idle_seconds,
         r.backfill_seconds, r.covered_seconds
  FROM gpu_rollup_1h r JOIN gpus g USING (gpu_id);
)sql";

// Version 4: whom another scheduler allocated each GPU to, over time,
// whether or not a process ran on it: one row per stretch of one
// allocation. kind 'pod' (the kubelet, [kubernetes]): scope = namespace,
// name = pod, detail = container; kind 'slurm' (a job's prolog): scope =
// user, name = job id, detail = ''.
constexpr const char* kSchemaV4 = R"sql(
CREATE TABLE allocations (
  allocation_id INTEGER PRIMARY KEY,
  gpu_id INTEGER NOT NULL,
  kind TEXT NOT NULL,
  scope TEXT NOT NULL,
  name TEXT NOT NULL,
  detail TEXT NOT NULL,
  first_seen INTEGER NOT NULL,
  last_seen INTEGER NOT NULL);
CREATE INDEX allocations_last_seen ON allocations (last_seen);
)sql";

// Version 5: GPU time charged to users (node/gpu_charge.h), by hour: by
// whom it was held ('lease' or 'process') and the GPU's state ('busy',
// 'idle', 'unknown'), in milliseconds (shares of a GPU's time).
constexpr const char* kSchemaV5 = R"sql(
CREATE TABLE users (user_id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
CREATE TABLE charge_rollup_1h (
  gpu_id INTEGER NOT NULL,
  hour INTEGER NOT NULL,
  user_id INTEGER NOT NULL,
  held_by TEXT NOT NULL,
  state TEXT NOT NULL,
  milliseconds INTEGER NOT NULL,
  PRIMARY KEY (gpu_id, hour, user_id, held_by, state)) WITHOUT ROWID;
CREATE INDEX charge_rollup_1h_hour ON charge_rollup_1h (hour);
CREATE VIEW user_hours AS
  SELECT datetime(r.hour * 3600, 'unixepoch') AS time, g.gpu_index, g.uuid, u.name AS user, r.held_by,
         r.state, r.milliseconds / 1000.0 AS seconds
  FROM charge_rollup_1h r JOIN gpus g USING (gpu_id) JOIN users u USING (user_id);
)sql";

// migrations[v] takes a database at version v to v + 1.
constexpr const char* kMigrations[] = {kSchemaV1, kSchemaV2, kSchemaV3, kSchemaV4, kSchemaV5};

Status CheckReadable(Db* db) {
  Result<std::optional<int64_t>> version = db->QueryInt("PRAGMA user_version");
  if (!version.ok()) return version.status();
  int64_t v = version.value().value_or(0);
  if (v > kSchemaVersion) {
    return Status::FailedPrecondition(fmt::format(
        "store: {}: written by a newer tarmac (schema {}, this tarmac reads up to {}); upgrade tarmac, or "
        "move the file away to start a new history",
        db->path(), v, kSchemaVersion));
  }
  return Status::OK();
}

}  // namespace

Status CheckIntegrity(Db* db) {
  Result<Stmt> check = db->Prepare("PRAGMA quick_check(1)");
  if (!check.ok()) return check.status();
  Result<bool> row = check.value().Step();
  if (!row.ok()) return row.status();
  std::string verdict = row.value() ? check.value().Text(0) : "no answer";
  if (verdict != "ok")
    return Status::Corruption(fmt::format("store: {}: integrity check: {}", db->path(), verdict));
  return Status::OK();
}

Result<std::unique_ptr<Db>> OpenForWriting(const std::string& path) {
  Result<std::unique_ptr<Db>> opened = Db::Open(path, Db::Mode::kReadWriteCreate);
  if (!opened.ok()) return opened.status();
  Db* db = opened.value().get();
  Status s = CheckReadable(db);
  if (s.ok()) s = CheckIntegrity(db);
  if (!s.ok()) return s;
  ::chmod(path.c_str(), 0644);  // Readable by the report commands, as `ps` shows the same.
  s = db->Exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=OFF;");
  if (!s.ok()) return s;
  Result<std::optional<int64_t>> read_version = db->QueryInt("PRAGMA user_version");
  if (!read_version.ok()) return read_version.status();
  int64_t version = read_version.value().value_or(0);
  if (version == 0) {
    // auto_vacuum must be chosen before the first table exists.
    s = db->Exec("PRAGMA auto_vacuum=INCREMENTAL");
    if (!s.ok()) return s;
  }
  for (int64_t v = version; v < kSchemaVersion; ++v) {
    Transaction tx(db);
    s = tx.begin_status();
    if (s.ok()) s = db->Exec(kMigrations[v]);
    if (s.ok()) s = db->Exec(fmt::format("PRAGMA user_version = {}", v + 1));
    if (s.ok()) s = tx.Commit();
    if (!s.ok()) return s.WithContext(fmt::format("store: migrating to schema {}", v + 1));
  }
  return opened;
}

Result<std::unique_ptr<Db>> OpenForReading(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return Status::NotFound(
        fmt::format("store: {}: no history yet (the agent writes it; is it running?)", path));
  }
  Result<std::unique_ptr<Db>> opened = Db::Open(path, Db::Mode::kReadOnly);
  if (!opened.ok()) return opened.status();
  Status s = CheckReadable(opened.value().get());
  if (!s.ok()) return s;
  Result<std::optional<int64_t>> version = opened.value()->QueryInt("PRAGMA user_version");
  if (!version.ok()) return version.status();
  if (version.value().value_or(0) == 0) {
    Result<std::optional<int64_t>> tables = opened.value()->QueryInt("SELECT COUNT(*) FROM sqlite_master");
    if (!tables.ok()) return tables.status();
    if (tables.value().value_or(0) == 0) {
      return Status::FailedPrecondition(fmt::format(
          "store: {}: holds no history (an empty file, or its write-ahead log {}-wal is unreadable)", path,
          path));
    }
    return Status::FailedPrecondition(fmt::format("store: {}: not a tarmac history database", path));
  }
  if (version.value().value_or(0) < kSchemaVersion) {
    return Status::FailedPrecondition(
        fmt::format("store: {}: older schema; start the agent once to migrate it", path));
  }
  return opened;
}

Result<std::string> MoveAside(const std::string& path, std::chrono::system_clock::time_point now) {
  int64_t seconds = std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count();
  std::string aside = fmt::format("{}.corrupt-{}", path, seconds);
  if (std::rename(path.c_str(), aside.c_str()) != 0) {
    return Status::IOError(fmt::format("store: cannot move {} aside to {}", path, aside));
  }
  for (const char* suffix : {"-wal", "-shm"}) {
    std::rename((path + suffix).c_str(), (aside + suffix).c_str());
  }
  return aside;
}

}  // namespace tarmac::store
