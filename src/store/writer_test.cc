// SPDX-License-Identifier: Apache-2.0
#include "store/writer.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "store/codec.h"
#include "store/schema.h"
#include "testutil/fake_clock.h"
#include "testutil/testutil.h"

namespace tarmac::store {
namespace {

using std::chrono::seconds;
using std::chrono::system_clock;

constexpr int64_t kT0 = 1800000000;  // A minute boundary (1800000000 % 60 == 0).

// Two GPUs: GPU 0 busy at `busy_percent`, GPU 1 idle with one process
// holding 1 GiB at 0 % SM.
node::NodeView Machine(int64_t t, int busy_percent = 100) {
  node::NodeView f;
  f.hostname = "node";
  f.backend = "sim";
  f.taken_at = system_clock::from_time_t(t);
  for (int i = 0; i < 2; ++i) {
    node::GpuView g;
    g.info.index = i;
    g.info.uuid = "GPU-" + std::to_string(i);
    g.info.name = "Test GPU";
    g.sample.index = i;
    g.sample.utilization_gpu_ratio = i == 0 ? busy_percent / 100.0 : 0.0;
    g.sample.memory_used_bytes = int64_t{1} << 30;
    g.sample.power_milliwatts = i == 0 ? 300000 : 60000;
    g.sample.temperature_celsius = 50;
    g.sample.clock_event_reasons = 0;
    if (i == 1) {
      node::ProcessView p;
      p.process.pid = 4242;
      p.process.used_memory_bytes = int64_t{1} << 30;
      p.process.sm_utilization_ratio = 0.0;
      p.details.pid = 4242;
      p.details.exists = true;
      p.details.user = "alice";
      p.details.uid = 1000;
      p.details.command = "python notebook.py";
      p.details.start_ticks = 777;
      g.processes.push_back(p);
      g.sample.processes.push_back(p.process);
    }
    f.gpus.push_back(g);
  }
  return f;
}

class WriterTest : public ::testing::Test {
 protected:
  std::string Path() const { return dir_.path() + "/tarmac.db"; }
  std::unique_ptr<StoreWriter> OpenWriter() {
    StoreOptions o;
    o.path = Path();
    Result<std::unique_ptr<StoreWriter>> w = StoreWriter::Open(o, &clock_, &logger_);
    EXPECT_TRUE(w.ok()) << w.status().ToString();
    return w.ok() ? std::move(w).value() : nullptr;
  }
  // Corrupt databases moved aside (tarmac.db.corrupt-<time>).
  int FilesMovedAside() const {
    int aside = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir_.path())) {
      if (e.path().filename().string().rfind("tarmac.db.corrupt-", 0) == 0) ++aside;
    }
    return aside;
  }
  int64_t Count(const std::string& sql) {
    Result<std::unique_ptr<Db>> db = Db::Open(Path(), Db::Mode::kReadOnly);
    return db.value()->QueryInt(sql).value().value_or(-1);
  }
  testing::TempDir dir_;
  testing::FakeClock clock_{system_clock::from_time_t(kT0)};
  Logger logger_{LogLevel::kOff};
};

