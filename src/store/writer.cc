// SPDX-License-Identifier: Apache-2.0
#include "store/writer.h"

#include <fmt/format.h>

#include <cmath>
#include <set>

#include "common/fs.h"
#include "node/gpu_charge.h"
#include "nvidia/clock_event_reasons.h"
#include "store/codec.h"
#include "store/event_query.h"
#include "store/fold.h"
#include "store/schema.h"

namespace tarmac::store {
namespace {

std::string ReasonsText(uint64_t reasons) {
  std::string text;
  for (const std::string& name : nvidia::DecodeClockEventReasons(
           reasons & ~(nvidia::kReasonGpuIdle | nvidia::kReasonApplicationsClocksSetting |
                       nvidia::kReasonSyncBoost | nvidia::kReasonDisplayClockSetting))) {
    text += (text.empty() ? "" : ",") + name;
  }
  return text;
}

uint64_t ThrottleBits(const node::GpuSample& s) {
  if (!s.clock_event_reasons || !nvidia::IsThrottled(*s.clock_event_reasons)) return 0;
  return *s.clock_event_reasons & ~(nvidia::kReasonGpuIdle | nvidia::kReasonApplicationsClocksSetting |
                                    nvidia::kReasonSyncBoost | nvidia::kReasonDisplayClockSetting);
}

}  // namespace

Result<std::unique_ptr<StoreWriter>> StoreWriter::Open(StoreOptions options, Clock* clock, Logger* logger) {
  Result<std::unique_ptr<Db>> db = OpenForWriting(options.path);
  std::string moved_to;
  if (!db.ok() && db.status().code() == StatusCode::kCorruption) {
    logger->Log(LogLevel::kError, "{}; moving it aside and starting a new history", db.status().message());
    Result<std::string> aside = MoveAside(options.path, clock->WallNow());
    if (!aside.ok()) return aside.status();
    moved_to = aside.value();
    db = OpenForWriting(options.path);
  }
  if (!db.ok() && db.status().code() != StatusCode::kFailedPrecondition) {
    // Not writable now (a read-only file system, no permission, a full
    // disk): history starts paused and is retried every kRetryInterval.
    logger->Log(LogLevel::kError, "{}; history paused (live data is still served); retrying every {} s",
                db.status().message(), kRetryInterval.count());
    std::unique_ptr<StoreWriter> writer(new StoreWriter(std::move(options), nullptr, clock, logger));
    {
      MutexLock lock(&writer->mu_);
      writer->stats_.is_paused = true;
      writer->stats_.last_error = db.status().message();
    }
    writer->retry_at_ = clock->SteadyNow() + kRetryInterval;
    return writer;
  }
  if (!db.ok()) return db.status();
  std::unique_ptr<StoreWriter> writer(
      new StoreWriter(std::move(options), std::move(db).value(), clock, logger));
  Status s = writer->Recover();
  if (!s.ok()) return s;
  if (!moved_to.empty()) {
    s = writer->WriteEvent(UnixSeconds(clock->WallNow()), std::nullopt, "store_recovered",
                           fmt::format("the database was corrupt; moved to {}", moved_to));
    if (!s.ok()) return s;
  }
  return writer;
}

StoreWriter::StoreWriter(StoreOptions options, std::unique_ptr<Db> db, Clock* clock, Logger* logger)
    : options_(std::move(options)), db_(std::move(db)), clock_(clock), logger_(logger) {
  int64_t interval_ms = std::max<int64_t>(options_.fast_interval.count(), 1000);
  max_gap_seconds_ = std::max<int64_t>(2 * interval_ms / 1000, 1);
  if (db_ != nullptr) NoteFile();
}

void StoreWriter::NoteFile() { file_ = FileIdOf(options_.path).value_or(FileId{}); }

Status StoreWriter::CheckFile() {
  std::optional<FileId> now = FileIdOf(options_.path);
  bool is_gone = !now;
  if (now && *now == file_) return Status::OK();
  std::string what = fmt::format("history store {} was {} under the agent", options_.path,
                                 is_gone ? "deleted" : "replaced by another file");
  logger_->Log(LogLevel::kError, "{}; opening the path afresh", what);
  {
    MutexLock lock(&mu_);
    corruption_ = fmt::format(
        "{}; history goes on in the file now at that path (restart the agent to clear this)", what);
  }
  if (is_gone) MakeDirs(Dirname(options_.path)).IgnoreError();
  Status s = Reopen();
  if (!s.ok()) return s;
  return WriteEvent(UnixSeconds(clock_->WallNow()), std::nullopt, "store_lost", what);
}

StoreWriter::~StoreWriter() { Stop(); }

Status StoreWriter::Recover() {
  Result<Stmt*> gpus = db_->Cached("SELECT gpu_id, uuid, gpu_index FROM gpus ORDER BY last_seen");
  if (!gpus.ok()) return gpus.status();
  for (;;) {
    Result<bool> row = gpus.value()->Step();
    if (!row.ok()) return row.status();
    if (!row.value()) break;
    gpu_ids_[gpus.value()->Text(1)] = gpus.value()->Int(0);
    if (gpus.value()->Text(1).rfind("index-", 0) != 0) {
      gpu_by_index_[static_cast<int>(gpus.value()->Int(2))] = gpus.value()->Int(0);
    }
  }
  Result<std::optional<int64_t>> journal_max = db_->QueryInt("SELECT MAX(t) FROM tick_journal");
  Result<std::optional<int64_t>> journal_min = db_->QueryInt("SELECT MIN(t) FROM tick_journal");
  Result<std::optional<int64_t>> folded = db_->QueryInt("SELECT MAX(minute) FROM gpu_rollup_1m");
  if (!journal_max.ok()) return journal_max.status();
  if (!journal_min.ok()) return journal_min.status();
  if (!folded.ok()) return folded.status();
  if (journal_max.value()) last_t_ = *journal_max.value();
  // A folded minute with no journal left is complete (tools fold all); the
  // minute a clean stop folded is still in the journal, which tells its
  // last second.
  if (folded.value() && (!journal_min.value() || *folded.value() < *journal_min.value() / 60)) {
    last_t_ = std::max(last_t_, *folded.value() * 60 + 59);
  }
  if (journal_min.value()) journal_minute_ = *journal_min.value() / 60;
  // Sessions and allocations seen lately go on; older ones have ended.
  Result<Stmt*> sessions =
      db_->Cached("SELECT session_id, gpu_id, pid, start_ticks FROM process_sessions WHERE last_seen >= ?");
  if (!sessions.ok()) return sessions.status();
  Status s = sessions.value()->Bind(1, last_t_ - 180).ForEachRow([this](const Stmt& r) {
    sessions_[SessionKey{r.Int(1), r.Int(2), r.Int(3)}] = r.Int(0);
  });
  if (!s.ok()) return s;
  return LoadOpenAllocations();
}

void StoreWriter::Start() {
  thread_ = std::jthread([this](std::stop_token stop) { Loop(stop); });
}

void StoreWriter::Stop() {
  if (!thread_.joinable()) return;
  {
    MutexLock lock(&mu_);
    thread_.request_stop();
  }
  cv_.notify_all();
  thread_.join();
  // The minute in progress is folded, so that reports see it, and also kept
  // in the journal: a start within the same minute carries on in it, and
  // the minute is folded again, whole, when it is over.
  if (db_ == nullptr) return;
  if (Status mark = WriteStopMark(); !mark.ok())
    logger_->Log(LogLevel::kWarning, "store: the stop's mark: {}", mark.message());
  Status s = FoldJournalBefore(INT64_MAX, /*keep_journal=*/true);
  if (!s.ok()) logger_->Log(LogLevel::kWarning, "{}; the next start folds it", s.message());
}

Status StoreWriter::WriteStopMark() {
  if (last_t_ == 0 || journal_minute_ == std::nullopt) return Status::OK();  // No tick since the start.
  // A second after the last tick at the least: that tick stands for a
  // second whenever the agent stopped within it.
  int64_t t = std::max(UnixSeconds(clock_->WallNow()), last_t_ + 1);
  TickRecord stop;
  stop.t = t;
  Status s = InsertJournalRow(stop);
  if (s.ok()) last_t_ = t;
  return s;
}

Status StoreWriter::InsertJournalRow(const TickRecord& tick) {
  Result<Stmt*> journal = db_->Cached("INSERT INTO tick_journal (t, payload) VALUES (?, ?)");
  if (!journal.ok()) return journal.status();
  return journal.value()->Bind(1, tick.t).BindBlob(2, EncodeTick(tick)).Run();
}

std::string StoreWriter::Problem() const {
  MutexLock lock(&mu_);
  std::string problem = corruption_;
  if (stats_.is_paused) {
    problem += fmt::format("{}history paused: {}", problem.empty() ? "" : "; ", stats_.last_error);
  }
  return problem;
}

Status StoreWriter::Reopen() {
  db_.reset();
  Result<std::unique_ptr<Db>> db = OpenForWriting(options_.path);
  if (!db.ok()) {
    if (db.status().code() == StatusCode::kCorruption) return Quarantine(db.status());
    return db.status();
  }
  db_ = std::move(db).value();
  NoteFile();
  gpu_ids_.clear();
  user_ids_.clear();
  gpu_by_index_.clear();
  sessions_.clear();
  allocations_.clear();
  journal_minute_.reset();
  return Recover();
}

Status StoreWriter::Quarantine(const Status& found) {
  logger_->Log(LogLevel::kError, "{}; moving it aside and starting a new history", found.message());
  db_.reset();
  Result<std::string> aside = MoveAside(options_.path, clock_->WallNow());
  if (!aside.ok()) return aside.status();
  {
    MutexLock lock(&mu_);
    corruption_ = fmt::format(
        "history store {} was found corrupt ({}) and moved to {}; a new history began "
        "(restart the agent to clear this)",
        options_.path, found.message(), aside.value());
  }
  Result<std::unique_ptr<Db>> db = OpenForWriting(options_.path);
  if (!db.ok()) return db.status();
  db_ = std::move(db).value();
  NoteFile();
  gpu_ids_.clear();
  user_ids_.clear();
  gpu_by_index_.clear();
  sessions_.clear();
  allocations_.clear();
  previous_.clear();
  journal_minute_.reset();
  last_t_ = 0;
  Status s = Recover();
  if (!s.ok()) return s;
  return WriteEvent(
      UnixSeconds(clock_->WallNow()), std::nullopt, "store_recovered",
      fmt::format("the database was corrupt ({}); moved to {}", found.message(), aside.value()));
}

Status StoreWriter::QuickCheck() {
  if (db_ == nullptr) return Status::Unavailable("store: not open");
  return CheckIntegrity(db_.get());
}

void StoreWriter::Submit(std::shared_ptr<const node::Snapshot> snapshot) {
  {
    MutexLock lock(&mu_);
    if (queue_.size() >= options_.queue_capacity) {
      queue_.pop_front();
      stats_.ticks_dropped++;
    }
    queue_.push_back(std::move(snapshot));
  }
  cv_.notify_one();
}

void StoreWriter::RecordEvent(std::string kind, std::string detail) {
  {
    MutexLock lock(&mu_);
    events_.emplace_back(std::move(kind), std::move(detail));
  }
  cv_.notify_one();
}

StoreStats StoreWriter::stats() const {
  MutexLock lock(&mu_);
  return stats_;
}

void StoreWriter::Loop(std::stop_token stop) {
  for (;;) {
    std::shared_ptr<const node::Snapshot> snapshot;
    std::optional<std::pair<std::string, std::string>> event;
    {
      MutexLock lock(&mu_);
      lock.Wait(cv_, stop, [this]() REQUIRES(mu_) { return !queue_.empty() || !events_.empty(); });
      if (queue_.empty() && events_.empty()) return;  // Stopping, and everything written.
      if (!events_.empty()) {
        event = std::move(events_.front());
        events_.pop_front();
      } else {
        snapshot = std::move(queue_.front());
        queue_.pop_front();
      }
    }
    Handle(snapshot, event);
  }
}

void StoreWriter::Handle(const std::shared_ptr<const node::Snapshot>& snapshot,
                         const std::optional<std::pair<std::string, std::string>>& event) {
  if (event) {
    if (pending_events_.size() < 100) pending_events_.push_back(*event);
  }
  std::chrono::steady_clock::time_point now = clock_->SteadyNow();
  if (retry_at_ && now < *retry_at_) {
    if (snapshot) {
      MutexLock lock(&mu_);
      stats_.ticks_dropped++;
    }
    return;
  }
  Status s;
  // After a failure, a fresh handle: one opened on a read-only file system
  // stays read-only, and the file may have been replaced meanwhile.
  if (retry_at_ || db_ == nullptr) s = Reopen();
  if (s.ok() && options_.integrity_check_interval.count() > 0) {
    if (!next_check_at_) next_check_at_ = now + options_.integrity_check_interval;
    if (now >= *next_check_at_) {
      next_check_at_ = now + options_.integrity_check_interval;
      s = QuickCheck();
    }
  }
  int64_t t = UnixSeconds(clock_->WallNow());
  while (s.ok() && !pending_events_.empty()) {
    s = WriteEvent(std::max(t, last_t_), std::nullopt, pending_events_.front().first,
                   pending_events_.front().second);
    if (s.ok()) pending_events_.erase(pending_events_.begin());
  }
  if (s.ok() && snapshot) s = WriteTick(snapshot->node_view);
  if (s.code() == StatusCode::kCorruption) {
    // Any statement may find it: move the file aside as start-up does.
    s = Quarantine(s);
    if (s.ok() && snapshot) s = WriteTick(snapshot->node_view);
  }
  ReleaseCache();
  MutexLock lock(&mu_);
  if (!s.ok()) {
    if (snapshot) stats_.ticks_dropped++;
    if (!stats_.is_paused) {
      logger_->Log(LogLevel::kError, "{}; history paused (live data is still served); retrying every {} s",
                   s.message(), kRetryInterval.count());
    }
    stats_.is_paused = true;
    stats_.last_error = s.message();
    retry_at_ = now + kRetryInterval;
    return;
  }
  if (stats_.is_paused) logger_->Log(LogLevel::kWarning, "store: history resumed");
  stats_.is_paused = false;
  retry_at_.reset();
}

Status StoreWriter::WriteEvent(int64_t t, std::optional<int64_t> gpu_id, const std::string& kind,
                               const std::string& detail) {
  Result<Stmt*> stmt = db_->Cached("INSERT INTO events (t, gpu_id, kind, detail) VALUES (?, ?, ?, ?)");
  if (!stmt.ok()) return stmt.status();
  return stmt.value()->Bind(1, t).Bind(2, gpu_id).Bind(3, kind).Bind(4, detail).Run();
}

Result<int64_t> StoreWriter::GpuId(const node::GpuInfo& info, int64_t t,
                                   std::map<std::string, int64_t>* added, bool is_mig_instance) {
  // A GPU that lost its identity (lost, unreadable) is still the one last
  // seen at its index, never a new one.
  if (info.uuid.empty() && !is_mig_instance) {
    if (auto it = gpu_by_index_.find(info.index); it != gpu_by_index_.end()) return it->second;
  }
  std::string uuid = info.uuid.empty() ? fmt::format("index-{}", info.index) : info.uuid;
  if (auto it = gpu_ids_.find(uuid); it != gpu_ids_.end()) {
    if (!is_mig_instance) gpu_by_index_[info.index] = it->second;
    return it->second;
  }
  if (auto it = added->find(uuid); it != added->end()) return it->second;
  Result<Stmt*> stmt = db_->Cached(
      "INSERT INTO gpus (uuid, gpu_index, name, memory_total_bytes, first_seen, last_seen) VALUES (?, ?, ?, "
      "?, ?, ?)");
  if (!stmt.ok()) return stmt.status();
  Status s = stmt.value()
                 ->Bind(1, uuid)
                 .Bind(2, int64_t{info.index})
                 .Bind(3, info.name)
                 .Bind(4, info.memory_total_bytes)
                 .Bind(5, t)
                 .Bind(6, t)
                 .Run();
  if (!s.ok()) return s;
  int64_t id = db_->last_insert_rowid();
  (*added)[uuid] = id;
  if (!info.uuid.empty() && !is_mig_instance) gpu_by_index_[info.index] = id;
  return id;
}

Result<int64_t> StoreWriter::UserId(const std::string& name, PendingTick* p) {
  if (auto it = user_ids_.find(name); it != user_ids_.end()) return it->second;
  if (auto it = p->added_users.find(name); it != p->added_users.end()) return it->second;
  Result<Stmt*> insert = db_->Cached("INSERT OR IGNORE INTO users (name) VALUES (?)");
  if (!insert.ok()) return insert.status();
  if (Status s = insert.value()->Bind(1, name).Run(); !s.ok()) return s;
  Result<Stmt*> select = db_->Cached("SELECT user_id FROM users WHERE name = ?");
  if (!select.ok()) return select.status();
  std::optional<int64_t> id;
  Status s = select.value()->Bind(1, name).ForEachRow([&](const Stmt& r) { id = r.Int(0); });
  if (!s.ok()) return s;
  if (!id) return Status::Internal("store: user just written is not found");
  p->added_users[name] = *id;
  return *id;
}

Status StoreWriter::WriteCharges(const node::GpuView& g, int64_t gpu_id, PendingTick* p) {
  for (const node::GpuCharge& c : node::ChargeGpu(g)) {
    Result<int64_t> user_id = UserId(c.user, p);
    if (!user_id.ok()) return user_id.status();
    p->tick.charges.push_back(
        ChargeTick{gpu_id, user_id.value(), c.held_by, c.state, std::llround(c.share * 1000)});
  }
  return Status::OK();
}

Status StoreWriter::SkipStaleTick(int64_t t) {
  bool is_jump = last_t_ - t > 2;
  {
    MutexLock lock(&mu_);
    stats_.ticks_skipped++;
  }
  if (is_jump && !is_clock_behind_) {
    is_clock_behind_ = true;
    logger_->Log(
        LogLevel::kWarning,
        "store: the wall clock moved back by {} s; history resumes when it passes the last stored second",
        last_t_ - t);
    return WriteEvent(last_t_, std::nullopt, "clock_moved_back", fmt::format("by {} s", last_t_ - t));
  }
  return Status::OK();
}

void StoreWriter::Event(PendingTick* p, std::optional<int64_t> gpu_id, const char* kind,
                        const std::string& detail) {
  if (p->status.ok()) p->status = WriteEvent(p->t, gpu_id, kind, detail);
}

Status StoreWriter::WriteTick(const node::NodeView& node_view) {
  if (Status file = CheckFile(); !file.ok()) return file;
  int64_t t = UnixSeconds(node_view.taken_at);
  if (t <= last_t_) return SkipStaleTick(t);
  is_clock_behind_ = false;
  if (journal_minute_ && *journal_minute_ != t / 60) {
    Status s = FoldJournalBefore(t / 60 * 60);
    if (!s.ok()) return s;
  }
  Transaction tx(db_.get());
  if (!tx.begin_status().ok()) return tx.begin_status();
  PendingTick p;
  p.t = t;
  p.tick.t = t;
  if (previous_backend_error_ && node_view.backend_error.empty() != previous_backend_error_->empty()) {
    if (node_view.backend_error.empty()) {
      Event(&p, std::nullopt, "driver_attached", "the GPUs can be read again");
    } else {
      Event(&p, std::nullopt, "driver_detached", node_view.backend_error);
    }
  }
  for (const node::GpuView& g : node_view.gpus) {
    if (Status s = WriteGpuTick(g, &p); !s.ok()) return s;
  }
  std::vector<SessionKey> ended;
  for (const auto& [key, session_id] : sessions_) {
    if (p.readable_gpus.count(std::get<0>(key)) == 0 || p.seen.count(key) != 0) continue;
    ended.push_back(key);
    Event(&p, std::get<0>(key), "process_end",
          fmt::format("pid {} left the GPU (session {})", std::get<1>(key), session_id));
  }
  if (!p.status.ok()) return p.status;
  Status s = InsertJournalRow(p.tick);
  if (s.ok()) s = tx.Commit();
  if (!s.ok()) return s;
  // Committed: now the in-memory view may follow.
  gpu_ids_.insert(p.added_gpus.begin(), p.added_gpus.end());
  user_ids_.insert(p.added_users.begin(), p.added_users.end());
  sessions_.insert(p.added_sessions.begin(), p.added_sessions.end());
  for (const SessionKey& key : ended) sessions_.erase(key);
  allocations_ = std::move(p.allocations);
  previous_ = std::move(p.states);
  previous_backend_error_ = node_view.backend_error;
  last_t_ = t;
  journal_minute_ = t / 60;
  {
    MutexLock lock(&mu_);
    stats_.ticks_written++;
  }
  if (t >= next_retention_t_) {
    next_retention_t_ = t + kRetentionInterval.count();
    return EnforceRetention(db_.get(), t, options_.retention);
  }
  return Status::OK();
}

Status StoreWriter::WriteGpuTick(const node::GpuView& g, PendingTick* p) {
  Result<int64_t> id = GpuId(g.info, p->t, &p->added_gpus);
  if (!id.ok()) return id.status();
  int64_t gpu_id = id.value();
  p->tick.gpus.push_back(GpuTick{gpu_id, GpuValuesOf(g)});
  if (Status s = WriteCharges(g, gpu_id, p); !s.ok()) return s;
  NoteGpuEvents(g, gpu_id, p);
  // Whom the kubelet or Slurm gave the GPU to.
  if (g.allocated_to && p->status.ok()) {
    p->status = NoteAllocation(
        {gpu_id, "pod", g.allocated_to->pod_namespace, g.allocated_to->pod, g.allocated_to->container}, p->t,
        &p->allocations);
  }
  if (g.lease && !g.lease->slurm_job.empty() && p->status.ok()) {
    p->status =
        NoteAllocation({gpu_id, "slurm", g.lease->user, g.lease->slurm_job, ""}, p->t, &p->allocations);
  }
  if (g.sample.health != node::GpuHealth::kOk) return Status::OK();
  p->readable_gpus.insert(gpu_id);
  Result<std::map<int, int64_t>> instance_ids = WriteMigInstances(g, p);
  if (!instance_ids.ok()) return instance_ids.status();
  for (const node::ProcessView& process : g.processes) {
    int64_t device_id = gpu_id;
    if (process.process.gpu_instance_id) {
      if (auto it = instance_ids.value().find(*process.process.gpu_instance_id);
          it != instance_ids.value().end())
        device_id = it->second;
    }
    if (Status s = WriteProcessTick(g, process, device_id, p); !s.ok()) return s;
  }
  return Status::OK();
}

void StoreWriter::NoteGpuEvents(const node::GpuView& g, int64_t gpu_id, PendingTick* p) {
  GpuState now{g.sample.health, ThrottleBits(g.sample), g.xid_count, g.backfill_preemptions,
               g.xid_count_by_code};
  p->states[g.info.uuid] = now;
  auto before = previous_.find(g.info.uuid);
  GpuState was = before != previous_.end() ? before->second : GpuState{};
  if (now.health != was.health) {
    const char* kind = now.health == node::GpuHealth::kOk     ? "gpu_recovered"
                       : now.health == node::GpuHealth::kLost ? "gpu_lost"
                                                              : "gpu_unreadable";
    Event(p, gpu_id, kind,
          fmt::format("gpu {}: {}{}", g.info.index, node::GpuHealthName(now.health),
                      g.sample.error.empty() ? "" : ": " + g.sample.error));
  }
  if (now.throttle_reasons != was.throttle_reasons) {
    if (was.throttle_reasons != 0) Event(p, gpu_id, "throttle_end", ReasonsText(was.throttle_reasons));
    if (now.throttle_reasons != 0) Event(p, gpu_id, "throttle_start", ReasonsText(now.throttle_reasons));
  }
  if (now.xid_count > was.xid_count && g.last_xid) {
    // One event per Xid, by its code (several may come in one tick): what
    // a restarted agent counts again from (QueryXidsSince).
    int64_t told = 0;
    for (const auto& [code, count] : now.xid_count_by_code) {
      auto seen = was.xid_count_by_code.find(code);
      for (int64_t n = seen != was.xid_count_by_code.end() ? seen->second : 0; n < count; ++n, ++told)
        Event(p, gpu_id, "xid", XidEventDetail(code, now.xid_count));
    }
    if (told == 0) Event(p, gpu_id, "xid", XidEventDetail(g.last_xid->xid, now.xid_count));
  }
  for (int64_t n = was.backfill_preemptions + 1; n <= now.backfill_preemptions; ++n) {
    Event(p, gpu_id, "backfill_preempted",
          fmt::format(
              "gpu {}: a backfill lease yields the GPU to a waiting request ({} since the agent started)",
              g.info.index, n));
  }
}

Result<std::map<int, int64_t>> StoreWriter::WriteMigInstances(const node::GpuView& g, PendingTick* p) {
  // MIG instances: devices of their own, their processes' sessions theirs.
  std::map<int, int64_t> instance_ids;  // GPU instance id -> store id.
  for (const node::MigInstance& m : g.sample.mig_instances) {
    node::GpuInfo info;
    info.index = g.info.index;
    info.uuid = m.uuid;
    info.name = fmt::format("{} MIG {}", g.info.name, m.profile);
    info.memory_total_bytes = m.memory_total_bytes;
    Result<int64_t> mig_id = GpuId(info, p->t, &p->added_gpus, true);
    if (!mig_id.ok()) return mig_id.status();
    instance_ids[m.gpu_instance_id] = mig_id.value();
    p->readable_gpus.insert(mig_id.value());
    p->tick.gpus.push_back(GpuTick{mig_id.value(), MigValuesOf(g, m)});
    if (auto pod = g.mig_allocated_to.find(m.uuid); pod != g.mig_allocated_to.end() && p->status.ok()) {
      p->status = NoteAllocation(
          {mig_id.value(), "pod", pod->second.pod_namespace, pod->second.pod, pod->second.container}, p->t,
          &p->allocations);
    }
  }
  return instance_ids;
}

Status StoreWriter::WriteProcessTick(const node::GpuView& g, const node::ProcessView& process,
                                     int64_t device_id, PendingTick* p) {
  SessionKey key{device_id, process.process.pid, process.details.start_ticks};
  p->seen.insert(key);
  int64_t session_id = 0;
  if (auto it = sessions_.find(key); it != sessions_.end()) {
    session_id = it->second;
  } else if (auto added = p->added_sessions.find(key); added != p->added_sessions.end()) {
    session_id = added->second;
  } else {
    Result<Stmt*> insert = db_->Cached(
        "INSERT INTO process_sessions (gpu_id, pid, start_ticks, uid, user, command, container_id, pod_uid, "
        "systemd_unit, slurm_job_id, first_seen, last_seen) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
    if (!insert.ok()) return insert.status();
    const node::ProcessDetails& d = process.details;
    Status s = insert.value()
                   ->Bind(1, device_id)
                   .Bind(2, process.process.pid)
                   .Bind(3, d.start_ticks)
                   .Bind(4, d.uid)
                   .Bind(5, d.user)
                   .Bind(6, d.command)
                   .Bind(7, d.cgroup.container_id)
                   .Bind(8, d.cgroup.pod_uid)
                   .Bind(9, d.cgroup.systemd_unit)
                   .Bind(10, d.cgroup.slurm_job_id)
                   .Bind(11, p->t)
                   .Bind(12, p->t)
                   .Run();
    if (!s.ok()) return s;
    session_id = db_->last_insert_rowid();
    p->added_sessions[key] = session_id;
    Event(p, device_id, "process_start",
          fmt::format("pid {} ({}) on gpu {}: {}", process.process.pid, d.user, g.info.index, d.command));
  }
  p->tick.processes.push_back(ProcessTick{session_id, ProcessValuesOf(process, g)});
  return Status::OK();
}

Status StoreWriter::WriteNow(const node::NodeView& node_view) {
  if (db_ == nullptr) return Status::Unavailable("store: not open");
  Status s = WriteTick(node_view);
  ReleaseCache();
  return s;
}

void StoreWriter::ReleaseCache() {
  if (db_ == nullptr) return;
  db_->ReleaseCache();
  int64_t bytes = db_->CacheBytes();
  MutexLock lock(&mu_);
  stats_.cache_bytes = bytes;
}

Status StoreWriter::FoldAll() {
  if (db_ == nullptr) return Status::Unavailable("store: not open");
  return FoldJournalBefore(INT64_MAX);
}

}  // namespace tarmac::store
