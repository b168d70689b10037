// SPDX-License-Identifier: Apache-2.0
//
// StoreWriter writes the agent's history: each tick's snapshot as one
// journal row (one transaction; a killed agent loses at most the tick in
// flight), folded per minute into packed raw samples and rollups, plus the
// events it sees between ticks (GPU health, throttling, Xid, processes
// appearing and leaving a GPU) and those the agent records (start, stop,
// config reload). It runs on a thread of its own: the sampler hands it
// snapshots and never waits.
//
// Time is the snapshot's wall-clock second. The store keeps at most one
// sample per second and only ever moves forward: when the wall clock moves
// back, ticks are skipped (and the jump recorded as an event) until it
// passes the last stored second, so history has no duplicates and no
// reordering.
//
// A failed write (disk full, I/O error, a read-only file system) pauses
// history with one logged error; live data is unaffected; every
// kRetryInterval the writer opens the database afresh (a handle opened
// read-only stays so) and retries, and logs when history resumes.
//
// Corruption (SQLITE_CORRUPT from any statement, or PRAGMA quick_check at
// start and every `integrity_check_interval`) is recorded as an event, the
// file is moved aside as at start-up, and a new history begins; Problem()
// then says so until the agent restarts, so that /health reports it. A file
// deleted or replaced under the agent is noticed at the next tick, said the
// same way, and the path opened afresh.
//
// A clean stop leaves the minute in progress in the journal, with a mark of
// the stop: the next start carries on in it, so a restart loses only the
// time the agent was down, and counts none of it (the last sample before
// the stop stands for the time up to it, not up to the next start's).
//
// Thread safety: Submit, RecordEvent and stats from any thread; Open,
// Start, Stop, WriteNow and FoldAll from one.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <tuple>

#include "common/clock.h"
#include "common/fs.h"
#include "common/log.h"
#include "common/mutex.h"
#include "node/snapshot.h"
#include "store/fold.h"
#include "store/retention.h"
#include "store/sqlite_db.h"
#include "store/store_options.h"
#include "store/tick_record.h"

namespace tarmac::store {

struct StoreStats {
  int64_t ticks_written = 0;
  int64_t ticks_skipped = 0;  // Not newer than the last stored second.
  int64_t ticks_dropped = 0;  // Queue full, or history paused.
  bool is_paused = false;
  std::string last_error;
  // The database connection's page cache after the last write: released
  // after each, so the writer's memory stays flat as history grows.
  int64_t cache_bytes = 0;
};

inline constexpr std::chrono::seconds kRetryInterval{10};
inline constexpr std::chrono::seconds kRetentionInterval{600};

class StoreWriter {
 public:
  // Opens the store. A corrupt file is moved aside (logged, and recorded as
  // the new store's first event); a file from a newer tarmac is refused
  // (kFailedPrecondition); one that cannot be written now starts paused
  // and is retried. Ticks a killed agent left in the journal are folded
  // with the ticks that follow.
  static Result<std::unique_ptr<StoreWriter>> Open(StoreOptions options, Clock* clock, Logger* logger);
  ~StoreWriter();
  StoreWriter(const StoreWriter&) = delete;
  StoreWriter& operator=(const StoreWriter&) = delete;

  void Start();
  // Writes what is queued, stops the thread, and folds the minute in
  // progress.
  void Stop();

  // Queues a snapshot (drops the oldest when the queue is full).
  void Submit(std::shared_ptr<const node::Snapshot> snapshot);
  // Queues an event: `kind` is a short snake_case word, `detail` free text.
  void RecordEvent(std::string kind, std::string detail);

  StoreStats stats() const;
  // Why history is not being written, or was found corrupt; empty when all
  // is well.
  std::string Problem() const;

  // Synchronous forms, for tools that write without the thread (bench).
  Status WriteNow(const node::NodeView& node_view);
  Status FoldAll();

 private:
  StoreWriter(StoreOptions options, std::unique_ptr<Db> db, Clock* clock, Logger* logger);
  Status Recover();
  // Opens the database afresh; a corrupt one is moved aside first.
  Status Reopen();
  // Moves a corrupt database aside, starts a new one, and says so.
  Status Quarantine(const Status& found);
  // PRAGMA quick_check: kCorruption naming what it found.
  Status QuickCheck();
  // Frees the connection's cached pages (Db::ReleaseCache) and notes what
  // is left in stats_.cache_bytes.
  void ReleaseCache() EXCLUDES(mu_);
  // Remembers which file the open database is (device and inode).
  void NoteFile();
  // A file deleted or replaced under the agent: said (log, event, Problem)
  // and a database opened afresh at the path.
  Status CheckFile();
  Status WriteTick(const node::NodeView& node_view);
  // A clean stop's mark in the journal: a tick with no GPU after the last
  // one, so that the last sample stands for no time after the stop (fold.h).
  Status WriteStopMark();
  // `tick` as the journal's row of its second.
  Status InsertJournalRow(const TickRecord& tick);
  Status WriteEvent(int64_t t, std::optional<int64_t> gpu_id, const std::string& kind,
                    const std::string& detail);
  // Folds the journal's ticks before `t` into raw blocks and rollups, and
  // deletes them; with `keep_journal`, keeps them (and notes up to where
  // they were folded, so that folding them again replaces, not adds).
  Status FoldJournalBefore(int64_t t, bool keep_journal = false);
  // Reads the journal's ticks before `before_t` into a folder per minute,
  // and those up to `folded_through` also into `folded_before`.
  Status ReadJournal(int64_t before_t, std::optional<int64_t> folded_through,
                     std::map<int64_t, MinuteFolder>* minutes,
                     std::map<int64_t, MinuteFolder>* folded_before);
  // Takes a minute folded before out of the hour rollups.
  Status SubtractFromHours(int64_t hour, const FoldedMinute& old);
  // The store id of a GPU, added when new. A MIG instance (`is_mig_instance`:
  // its MIG UUID, its GPU's index) is a device of its own in the store, so
  // history and reports see each instance; it never stands for its index.
  Result<int64_t> GpuId(const node::GpuInfo& info, int64_t t, std::map<std::string, int64_t>* added,
                        bool is_mig_instance = false);
  void Loop(std::stop_token stop);
  void Handle(const std::shared_ptr<const node::Snapshot>& snapshot,
              const std::optional<std::pair<std::string, std::string>>& event);