TEST_F(WriterTest, TicksFoldIntoPackedMinutesRollupsSessionsAndEvents) {
  std::unique_ptr<StoreWriter> w = OpenWriter();
  for (int64_t t = kT0; t < kT0 + 120; ++t) ASSERT_TRUE(w->WriteNow(Machine(t)).ok());
  ASSERT_TRUE(w->FoldAll().ok());
  EXPECT_EQ(Count("SELECT COUNT(*) FROM tick_journal"), 0);
  EXPECT_EQ(Count("SELECT COUNT(*) FROM gpu_samples"), 4);  // 2 GPUs x 2 minutes.
  EXPECT_EQ(Count("SELECT COUNT(*) FROM gpu_rollup_1m"), 4);
  EXPECT_EQ(Count("SELECT SUM(covered_seconds) FROM gpu_rollup_1m"), 240);
  EXPECT_EQ(Count("SELECT utilization_mean_permille FROM gpu_rollup_1m r JOIN gpus USING (gpu_id) "
                  "WHERE uuid = 'GPU-0' LIMIT 1"),
            1000);
  EXPECT_EQ(
      Count("SELECT SUM(idle_seconds) FROM gpu_rollup_1h JOIN gpus USING (gpu_id) WHERE uuid = 'GPU-1'"),
      120);
  EXPECT_EQ(
      Count("SELECT SUM(held_idle_seconds) FROM gpu_rollup_1h JOIN gpus USING (gpu_id) WHERE uuid = 'GPU-1'"),
      120);
  EXPECT_EQ(
      Count("SELECT SUM(idle_seconds) FROM gpu_rollup_1h JOIN gpus USING (gpu_id) WHERE uuid = 'GPU-0'"), 0);
  EXPECT_EQ(
      Count("SELECT SUM(energy_joules) FROM gpu_rollup_1h JOIN gpus USING (gpu_id) WHERE uuid = 'GPU-0'"),
      300 * 120);
  EXPECT_EQ(Count("SELECT COUNT(*) FROM process_sessions WHERE pid = 4242 AND user = 'alice'"), 1);
  EXPECT_EQ(Count("SELECT held_idle_seconds FROM process_rollup_1h"), 120);
  EXPECT_EQ(Count("SELECT last_seen - first_seen FROM process_sessions"), 119);
  EXPECT_EQ(Count("SELECT COUNT(*) FROM events WHERE kind = 'process_start'"), 1);
  // The packed minute holds every second.
  Result<std::unique_ptr<Db>> db = Db::Open(Path(), Db::Mode::kReadOnly);
  Result<Stmt> raw = db.value()->Prepare("SELECT minute, samples FROM gpu_samples ORDER BY minute LIMIT 1");
  ASSERT_TRUE(raw.value().Step().value());
  Result<Block> block = DecodeBlock(raw.value().Int(0) * 60, raw.value().Blob(1));
  ASSERT_TRUE(block.ok());
  EXPECT_EQ(block.value().times.size(), 60u);
  EXPECT_EQ(block.value().columns[kPowerDeciwatts][0], 3000);
}

TEST_F(WriterTest, ItsPageCacheDoesNotGrowWithTheHistory) {
  // SQLite keeps each page it reads, up to 2 MiB a connection: a writer
  // that kept them grew with its file for the agent's first hours.
  auto many = [](int64_t t) {  // 32 GPUs, so that the file grows fast.
    node::NodeView f = Machine(t);
    for (int i = 2; i < 32; ++i) {
      node::GpuView g = f.gpus[i % 2];
      g.info.index = g.sample.index = i;
      g.info.uuid = "GPU-" + std::to_string(i);
      f.gpus.push_back(g);
    }
    return f;
  };
  std::unique_ptr<StoreWriter> w = OpenWriter();
  ASSERT_TRUE(w->WriteNow(many(kT0)).ok());
  int64_t first = w->stats().cache_bytes;
  // Twenty minutes: every minute folded, the file many pages larger.
  for (int64_t t = kT0 + 1; t < kT0 + 1200; ++t) ASSERT_TRUE(w->WriteNow(many(t)).ok());
  EXPECT_GT(Count("PRAGMA page_count"), 30);
  EXPECT_LE(w->stats().cache_bytes, first);
}

TEST_F(WriterTest, AProcessLeavingTheGpuEndsItsSession) {
  std::unique_ptr<StoreWriter> w = OpenWriter();
  ASSERT_TRUE(w->WriteNow(Machine(kT0)).ok());
  node::NodeView gone = Machine(kT0 + 1);
  gone.gpus[1].processes.clear();
  ASSERT_TRUE(w->WriteNow(gone).ok());
  EXPECT_EQ(Count("SELECT COUNT(*) FROM events WHERE kind = 'process_end'"), 1);
}

