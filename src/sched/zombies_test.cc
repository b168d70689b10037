// SPDX-License-Identifier: Apache-2.0
#include "sched/zombies.h"

#include <gtest/gtest.h>

#include "testutil/process_views.h"
#include "testutil/sched_constants.h"

namespace tarmac::sched {
namespace {

using testing::Process;

using std::chrono::minutes;
using std::chrono::seconds;
using TimePoint = std::chrono::steady_clock::time_point;

const TimePoint kZombieT0 = TimePoint{} + std::chrono::hours(10);

node::NodeView Machine(std::vector<node::ProcessView> processes) {
  node::NodeView f;
  node::GpuView g;
  g.info.index = 0;
  g.info.uuid = "GPU-0";
  g.processes = std::move(processes);
  f.gpus.push_back(g);
  return f;
}

ZombiePolicy Policy() {
  ZombiePolicy p;
  p.min_memory_bytes = testing::kBytesPerGiB;
  p.idle_for = minutes(10);
  return p;
}

TEST(ZombieTrackerTest, MemoryHeldAtZeroSmLongEnoughIsAZombieWithEvidence) {
  ZombieTracker tracker(Policy());
  tracker.Observe(
      Machine({Process(10, 20 * testing::kBytesPerGiB, 0), Process(11, 20 * testing::kBytesPerGiB, 0.7)}),
      kZombieT0);
  EXPECT_TRUE(tracker.Zombies().empty());  // Not idle long enough yet.
  tracker.Observe(
      Machine({Process(10, 20 * testing::kBytesPerGiB, 0), Process(11, 20 * testing::kBytesPerGiB, 0.7)}),
      kZombieT0 + minutes(10));
  std::vector<ZombieEvidence> z = tracker.Zombies();
  ASSERT_EQ(z.size(), 1u);  // The busy one is not.
  EXPECT_EQ(z[0].pid, 10);
  EXPECT_EQ(z[0].gpu_uuid, "GPU-0");
  EXPECT_EQ(z[0].user, "alice");
  EXPECT_EQ(z[0].memory_bytes, 20 * testing::kBytesPerGiB);
  EXPECT_EQ(z[0].idle_for, minutes(10));
  EXPECT_FALSE(z[0].is_orphaned);
  EXPECT_FALSE(z[0].lease_id.has_value());
  EXPECT_NE(z[0].why.find("20.0 GiB at 0 % SM for 600 s, outside any lease"), std::string::npos) << z[0].why;
}

TEST(ZombieTrackerTest, AnyComputeResetsTheClock) {
  ZombieTracker tracker(Policy());
  tracker.Observe(Machine({Process(10, 20 * testing::kBytesPerGiB, 0)}), kZombieT0);
  tracker.Observe(Machine({Process(10, 20 * testing::kBytesPerGiB, 0.01)}), kZombieT0 + minutes(6));
  tracker.Observe(Machine({Process(10, 20 * testing::kBytesPerGiB, 0)}), kZombieT0 + minutes(12));
  EXPECT_TRUE(tracker.Zombies().empty());
  tracker.Observe(Machine({Process(10, 20 * testing::kBytesPerGiB, 0)}), kZombieT0 + minutes(22));
  EXPECT_EQ(tracker.Zombies().size(), 1u);
}

TEST(ZombieTrackerTest, AReusedPidStartsAfresh) {
  ZombieTracker tracker(Policy());
  tracker.Observe(Machine({Process(10, 20 * testing::kBytesPerGiB, 0, 1001, "python", 4000, /*start=*/100)}),
                  kZombieT0);
  tracker.Observe(Machine({Process(10, 20 * testing::kBytesPerGiB, 0, 1001, "python", 4000, /*start=*/900)}),
                  kZombieT0 + minutes(15));
  EXPECT_TRUE(tracker.Zombies().empty());  // Another process behind the same PID.
}

TEST(ZombieTrackerTest, SmallHoldersAllowlistedAndSystemProcessesAreLeftAlone) {
  ZombieTracker tracker(Policy());
  std::vector<node::ProcessView> procs = {
      Process(10, testing::kBytesPerGiB / 2, 0), Process(11, 8 * testing::kBytesPerGiB, 0, 1001, "ollama"),
      Process(12, 8 * testing::kBytesPerGiB, 0, 0, "python"),
      Process(13, 8 * testing::kBytesPerGiB, 0, 1001, "python", /*parent=*/1)};
  procs[0].process.sm_utilization_ratio.reset();
  tracker.Observe(Machine(procs), kZombieT0);
  tracker.Observe(Machine(procs), kZombieT0 + minutes(30));
  std::vector<ZombieEvidence> z = tracker.Zombies();
  ASSERT_EQ(z.size(), 1u);
  EXPECT_EQ(z[0].pid, 13);
  EXPECT_TRUE(z[0].is_orphaned);
  EXPECT_NE(z[0].why.find("orphaned"), std::string::npos);

  ZombiePolicy with_system = Policy();
  with_system.includes_system_users = true;
  ZombieTracker all(with_system);
  all.Observe(Machine(procs), kZombieT0);
  all.Observe(Machine(procs), kZombieT0 + minutes(30));
  EXPECT_EQ(all.Zombies().size(), 2u);  // Root's too, biggest first.
}

TEST(ZombieTrackerTest, GoneProcessesAreForgotten) {
  ZombieTracker tracker(Policy());
  tracker.Observe(Machine({Process(10, 20 * testing::kBytesPerGiB, 0)}), kZombieT0);
  tracker.Observe(Machine({}), kZombieT0 + minutes(5));
  tracker.Observe(Machine({Process(10, 20 * testing::kBytesPerGiB, 0)}), kZombieT0 + minutes(12));
  EXPECT_TRUE(tracker.Zombies().empty());
}

// Under MIG there is no per-process SM figure: a process holds memory idle
// when its instance's engine (GPM) shows nothing; a busy instance next to
// it changes nothing, and without GPM nothing is judged.
TEST(ZombieTrackerTest, UnderMigTheInstancesEngineDecides) {
  auto in_instance = [](int64_t pid, int gi) {
    node::ProcessView p = Process(pid, 4 * testing::kBytesPerGiB, 0);
    p.process.sm_utilization_ratio.reset();
    p.process.gpu_instance_id = gi;
    return p;
  };
  node::NodeView f = Machine({in_instance(10, 1), in_instance(11, 2), in_instance(12, 3)});
  for (int gi : {1, 2}) {
    node::MigInstance m;
    m.uuid = "MIG-" + std::to_string(gi);
    m.gpu_instance_id = gi;
    m.graphics_engine_active_ratio = gi == 1 ? 0.0 : 0.8;
    f.gpus[0].sample.mig_instances.push_back(m);
  }
  node::MigInstance without_gpm;
  without_gpm.uuid = "MIG-3";
  without_gpm.gpu_instance_id = 3;
  f.gpus[0].sample.mig_instances.push_back(without_gpm);
  ZombieTracker tracker(Policy());
  tracker.Observe(f, kZombieT0);
  tracker.Observe(f, kZombieT0 + minutes(10));
  std::vector<ZombieEvidence> z = tracker.Zombies();
  ASSERT_EQ(z.size(), 1u);
  EXPECT_EQ(z[0].pid, 10);
  // A lease on the instance (not the GPU) keeps it out.
  ZombieTracker leased(Policy());
  auto lease_of = [](const node::GpuView&, const node::ProcessView& p) -> std::optional<int64_t> {
    return p.process.gpu_instance_id == 1 ? std::optional<int64_t>(7) : std::nullopt;
  };
  leased.Observe(f, kZombieT0, lease_of);
  leased.Observe(f, kZombieT0 + minutes(10), lease_of);
  EXPECT_TRUE(leased.Zombies().empty());
}

}  // namespace
}  // namespace tarmac::sched