  // What the previous tick saw of a GPU, to tell events.
  struct GpuState {
    node::GpuHealth health = node::GpuHealth::kOk;
    uint64_t throttle_reasons = 0;
    int64_t xid_count = 0;
    int64_t backfill_preemptions = 0;
    std::map<int64_t, int64_t> xid_count_by_code;
  };
  using SessionKey = std::tuple<int64_t, int64_t, int64_t>;  // gpu_id, pid, start_ticks
  // gpu_id, kind, scope, name, detail: one allocation of one GPU (schema.cc).
  using AllocationKey = std::tuple<int64_t, std::string, std::string, std::string, std::string>;
  // What one tick writes, kept apart from the writer's state until the
  // tick's transaction commits.
  struct PendingTick {
    int64_t t = 0;
    std::map<std::string, int64_t> added_gpus;
    std::map<std::string, int64_t> added_users;
    std::map<SessionKey, int64_t> added_sessions;
    std::set<SessionKey> seen;
    std::map<AllocationKey, int64_t> allocations;  // This tick's, to allocation_id.
    std::set<int64_t> readable_gpus;
    std::map<std::string, GpuState> states;  // By UUID.
    TickRecord tick;
    Status status;  // The first failure of a write the tick goes on past.
  };
  // A tick at or before the last stored second: counted, and said once
  // when the wall clock moved back.
  Status SkipStaleTick(int64_t t);
  // The id of user `name` in table users (added to it when new).
  Result<int64_t> UserId(const std::string& name, PendingTick* p);
  // Whom the GPU's time of this tick is charged to (node/gpu_charge.h).
  Status WriteCharges(const node::GpuView& g, int64_t gpu_id, PendingTick* p);
  // Records an event of the tick (its failure kept in `p->status`).
  void Event(PendingTick* p, std::optional<int64_t> gpu_id, const char* kind, const std::string& detail);
  // One GPU's part of the tick: its readings, events, allocations, MIG
  // instances and process sessions.
  Status WriteGpuTick(const node::GpuView& g, PendingTick* p);
  // Health, throttle, Xid and preemption changes since the previous tick.
  void NoteGpuEvents(const node::GpuView& g, int64_t gpu_id, PendingTick* p);
  // The GPU's MIG instances as devices of their own: GPU instance id to store id.
  Result<std::map<int, int64_t>> WriteMigInstances(const node::GpuView& g, PendingTick* p);
  // One process's readings, in its session (started when new).
  Status WriteProcessTick(const node::GpuView& g, const node::ProcessView& process, int64_t device_id,
                          PendingTick* p);
  // Extends the allocation `key` to `t`, or starts a row for it; notes its
  // id in `seen` (the allocations of this tick).
  Status NoteAllocation(const AllocationKey& key, int64_t t, std::map<AllocationKey, int64_t>* seen);
  // At open: the allocations seen lately, which the next ticks extend.
  Status LoadOpenAllocations();

  StoreOptions options_;
  std::unique_ptr<Db> db_;
  Clock* clock_;
  Logger* logger_;
  int64_t max_gap_seconds_;

  // Writer-thread state.
  std::map<std::string, int64_t> gpu_ids_;   // By UUID.
  std::map<std::string, int64_t> user_ids_;  // By name.
  std::map<int, int64_t> gpu_by_index_;      // The GPU last seen with a UUID at each index.
  std::map<SessionKey, int64_t> sessions_;
  std::map<AllocationKey, int64_t> allocations_;  // Open ones, to allocation_id.
  std::map<std::string, GpuState> previous_;      // By UUID.
  std::optional<std::string> previous_backend_error_;
  int64_t last_t_ = 0;
  bool is_clock_behind_ = false;
  std::optional<int64_t> journal_minute_;
  int64_t next_retention_t_ = 0;
  std::optional<std::chrono::steady_clock::time_point> retry_at_;
  std::optional<std::chrono::steady_clock::time_point> next_check_at_;
  std::vector<std::pair<std::string, std::string>> pending_events_;  // Recorded while paused or before.

  mutable Mutex mu_;
  std::condition_variable_any cv_;
  std::deque<std::shared_ptr<const node::Snapshot>> queue_ GUARDED_BY(mu_);
  std::deque<std::pair<std::string, std::string>> events_ GUARDED_BY(mu_);
  StoreStats stats_ GUARDED_BY(mu_);
  std::string corruption_ GUARDED_BY(mu_);  // What was found corrupt or lost, and what became of it.
  FileId file_;                             // Writer thread: the file open at the path.
  std::jthread thread_;
};

}  // namespace tarmac::store
