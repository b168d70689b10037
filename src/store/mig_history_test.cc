// SPDX-License-Identifier: Apache-2.0
//
// MIG instances in the history: each a device of its own (by its MIG UUID,
// at its GPU's index), its engine activity as utilization, its processes'
// sessions its own, and how long it has run nothing (QueryMigInstanceUse).
#include <gtest/gtest.h>

#include "store/sqlite_db.h"
#include "store/usage_query.h"
#include "store/writer.h"
#include "testutil/fake_clock.h"
#include "testutil/mig_views.h"
#include "testutil/testutil.h"

namespace tarmac::store {
namespace {

using std::chrono::system_clock;

constexpr int64_t kMigT0 = 1800000000;

// GPU 0 in MIG mode: instance 1 (3g.40gb) busy with pid 4242 while
// `with_process`, instance 2 (1g.10gb) empty.
node::NodeView Split(int64_t t, bool with_process = true) {
  node::NodeView f;
  f.hostname = "node";
  f.taken_at = system_clock::from_time_t(t);
  node::GpuView g;
  g.info.index = 0;
  g.info.uuid = "GPU-0";
  g.info.name = "NVIDIA H100 80GB HBM3";
  g.info.is_mig_enabled = true;
  g.sample.memory_used_bytes = int64_t{5} << 30;
  g.sample.has_mig_instances = true;
  g.sample.mig_instances = {testing::MigView(1, "3g.40gb", with_process ? 0.8 : 0.0, with_process ? 5 : 0),
                            testing::MigView(2, "1g.10gb")};
  if (with_process) {
    node::ProcessView p = testing::InMig(4242, 1, 5);
    p.details.start_ticks = 7;
    g.processes.push_back(p);
  }
  f.gpus.push_back(g);
  return f;
}

TEST(MigHistoryTest, EachInstanceIsADeviceWithItsActivityAndSessions) {
  testing::TempDir dir;
  testing::FakeClock clock{system_clock::from_time_t(kMigT0)};
  Logger logger{LogLevel::kOff};
  StoreOptions o;
  o.path = dir.path() + "/tarmac.db";
  std::unique_ptr<StoreWriter> w = std::move(StoreWriter::Open(o, &clock, &logger)).value();
  for (int64_t t = kMigT0; t < kMigT0 + 120; ++t) ASSERT_TRUE(w->WriteNow(Split(t, t < kMigT0 + 60)).ok());
  ASSERT_TRUE(w->FoldAll().ok());
  std::unique_ptr<Db> db = std::move(Db::Open(o.path, Db::Mode::kReadOnly)).value();
  auto count = [&](const std::string& sql) { return db->QueryInt(sql).value().value_or(-1); };
  EXPECT_EQ(count("SELECT COUNT(*) FROM gpus"), 3);
  EXPECT_EQ(count("SELECT gpu_index FROM gpus WHERE uuid = 'MIG-2'"), 0);
  EXPECT_EQ(count("SELECT COUNT(*) FROM gpus WHERE name = 'NVIDIA H100 80GB HBM3 MIG 1g.10gb'"), 1);
  // The process's session is its instance's, not the GPU's.
  EXPECT_EQ(
      count("SELECT COUNT(*) FROM process_sessions s JOIN gpus g USING (gpu_id) WHERE g.uuid = 'MIG-1'"), 1);
  EXPECT_EQ(
      count("SELECT COUNT(*) FROM process_sessions s JOIN gpus g USING (gpu_id) WHERE g.uuid = 'GPU-0'"), 0);
  // Instance 1 busy at 80 % for the first minute, idle the second.
  EXPECT_EQ(count("SELECT utilization_mean_permille FROM gpu_rollup_1m r JOIN gpus USING (gpu_id) "
                  "WHERE uuid = 'MIG-1' ORDER BY minute LIMIT 1"),
            800);
  EXPECT_EQ(
      count("SELECT SUM(idle_seconds) FROM gpu_rollup_1h JOIN gpus USING (gpu_id) WHERE uuid = 'MIG-2'"),
      120);
  Result<std::vector<MigInstanceUse>> use = QueryMigInstanceUse(db.get());
  ASSERT_TRUE(use.ok()) << use.status().ToString();
  ASSERT_EQ(use.value().size(), 2u);
  EXPECT_EQ(use.value()[0].uuid, "MIG-1");
  EXPECT_EQ(use.value()[0].last_process_seen, kMigT0 + 59);
  EXPECT_EQ(use.value()[1].uuid, "MIG-2");
  EXPECT_FALSE(use.value()[1].last_process_seen.has_value());
  EXPECT_EQ(use.value()[1].first_seen, kMigT0);
  // The throttle history is the GPUs', not their instances'.
  Result<std::vector<RecentThrottle>> throttle = QueryRecentThrottle(db.get(), kMigT0 / 60, kMigT0 / 60 + 2);
  ASSERT_TRUE(throttle.ok());
  ASSERT_EQ(throttle.value().size(), 1u);
  EXPECT_EQ(throttle.value()[0].uuid, "GPU-0");
}

}  // namespace
}  // namespace tarmac::store