// Regression: a wall clock moved back must not write samples twice or out
// of order.
TEST_F(WriterTest, WallClockMovedBackWritesNoDuplicateOrReorderedSamples) {
  std::unique_ptr<StoreWriter> w = OpenWriter();
  for (int64_t t = kT0; t <= kT0 + 10; ++t) ASSERT_TRUE(w->WriteNow(Machine(t)).ok());
  for (int64_t t = kT0 - 20; t <= kT0 + 5; ++t) ASSERT_TRUE(w->WriteNow(Machine(t)).ok());  // Moved back.
  for (int64_t t = kT0 + 11; t <= kT0 + 15; ++t) ASSERT_TRUE(w->WriteNow(Machine(t)).ok());
  ASSERT_TRUE(w->FoldAll().ok());
  EXPECT_EQ(w->stats().ticks_skipped, 26);
  EXPECT_EQ(Count("SELECT COUNT(*) FROM events WHERE kind = 'clock_moved_back'"), 1);
  Result<std::unique_ptr<Db>> db = Db::Open(Path(), Db::Mode::kReadOnly);
  Result<Stmt> raw = db.value()->Prepare("SELECT minute, samples FROM gpu_samples ORDER BY minute");
  std::vector<int64_t> times;
  while (raw.value().Step().value()) {
    Result<Block> b = DecodeBlock(raw.value().Int(0) * 60, raw.value().Blob(1));
    ASSERT_TRUE(b.ok());
    times.insert(times.end(), b.value().times.begin(), b.value().times.end());
  }
  // Two GPUs, each 16 distinct seconds in order.
  EXPECT_EQ(times.size(), 32u);
  // Each sample stands for 1 s, the last of each GPU for up to 2 s (twice
  // the interval) as nothing follows it.
  EXPECT_EQ(Count("SELECT SUM(covered_seconds) FROM gpu_rollup_1m"), 2 * (15 + 2));
}

TEST_F(WriterTest, AfterACrashTheJournalIsFoldedWithTheTicksThatFollow) {
  {
    std::unique_ptr<StoreWriter> w = OpenWriter();
    for (int64_t t = kT0; t < kT0 + 30; ++t) ASSERT_TRUE(w->WriteNow(Machine(t)).ok());
  }  // No fold: as if killed.
  EXPECT_EQ(Count("SELECT COUNT(*) FROM tick_journal"), 30);
  std::unique_ptr<StoreWriter> w = OpenWriter();
  ASSERT_TRUE(w->WriteNow(Machine(kT0 + 20)).ok());  // Already stored: skipped.
  ASSERT_TRUE(w->WriteNow(Machine(kT0 + 61)).ok());  // The next minute folds the first.
  EXPECT_EQ(Count("SELECT covered_seconds FROM gpu_rollup_1m WHERE minute = 30000000 LIMIT 1"), 29 + 2);
  EXPECT_EQ(Count("SELECT COUNT(*) FROM process_sessions"), 1);  // The session continued.
}

TEST_F(WriterTest, ADatabaseFromANewerTarmacIsRefusedAndLeftAlone) {
  {
    Result<std::unique_ptr<Db>> db = OpenForWriting(Path());
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE(db.value()->Exec("PRAGMA user_version = 99").ok());
  }
  StoreOptions o;
  o.path = Path();
  Result<std::unique_ptr<StoreWriter>> w = StoreWriter::Open(o, &clock_, &logger_);
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(w.status().message().find("newer tarmac (schema 99"), std::string::npos) << w.status().message();
  EXPECT_EQ(Count("PRAGMA user_version"), 99);
  EXPECT_EQ(OpenForReading(Path()).status().code(), StatusCode::kFailedPrecondition);
}

TEST_F(WriterTest, ACorruptDatabaseIsMovedAsideAndANewOneStarted) {
  std::ofstream(Path()) << std::string(8192, 'x');
  std::unique_ptr<StoreWriter> w = OpenWriter();
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(FilesMovedAside(), 1);
  EXPECT_EQ(Count("SELECT COUNT(*) FROM events WHERE kind = 'store_recovered'"), 1);
  ASSERT_TRUE(w->WriteNow(Machine(kT0)).ok());
}

TEST_F(WriterTest, RetentionDropsRawMinutesOlderThanTheirTier) {
  StoreOptions o;
  o.path = Path();
  o.retention.raw = std::chrono::hours(24);
  std::unique_ptr<StoreWriter> w = std::move(StoreWriter::Open(o, &clock_, &logger_)).value();
  for (int64_t t = kT0; t < kT0 + 5; ++t) ASSERT_TRUE(w->WriteNow(Machine(t)).ok());
  int64_t later = kT0 + 2 * 86400;
  ASSERT_TRUE(w->WriteNow(Machine(later)).ok());  // Folds the old minute, then enforces retention.
  ASSERT_TRUE(w->WriteNow(Machine(later + 601)).ok());
  EXPECT_EQ(Count("SELECT COUNT(*) FROM gpu_samples WHERE minute < " + std::to_string(later / 60)), 0);
  EXPECT_EQ(Count("SELECT COUNT(*) FROM gpu_rollup_1m WHERE minute = " + std::to_string(kT0 / 60)), 2);
}

