// SPDX-License-Identifier: Apache-2.0
#include "sched/zombies.h"

#include <gtest/gtest.h>

#include "testutil/process_views.h"

namespace tarmac::sched {
namespace {

using testing::Process;

using std::chrono::minutes;
using std::chrono::seconds;
using TimePoint = std::chrono::steady_clock::time_point;

constexpr int64_t kGiB = int64_t{1} << 30;
const TimePoint kT0 = TimePoint{} + std::chrono::hours(10);

fleet::FleetView Fleet(std::vector<fleet::ProcessView> processes) {
  fleet::FleetView f;
  fleet::GpuView g;
  g.info.index = 0;
  g.info.uuid = "GPU-0";
  g.processes = std::move(processes);
  f.gpus.push_back(g);
  return f;
}

ZombiePolicy Policy() {
  ZombiePolicy p;
  p.min_memory_bytes = kGiB;
  p.idle_for = minutes(10);
  return p;
}

TEST(ZombieTrackerTest, MemoryHeldAtZeroSmLongEnoughIsAZombieWithEvidence) {
  ZombieTracker tracker(Policy());
  tracker.Observe(Fleet({Process(10, 20 * kGiB, 0), Process(11, 20 * kGiB, 0.7)}), kT0);
  EXPECT_TRUE(tracker.Zombies().empty());  // Not idle long enough yet.
  tracker.Observe(Fleet({Process(10, 20 * kGiB, 0), Process(11, 20 * kGiB, 0.7)}), kT0 + minutes(10));
  std::vector<ZombieEvidence> z = tracker.Zombies();
  ASSERT_EQ(z.size(), 1u);  // The busy one is not.
  EXPECT_EQ(z[0].pid, 10);
  EXPECT_EQ(z[0].gpu_uuid, "GPU-0");
  EXPECT_EQ(z[0].user, "alice");
  EXPECT_EQ(z[0].memory_bytes, 20 * kGiB);
  EXPECT_EQ(z[0].idle_for, minutes(10));
  EXPECT_FALSE(z[0].is_orphaned);
  EXPECT_FALSE(z[0].lease_id.has_value());
  EXPECT_NE(z[0].why.find("20.0 GiB at 0 % SM for 600 s, outside any lease"), std::string::npos) << z[0].why;
}

TEST(ZombieTrackerTest, AnyComputeResetsTheClock) {
  ZombieTracker tracker(Policy());
  tracker.Observe(Fleet({Process(10, 20 * kGiB, 0)}), kT0);
  tracker.Observe(Fleet({Process(10, 20 * kGiB, 0.01)}), kT0 + minutes(6));
  tracker.Observe(Fleet({Process(10, 20 * kGiB, 0)}), kT0 + minutes(12));
  EXPECT_TRUE(tracker.Zombies().empty());
  tracker.Observe(Fleet({Process(10, 20 * kGiB, 0)}), kT0 + minutes(22));
  EXPECT_EQ(tracker.Zombies().size(), 1u);
}

TEST(ZombieTrackerTest, AReusedPidStartsAfresh) {
  ZombieTracker tracker(Policy());
  tracker.Observe(Fleet({Process(10, 20 * kGiB, 0, 1001, "python", 4000, /*start=*/100)}), kT0);
  tracker.Observe(Fleet({Process(10, 20 * kGiB, 0, 1001, "python", 4000, /*start=*/900)}), kT0 + minutes(15));
  EXPECT_TRUE(tracker.Zombies().empty());  // Another process behind the same PID.
}

TEST(ZombieTrackerTest, SmallHoldersAllowlistedAndSystemProcessesAreLeftAlone) {
  ZombieTracker tracker(Policy());
  std::vector<fleet::ProcessView> procs = {Process(10, kGiB / 2, 0), Process(11, 8 * kGiB, 0, 1001, "ollama"),
                                             Process(12, 8 * kGiB, 0, 0, "python"),
                                             Process(13, 8 * kGiB, 0, 1001, "python", /*parent=*/1)};
  procs[0].process.sm_utilization_ratio.reset();
  tracker.Observe(Fleet(procs), kT0);
  tracker.Observe(Fleet(procs), kT0 + minutes(30));
  std::vector<ZombieEvidence> z = tracker.Zombies();
  ASSERT_EQ(z.size(), 1u);
  EXPECT_EQ(z[0].pid, 13);
  EXPECT_TRUE(z[0].is_orphaned);
  EXPECT_NE(z[0].why.find("orphaned"), std::string::npos);

  ZombiePolicy with_system = Policy();
  with_system.includes_system_users = true;
  ZombieTracker all(with_system);
  all.Observe(Fleet(procs), kT0);
  all.Observe(Fleet(procs), kT0 + minutes(30));
  EXPECT_EQ(all.Zombies().size(), 2u);  // Root's too, biggest first.
}

TEST(ZombieTrackerTest, GoneProcessesAreForgotten) {
  ZombieTracker tracker(Policy());
  tracker.Observe(Fleet({Process(10, 20 * kGiB, 0)}), kT0);
  tracker.Observe(Fleet({}), kT0 + minutes(5));
  tracker.Observe(Fleet({Process(10, 20 * kGiB, 0)}), kT0 + minutes(12));
  EXPECT_TRUE(tracker.Zombies().empty());
}

}  // namespace
}  // namespace tarmac::sched
