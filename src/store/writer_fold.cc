// SPDX-License-Identifier: Apache-2.0
//
// StoreWriter's fold of the tick journal into packed minutes and the minute
// and hour rollups (writer.h), and taking a folded minute back out of the
// hours when it is folded again.
#include <fmt/format.h>

#include <set>

#include "store/codec.h"
#include "store/fold.h"
#include "store/schema.h"
#include "store/writer.h"

namespace tarmac::store {

namespace {

// The statements a fold writes with (store/schema.cc has the tables).
constexpr const char* kRawSql =
    "INSERT OR REPLACE INTO gpu_samples (gpu_id, minute, samples) VALUES (?, ?, ?)";
constexpr const char* kMinuteRollupSql =
    "INSERT OR REPLACE INTO gpu_rollup_1m (gpu_id, minute, covered_seconds, utilization_min_permille, "
    "utilization_mean_permille, utilization_max_permille, memory_used_mean_mib, memory_used_max_mib, "
    "power_mean_deciwatts, temperature_max_celsius, energy_joules, idle_seconds, held_idle_seconds, "
    "throttle_thermal_seconds, throttle_power_seconds, throttle_other_seconds, unknown_seconds, "
    "backfill_seconds) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";
constexpr const char* kHourRollupSql =
    "INSERT INTO gpu_rollup_1h (gpu_id, hour, covered_seconds, utilization_min_permille, "
    "utilization_sum_permille_seconds, utilization_max_permille, memory_used_max_mib, "
    "power_sum_deciwatt_seconds, "
    "temperature_max_celsius, energy_joules, idle_seconds, held_idle_seconds, throttle_thermal_seconds, "
    "throttle_power_seconds, throttle_other_seconds, unknown_seconds, backfill_seconds) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
    "ON CONFLICT (gpu_id, hour) DO UPDATE SET "
    "covered_seconds = covered_seconds + excluded.covered_seconds, "
    "unknown_seconds = unknown_seconds + excluded.unknown_seconds, "
    "backfill_seconds = backfill_seconds + excluded.backfill_seconds, "
    "utilization_min_permille = MIN(COALESCE(utilization_min_permille, excluded.utilization_min_permille), "
    "  COALESCE(excluded.utilization_min_permille, utilization_min_permille)), "
    "utilization_sum_permille_seconds = utilization_sum_permille_seconds + "
    "excluded.utilization_sum_permille_seconds, "
    "utilization_max_permille = MAX(COALESCE(utilization_max_permille, excluded.utilization_max_permille), "
    "  COALESCE(excluded.utilization_max_permille, utilization_max_permille)), "
    "memory_used_max_mib = MAX(COALESCE(memory_used_max_mib, excluded.memory_used_max_mib), "
    "  COALESCE(excluded.memory_used_max_mib, memory_used_max_mib)), "
    "power_sum_deciwatt_seconds = power_sum_deciwatt_seconds + excluded.power_sum_deciwatt_seconds, "
    "temperature_max_celsius = MAX(COALESCE(temperature_max_celsius, excluded.temperature_max_celsius), "
    "  COALESCE(excluded.temperature_max_celsius, temperature_max_celsius)), "
    "energy_joules = energy_joules + excluded.energy_joules, "
    "idle_seconds = idle_seconds + excluded.idle_seconds, "
    "held_idle_seconds = held_idle_seconds + excluded.held_idle_seconds, "
    "throttle_thermal_seconds = throttle_thermal_seconds + excluded.throttle_thermal_seconds, "
    "throttle_power_seconds = throttle_power_seconds + excluded.throttle_power_seconds, "
    "throttle_other_seconds = throttle_other_seconds + excluded.throttle_other_seconds";
constexpr const char* kGpuSeenSql = "UPDATE gpus SET last_seen = MAX(last_seen, ?) WHERE gpu_id = ?";
constexpr const char* kProcessRawSql =
    "INSERT OR REPLACE INTO process_samples (session_id, minute, samples) VALUES (?, ?, ?)";
constexpr const char* kProcessRollupSql =
    "INSERT INTO process_rollup_1h (session_id, hour, seen_seconds, busy_seconds, held_idle_seconds, "
    "memory_mib_seconds, held_idle_memory_mib_seconds, memory_max_mib) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
    "ON CONFLICT (session_id, hour) DO UPDATE SET seen_seconds = seen_seconds + excluded.seen_seconds, "
    "busy_seconds = busy_seconds + excluded.busy_seconds, "
    "held_idle_seconds = held_idle_seconds + excluded.held_idle_seconds, "
    "memory_mib_seconds = memory_mib_seconds + excluded.memory_mib_seconds, "
    "held_idle_memory_mib_seconds = held_idle_memory_mib_seconds + excluded.held_idle_memory_mib_seconds, "
    "memory_max_mib = MAX(memory_max_mib, excluded.memory_max_mib)";
constexpr const char* kChargeRollupSql =
    "INSERT INTO charge_rollup_1h (gpu_id, hour, user_id, held_by, state, milliseconds) "
    "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (gpu_id, hour, user_id, held_by, state) DO UPDATE SET "
    "milliseconds = milliseconds + excluded.milliseconds";
constexpr const char* kSessionSeenSql =
    "UPDATE process_sessions SET last_seen = MAX(last_seen, ?) WHERE session_id = ?";

// Writes one GPU's folded minute: its packed block, its minute rollup, its
// share of the hour rollup, and when it was last seen.
Status WriteGpuMinute(Db* db, int64_t minute, int64_t gpu_id, const Block& block, const GpuMinuteRollup& r) {
  Result<Stmt*> raw = db->Cached(kRawSql);
  Result<Stmt*> minute_rollup = db->Cached(kMinuteRollupSql);
  Result<Stmt*> hour_rollup = db->Cached(kHourRollupSql);
  Result<Stmt*> gpu_seen = db->Cached(kGpuSeenSql);
  for (Result<Stmt*>* stmt : {&raw, &minute_rollup, &hour_rollup, &gpu_seen}) {
    if (!stmt->ok()) return stmt->status();
  }
  Status s = raw.value()->Bind(1, gpu_id).Bind(2, minute).BindBlob(3, EncodeBlock(minute * 60, block)).Run();
  if (s.ok()) {
    s = minute_rollup.value()
            ->Bind(1, gpu_id)
            .Bind(2, minute)
            .Bind(3, r.covered_seconds)
            .Bind(4, r.utilization_min_permille)
            .Bind(5, r.utilization_mean_permille)
            .Bind(6, r.utilization_max_permille)
            .Bind(7, r.memory_used_mean_mib)
            .Bind(8, r.memory_used_max_mib)
            .Bind(9, r.power_mean_deciwatts)
            .Bind(10, r.temperature_max_celsius)
            .Bind(11, r.energy_joules)
            .Bind(12, r.idle_seconds)
            .Bind(13, r.held_idle_seconds)
            .Bind(14, r.throttle_thermal_seconds)
            .Bind(15, r.throttle_power_seconds)
            .Bind(16, r.throttle_other_seconds)
            .Bind(17, r.unknown_seconds)
            .Bind(18, r.backfill_seconds)
            .Run();
  }
  if (s.ok()) {
    s = hour_rollup.value()
            ->Bind(1, gpu_id)
            .Bind(2, minute / 60)
            .Bind(3, r.covered_seconds)
            .Bind(4, r.utilization_min_permille)
            .Bind(5, r.utilization_sum_permille_seconds)
            .Bind(6, r.utilization_max_permille)
            .Bind(7, r.memory_used_max_mib)
            .Bind(8, r.power_sum_deciwatt_seconds)
            .Bind(9, r.temperature_max_celsius)
            .Bind(10, r.energy_joules)
            .Bind(11, r.idle_seconds)
            .Bind(12, r.held_idle_seconds)
            .Bind(13, r.throttle_thermal_seconds)
            .Bind(14, r.throttle_power_seconds)
            .Bind(15, r.throttle_other_seconds)
            .Bind(16, r.unknown_seconds)
            .Bind(17, r.backfill_seconds)
            .Run();
  }
  if (s.ok()) s = gpu_seen.value()->Bind(1, block.times.back()).Bind(2, gpu_id).Run();
  return s;
}

// Writes one process session's folded minute: its packed block, its share
// of the hour rollup, and when it was last seen.
Status WriteProcessMinute(Db* db, int64_t minute, int64_t session_id, const Block& block,
                          const ProcessMinuteRollup& r) {
  Result<Stmt*> process_raw = db->Cached(kProcessRawSql);
  Result<Stmt*> process_rollup = db->Cached(kProcessRollupSql);
  Result<Stmt*> session_seen = db->Cached(kSessionSeenSql);
  for (Result<Stmt*>* stmt : {&process_raw, &process_rollup, &session_seen}) {
    if (!stmt->ok()) return stmt->status();
  }
  Status s = process_raw.value()
                 ->Bind(1, session_id)
                 .Bind(2, minute)
                 .BindBlob(3, EncodeBlock(minute * 60, block))
                 .Run();
  if (s.ok()) {
    s = process_rollup.value()
            ->Bind(1, session_id)
            .Bind(2, minute / 60)
            .Bind(3, r.seen_seconds)
            .Bind(4, r.busy_seconds)
            .Bind(5, r.held_idle_seconds)
            .Bind(6, r.memory_mib_seconds)
            .Bind(7, r.held_idle_memory_mib_seconds)
            .Bind(8, r.memory_max_mib)
            .Run();
  }
  if (s.ok()) s = session_seen.value()->Bind(1, r.last_seen).Bind(2, session_id).Run();
  return s;
}

// Adds a folded minute's charges (signed: -1 takes a minute folded before
// back out) to the hour's.
Status AddCharges(Db* db, int64_t hour, const std::map<ChargeKey, int64_t>& charges, int64_t sign) {
  Result<Stmt*> rollup = db->Cached(kChargeRollupSql);
  if (!rollup.ok()) return rollup.status();
  for (const auto& [key, milliseconds] : charges) {
    const auto& [gpu_id, user_id, held_by, state] = key;
    Status s = rollup.value()
                   ->Bind(1, gpu_id)
                   .Bind(2, hour)
                   .Bind(3, user_id)
                   .Bind(4, node::ChargeHolderName(held_by))
                   .Bind(5, node::ChargeStateName(state))
                   .Bind(6, sign * milliseconds)
                   .Run();
    if (!s.ok()) return s;
  }
  return Status::OK();
}

}  // namespace

Status StoreWriter::SubtractFromHours(int64_t hour, const FoldedMinute& old) {
  Result<Stmt*> gpu = db_->Cached(
      "UPDATE gpu_rollup_1h SET covered_seconds = covered_seconds - ?, "
      "utilization_sum_permille_seconds = utilization_sum_permille_seconds - ?, "
      "power_sum_deciwatt_seconds = power_sum_deciwatt_seconds - ?, energy_joules = energy_joules - ?, "
      "idle_seconds = idle_seconds - ?, unknown_seconds = unknown_seconds - ?, "
      "held_idle_seconds = held_idle_seconds - ?, throttle_thermal_seconds = throttle_thermal_seconds - ?, "
      "throttle_power_seconds = throttle_power_seconds - ?, throttle_other_seconds = throttle_other_seconds "
      "- ?, "
      "backfill_seconds = backfill_seconds - ? WHERE gpu_id = ? AND hour = ?");
  if (!gpu.ok()) return gpu.status();
  for (const auto& [gpu_id, r] : old.gpu_rollups) {
    Status s = gpu.value()
                   ->Bind(1, r.covered_seconds)
                   .Bind(2, r.utilization_sum_permille_seconds)
                   .Bind(3, r.power_sum_deciwatt_seconds)
                   .Bind(4, r.energy_joules)
                   .Bind(5, r.idle_seconds)
                   .Bind(6, r.unknown_seconds)
                   .Bind(7, r.held_idle_seconds)
                   .Bind(8, r.throttle_thermal_seconds)
                   .Bind(9, r.throttle_power_seconds)
                   .Bind(10, r.throttle_other_seconds)
                   .Bind(11, r.backfill_seconds)
                   .Bind(12, gpu_id)
                   .Bind(13, hour)
                   .Run();
    if (!s.ok()) return s;
  }
  Result<Stmt*> process = db_->Cached(
      "UPDATE process_rollup_1h SET seen_seconds = seen_seconds - ?, busy_seconds = busy_seconds - ?, "
      "held_idle_seconds = held_idle_seconds - ?, memory_mib_seconds = memory_mib_seconds - ?, "
      "held_idle_memory_mib_seconds = held_idle_memory_mib_seconds - ? WHERE session_id = ? AND hour = ?");
  if (!process.ok()) return process.status();
  for (const auto& [session_id, r] : old.process_rollups) {
    Status s = process.value()
                   ->Bind(1, r.seen_seconds)
                   .Bind(2, r.busy_seconds)
                   .Bind(3, r.held_idle_seconds)
                   .Bind(4, r.memory_mib_seconds)
                   .Bind(5, r.held_idle_memory_mib_seconds)
                   .Bind(6, session_id)
                   .Bind(7, hour)
                   .Run();
    if (!s.ok()) return s;
  }
  return AddCharges(db_.get(), hour, old.charge_milliseconds, -1);
}

Status StoreWriter::FoldJournalBefore(int64_t before_t, bool keep_journal) {
  // Ticks up to `folded_through` were folded once already (a clean stop):
  // their share of the hour rollups is taken out before the whole minute is
  // folded again.
  Result<std::optional<int64_t>> folded_through =
      db_->QueryInt("SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'journal_folded_through'");
  if (!folded_through.ok()) return folded_through.status();
  std::map<int64_t, MinuteFolder> minutes;
  std::map<int64_t, MinuteFolder> folded_before;
  if (Status read = ReadJournal(before_t, folded_through.value(), &minutes, &folded_before); !read.ok())
    return read;
  Transaction tx(db_.get());
  if (!tx.begin_status().ok()) return tx.begin_status();
  Status s;
  int64_t last_folded = 0;
  for (auto& [minute, folder] : minutes) {
    last_folded = std::max(last_folded, folder.last_t());
    if (auto before = folded_before.find(minute); before != folded_before.end() && s.ok()) {
      s = SubtractFromHours(minute / 60, std::move(before->second).Finish(max_gap_seconds_));
    }
    FoldedMinute f = std::move(folder).Finish(max_gap_seconds_);
    for (const auto& [gpu_id, block] : f.gpu_blocks) {
      if (s.ok()) s = WriteGpuMinute(db_.get(), minute, gpu_id, block, f.gpu_rollups[gpu_id]);
    }
    for (const auto& [session_id, block] : f.process_blocks) {
      if (s.ok()) s = WriteProcessMinute(db_.get(), minute, session_id, block, f.process_rollups[session_id]);
    }
    if (s.ok()) s = AddCharges(db_.get(), minute / 60, f.charge_milliseconds, 1);
  }
  if (keep_journal) {
    if (s.ok() && !minutes.empty()) {
      s = db_->Exec(fmt::format(
          "INSERT OR REPLACE INTO meta (key, value) VALUES ('journal_folded_through', '{}')", last_folded));
    }
    if (s.ok()) s = tx.Commit();
    return s;
  }
  Result<Stmt*> erase = db_->Cached("DELETE FROM tick_journal WHERE t < ?");
  if (!erase.ok()) return erase.status();
  if (s.ok()) s = erase.value()->Bind(1, before_t).Run();
  if (s.ok()) s = db_->Exec("DELETE FROM meta WHERE key = 'journal_folded_through'");
  if (s.ok()) s = tx.Commit();
  if (!s.ok()) return s;
  journal_minute_.reset();
  return Status::OK();
}

Status StoreWriter::ReadJournal(int64_t before_t, std::optional<int64_t> folded_through,
                                std::map<int64_t, MinuteFolder>* minutes,
                                std::map<int64_t, MinuteFolder>* folded_before) {
  Result<Stmt*> select = db_->Cached("SELECT t, payload FROM tick_journal WHERE t < ? ORDER BY t");
  if (!select.ok()) return select.status();
  select.value()->Bind(1, before_t);
  // Each row is folded as it is read (store/fold.h, MinuteFolder); the
  // ticks up to `folded_through` also into a second folder, for the share
  // to take out of the hours.
  for (;;) {
    Result<bool> row = select.value()->Step();
    if (!row.ok()) return row.status();
    if (!row.value()) return Status::OK();
    int64_t t = select.value()->Int(0);
    Result<TickRecord> tick = DecodeTick(t, select.value()->Blob(1));
    if (!tick.ok()) {
      logger_->Log(LogLevel::kWarning, "store: skipping journal row {}: {}", t, tick.status().message());
      continue;
    }
    minutes->try_emplace(t / 60, t / 60).first->second.Add(tick.value());
    if (folded_through && t <= *folded_through) {
      folded_before->try_emplace(t / 60, t / 60).first->second.Add(tick.value());
    }
  }
}

}  // namespace tarmac::store