// Defect: a clean stop folded the minute in progress, so a restart a second
// later skipped the rest of that minute and warned that the clock had moved
// back. Now a restart loses only the time the agent was down. Defect: the
// last sample before a clean stop stood for up to two seconds after it,
// time nobody saw (a node's own report read more of its life than its
// counters); now the stop's mark ends it.
TEST_F(WriterTest, ACleanRestartLosesNothingButTheTimeTheAgentWasDown) {
  {
    std::unique_ptr<StoreWriter> w = OpenWriter();
    w->Start();
    for (int64_t t = kT0; t <= kT0 + 5; ++t) ASSERT_TRUE(w->WriteNow(Machine(t)).ok());
    w->Stop();
  }
  // Reports see the stopped agent's last minute: it was folded at the stop.
  // Its last sample stands for the second up to the stop's mark, not for
  // time after the stop, which nobody saw.
  EXPECT_EQ(Count("SELECT covered_seconds FROM gpu_rollup_1h JOIN gpus USING (gpu_id) WHERE uuid = 'GPU-0'"),
            6);
  EXPECT_EQ(Count("SELECT MAX(t) FROM tick_journal"), kT0 + 6);
  clock_.Advance(seconds(7));
  std::unique_ptr<StoreWriter> w = OpenWriter();
  for (int64_t t = kT0 + 7; t < kT0 + 61; ++t) ASSERT_TRUE(w->WriteNow(Machine(t)).ok());
  EXPECT_EQ(w->stats().ticks_skipped, 0);
  EXPECT_EQ(Count("SELECT COUNT(*) FROM events WHERE kind = 'clock_moved_back'"), 0);
  // The minute holds both runs' samples: 6 + 53 seconds, not the 1 s down
  // (folded whole again, the last sample before the stop still ends there).
  EXPECT_EQ(Count("SELECT COUNT(*) FROM tick_journal WHERE t >= 1800000060"), 1);
  Result<std::unique_ptr<Db>> db = Db::Open(Path(), Db::Mode::kReadOnly);
  Result<std::optional<int64_t>> covered =
      db.value()->QueryInt("SELECT covered_seconds FROM gpu_rollup_1m WHERE minute = 30000000 LIMIT 1");
  ASSERT_TRUE(covered.ok());
  EXPECT_EQ(covered.value().value_or(0), 59);
  // Folded twice (at the stop, then whole), counted once in the hour.
  EXPECT_EQ(Count("SELECT covered_seconds FROM gpu_rollup_1h JOIN gpus USING (gpu_id) WHERE uuid = 'GPU-0'"),
            59);
  EXPECT_EQ(Count("SELECT seen_seconds FROM process_rollup_1h"), 59);
  EXPECT_EQ(Count("SELECT milliseconds FROM charge_rollup_1h"), 59 * 1000);  // alice's, once.
  EXPECT_EQ(Count("SELECT COUNT(*) FROM meta WHERE key = 'journal_folded_through'"), 0);
}

// Defect: a lost GPU counted as 100 % busy, and got a second row.
TEST_F(WriterTest, TimeAGpuCouldNotBeReadIsUnknownNeitherBusyNorIdle) {
  std::unique_ptr<StoreWriter> w = OpenWriter();
  for (int64_t t = kT0; t < kT0 + 60; ++t) {
    node::NodeView f = Machine(t);
    if (t >= kT0 + 20) {  // GPU 0 is lost: no readings, and no identity.
      f.gpus[0].sample = node::GpuSample();
      f.gpus[0].sample.health = node::GpuHealth::kLost;
      f.gpus[0].info.uuid.clear();
      f.gpus[0].processes.clear();
    }
    ASSERT_TRUE(w->WriteNow(f).ok());
  }
  ASSERT_TRUE(w->FoldAll().ok());
  EXPECT_EQ(Count("SELECT COUNT(*) FROM gpus"), 2) << "the lost GPU keeps its row";
  EXPECT_EQ(Count("SELECT unknown_seconds FROM gpu_rollup_1h JOIN gpus USING (gpu_id) WHERE uuid = 'GPU-0'"),
            40);
  EXPECT_EQ(Count("SELECT idle_seconds FROM gpu_rollup_1h JOIN gpus USING (gpu_id) WHERE uuid = 'GPU-0'"), 0);
  EXPECT_EQ(Count("SELECT covered_seconds FROM gpu_rollup_1h JOIN gpus USING (gpu_id) WHERE uuid = 'GPU-0'"),
            60);
  // Its mean utilization is over the 20 s it was read (100 %), not diluted.
  EXPECT_EQ(Count("SELECT CAST(utilization_percent AS INTEGER) FROM gpu_hours WHERE uuid = 'GPU-0'"), 100);
}

TEST_F(WriterTest, BackfillLeaseTimeAndPreemptionsAreKeptPerGpu) {
  std::unique_ptr<StoreWriter> w = OpenWriter();
  for (int64_t t = kT0; t < kT0 + 120; ++t) {
    node::NodeView f = Machine(t);
    // GPU 1 is backfilled from 10 s to 70 s, preempted at 60 s; again from
    // 90 s, preempted at 100 s (by then the GPU cannot be read: the lease
    // time still counts); GPU 0 holds a normal lease throughout.
    f.gpus[0].lease = node::GpuLease{1, "alice", node::LeaseKind::kRun, false};
    bool first = t >= kT0 + 10 && t < kT0 + 70;
    bool second = t >= kT0 + 90 && t < kT0 + 105;
    if (first || second) {
      f.gpus[1].lease = node::GpuLease{first ? 2 : 3, "batch", node::LeaseKind::kBackfill,
                                       (t >= kT0 + 60 && t < kT0 + 70) || t >= kT0 + 100};
    }
    f.gpus[1].backfill_preemptions = (t >= kT0 + 60 ? 1 : 0) + (t >= kT0 + 100 ? 1 : 0);
    if (t >= kT0 + 100) f.gpus[1].sample.health = node::GpuHealth::kUnresponsive;
    ASSERT_TRUE(w->WriteNow(f).ok());
  }
  ASSERT_TRUE(w->FoldAll().ok());
  EXPECT_EQ(Count("SELECT backfill_seconds FROM gpu_rollup_1h JOIN gpus USING (gpu_id) WHERE uuid = 'GPU-1'"),
            60 + 15);
  EXPECT_EQ(Count("SELECT backfill_seconds FROM gpu_rollup_1h JOIN gpus USING (gpu_id) WHERE uuid = 'GPU-0'"),
            0);
  EXPECT_EQ(
      Count("SELECT SUM(backfill_seconds) FROM gpu_rollup_1m JOIN gpus USING (gpu_id) WHERE uuid = 'GPU-1'"),
      75);
  EXPECT_EQ(Count("SELECT backfill_seconds FROM gpu_hours WHERE uuid = 'GPU-1'"), 75);
  EXPECT_EQ(
      Count("SELECT COUNT(*) FROM events e JOIN gpus g USING (gpu_id) WHERE e.kind = 'backfill_preempted' "
            "AND g.uuid = 'GPU-1'"),
      2);
  EXPECT_EQ(Count("SELECT MIN(t) - 1800000000 FROM events WHERE kind = 'backfill_preempted'"), 60);
  EXPECT_EQ(
      Count("SELECT COUNT(*) FROM events WHERE kind = 'backfill_preempted' AND detail LIKE '%(2 since%'"), 1);
  // Whom the time is charged to: each lease's user, whether or not the GPU
  // could be read; outside the leases, alice's idle process on GPU 1.
  auto charged = [&](const std::string& user, const std::string& held_by, const std::string& state) {
    return Count(
        fmt::format("SELECT SUM(seconds) FROM user_hours WHERE user = '{}' AND held_by = '{}' AND "
                    "state = '{}'",
                    user, held_by, state));
  };
  EXPECT_EQ(charged("alice", "lease", "busy"), 120);
  EXPECT_EQ(charged("batch", "lease", "idle"), 60 + 10);
  EXPECT_EQ(charged("batch", "lease", "unknown"), 5);
  EXPECT_EQ(charged("alice", "process", "idle"), 10 + 20);
  EXPECT_EQ(charged("alice", "process", "unknown"), 15);
}

// A journal row written before the backfill column existed (the first
// format: the GPU count first, eight GPU columns) is folded after an
// upgrade, with no backfill time.
TEST_F(WriterTest, JournalRowsOfTheFirstFormatAreFoldedAfterAnUpgrade) {
  { std::unique_ptr<StoreWriter> w = OpenWriter(); }
  {
    Result<std::unique_ptr<Db>> db = Db::Open(Path(), Db::Mode::kReadWriteCreate);
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE(db.value()
                    ->Exec("INSERT INTO gpus (gpu_id, uuid, gpu_index, name, first_seen, last_seen) "
                           "VALUES (1, 'GPU-0', 0, 'Test GPU', 1800000000, 1800000000)")
                    .ok());
    for (int64_t t = kT0; t < kT0 + 30; ++t) {
      std::string row;
      PutVarint(1, &row);  // One GPU.
      PutVarint(1, &row);  // gpu_id 1.
      for (int64_t v : {50, 10, 1024, 3000, 50, 1500, 0, 0}) PutVarint(ZigZag(v) + 1, &row);
      PutVarint(0, &row);  // No processes.
      Result<Stmt> insert = db.value()->Prepare("INSERT INTO tick_journal (t, payload) VALUES (?, ?)");
      ASSERT_TRUE(insert.ok());
      ASSERT_TRUE(insert.value().Bind(1, t).BindBlob(2, row).Run().ok());
    }
  }
  std::unique_ptr<StoreWriter> w = OpenWriter();
  ASSERT_TRUE(w->FoldAll().ok());
  // 29 one-second samples, the last standing for at most the 2 s gap.
  EXPECT_EQ(Count("SELECT covered_seconds FROM gpu_rollup_1h WHERE gpu_id = 1"), 29 + 2);
  EXPECT_EQ(Count("SELECT utilization_sum_permille_seconds FROM gpu_rollup_1h WHERE gpu_id = 1"), 500 * 31);
  EXPECT_EQ(Count("SELECT power_sum_deciwatt_seconds FROM gpu_rollup_1h WHERE gpu_id = 1"), 3000 * 31);
  EXPECT_EQ(Count("SELECT backfill_seconds FROM gpu_rollup_1h WHERE gpu_id = 1"), 0);
  EXPECT_EQ(Count("SELECT COUNT(*) FROM tick_journal"), 0);
}

// A history written by an earlier schema (2) is migrated in place: its
// rows are kept, with no backfill time and no charges.
TEST_F(WriterTest, ASchemaTwoHistoryIsMigratedKeepingItsRows) {
  {
    std::unique_ptr<StoreWriter> w = OpenWriter();
    for (int64_t t = kT0; t < kT0 + 60; ++t) ASSERT_TRUE(w->WriteNow(Machine(t)).ok());
    ASSERT_TRUE(w->FoldAll().ok());
  }
  {  // Back to schema 2, as the previous tarmac left it.
    Result<std::unique_ptr<Db>> db = Db::Open(Path(), Db::Mode::kReadWriteCreate);
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE(db.value()
                    ->Exec("DROP VIEW user_hours; DROP TABLE charge_rollup_1h; DROP TABLE users; "
                           "DROP TABLE allocations; "
                           "DROP VIEW gpu_hours; ALTER TABLE gpu_rollup_1m DROP COLUMN backfill_seconds; "
                           "ALTER TABLE gpu_rollup_1h DROP COLUMN backfill_seconds; "
                           "CREATE VIEW gpu_hours AS SELECT hour FROM gpu_rollup_1h; PRAGMA user_version = 2")
                    .ok());
  }
  EXPECT_EQ(Count("PRAGMA user_version"), 2);
  std::unique_ptr<StoreWriter> w = OpenWriter();
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(Count("PRAGMA user_version"), kSchemaVersion);
  EXPECT_EQ(Count("SELECT covered_seconds FROM gpu_rollup_1h JOIN gpus USING (gpu_id) WHERE uuid = 'GPU-0'"),
            60);
  EXPECT_EQ(Count("SELECT backfill_seconds FROM gpu_hours WHERE uuid = 'GPU-0'"), 0);
  EXPECT_EQ(Count("SELECT COUNT(*) FROM user_hours"), 0);
}

// The kubelet's allocations: one row per stretch, continued across a
// restart of the writer, a new one after a gap.
TEST_F(WriterTest, AllocationsOfPodsAndSlurmJobsAreKeptAsStretchesAcrossARestart) {
  auto allocated = [](int64_t t) {
    node::NodeView f = Machine(t);
    f.gpus[1].allocated_to = node::KubernetesNames{"notebook-0", "research", "lab"};
    f.gpus[0].lease = node::GpuLease{3, "erin", node::LeaseKind::kSlurm, false, "4242"};  // A Slurm job's.
    return f;
  };
  {
    std::unique_ptr<StoreWriter> w = OpenWriter();
    for (int64_t t = kT0; t < kT0 + 20; ++t) ASSERT_TRUE(w->WriteNow(allocated(t)).ok());
  }
  {
    std::unique_ptr<StoreWriter> w = OpenWriter();
    for (int64_t t = kT0 + 20; t < kT0 + 40; ++t) ASSERT_TRUE(w->WriteNow(allocated(t)).ok());
    for (int64_t t = kT0 + 40; t < kT0 + 50; ++t) ASSERT_TRUE(w->WriteNow(Machine(t)).ok());  // The pod went.
    for (int64_t t = kT0 + 50; t < kT0 + 60; ++t)
      ASSERT_TRUE(w->WriteNow(allocated(t)).ok());  // And came back.
  }
  EXPECT_EQ(Count("SELECT COUNT(*) FROM allocations WHERE kind = 'pod'"), 2);
  EXPECT_EQ(
      Count("SELECT last_seen - first_seen FROM allocations WHERE kind = 'pod' ORDER BY first_seen LIMIT 1"),
      39);
  EXPECT_EQ(Count("SELECT COUNT(*) FROM allocations a JOIN gpus g USING (gpu_id) WHERE g.uuid = 'GPU-1' AND "
                  "a.kind = 'pod' AND a.scope = 'research' AND a.name = 'notebook-0' AND a.detail = 'lab'"),
            2);
  EXPECT_EQ(Count("SELECT COUNT(*) FROM events WHERE kind = 'pod_allocated'"), 2);
  EXPECT_EQ(Count("SELECT COUNT(*) FROM allocations a JOIN gpus g USING (gpu_id) WHERE g.uuid = 'GPU-0' AND "
                  "a.kind = 'slurm' AND a.scope = 'erin' AND a.name = '4242'"),
            2);
  EXPECT_EQ(Count("SELECT COUNT(*) FROM events WHERE kind = 'slurm_job_allocated'"), 2);
}

TEST_F(WriterTest, CorruptionFoundWhileRunningMovesTheFileAsideAndIsReported) {
  StoreOptions o;
  o.path = Path();
  o.integrity_check_interval = seconds(1);
  Result<std::unique_ptr<StoreWriter>> opened = StoreWriter::Open(o, &clock_, &logger_);
  ASSERT_TRUE(opened.ok());
  std::unique_ptr<StoreWriter> w = std::move(opened).value();
  for (int64_t t = kT0; t < kT0 + 130; ++t) ASSERT_TRUE(w->WriteNow(Machine(t)).ok());
  ASSERT_TRUE(w->FoldAll().ok());
  {
    // Garbage over the pages after the first (the schema page stays).
    Result<std::unique_ptr<Db>> db = Db::Open(Path(), Db::Mode::kReadWriteCreate);
    ASSERT_TRUE(db.value()->Exec("PRAGMA wal_checkpoint(TRUNCATE)").ok());
  }
  {
    std::fstream f(Path(), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(4096);
    std::string junk(4096 * 6, '\x5a');
    f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
  }
  w->Start();
  clock_.Advance(seconds(200));
  auto snapshot = std::make_shared<node::Snapshot>();
  snapshot->node_view = Machine(kT0 + 200);
  w->Submit(snapshot);
  for (int i = 0; i < 500 && w->Problem().empty(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_NE(w->Problem().find("found corrupt"), std::string::npos) << w->Problem();
  w->Stop();
  EXPECT_EQ(FilesMovedAside(), 1);
  EXPECT_EQ(Count("SELECT COUNT(*) FROM events WHERE kind = 'store_recovered'"), 1);
}

TEST_F(WriterTest, AFileDeletedUnderTheWriterIsNoticedAtTheNextTickAndSaid) {
  std::unique_ptr<StoreWriter> w = OpenWriter();
  ASSERT_TRUE(w->WriteNow(Machine(kT0)).ok());
  for (const char* suffix : {"", "-wal", "-shm"}) ::unlink((Path() + suffix).c_str());
  ASSERT_TRUE(w->WriteNow(Machine(kT0 + 1)).ok());
  EXPECT_NE(w->Problem().find("was deleted under the agent"), std::string::npos) << w->Problem();
  // History goes on in a new file at the path, which says what happened.
  EXPECT_EQ(Count("SELECT COUNT(*) FROM events WHERE kind = 'store_lost'"), 1);
  EXPECT_EQ(Count("SELECT COUNT(*) FROM tick_journal"), 1);
}

}  // namespace
}  // namespace tarmac::store
