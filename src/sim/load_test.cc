// SPDX-License-Identifier: Apache-2.0
#include "sim/load.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil/testutil.h"

namespace tarmac::sim {
namespace {

// A load of this (live) test process.
Load OwnLoad(std::vector<int> gpus) {
  Load l;
  l.pid = getpid();
  l.start_ticks = *ProcessStartTicks(getpid());
  l.gpus = std::move(gpus);
  return l;
}

TEST(LoadTest, EncodeDecodeRoundTrip) {
  Load l;
  l.pid = 1234;
  l.start_ticks = 99;
  l.gpus = {0, 3};
  l.memory_bytes = int64_t{20} << 30;
  l.utilization_ratio = 0.85;
  l.pattern = LoadPattern::kBursty;
  l.started_at = std::chrono::system_clock::time_point(std::chrono::seconds(1700000000));
  l.command = "train.py";
  Result<Load> back = DecodeLoad(EncodeLoad(l), "x");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back.value().pid, 1234);
  EXPECT_EQ(back.value().gpus, (std::vector<int>{0, 3}));
  EXPECT_EQ(back.value().memory_bytes, l.memory_bytes);
  EXPECT_EQ(back.value().pattern, LoadPattern::kBursty);
  EXPECT_EQ(back.value().started_at, l.started_at);
}

TEST(LoadTest, MalformedFilesAreCorruption) {
  EXPECT_EQ(DecodeLoad("{", "f").status().code(), StatusCode::kCorruption);
  EXPECT_FALSE(DecodeLoad(R"({"pid": -1})", "f").ok());
  EXPECT_FALSE(DecodeLoad(R"({"pid":1,"start_ticks":1,"memory_bytes":1,"started_at_ns":1,
      "utilization_ratio":2,"pattern":"steady","gpus":[0]})",
                          "f")
                   .ok());
}

TEST(LoadTest, OwnProcessIsAliveAndDeadPidIsNot) {
  ASSERT_TRUE(ProcessStartTicks(getpid()).has_value());
  EXPECT_FALSE(ProcessStartTicks(999999999).has_value());
}

TEST(LoadTest, RegistryMarksLoadsOfDeadProcessesEnded) {
  testing::TempDir dir;
  LoadRegistry registry(dir.path());
  Load alive = OwnLoad({0});
  Load reused = alive;
  reused.start_ticks = alive.start_ticks + 1;  // Same PID, another process.
  ASSERT_TRUE(registry.Register(alive).ok());
  ASSERT_TRUE(registry.Register(reused).ok());
  std::vector<Load> loads = registry.List();
  ASSERT_EQ(loads.size(), 2u);
  int ended = 0;
  for (const Load& l : loads) ended += l.ended_at.has_value() ? 1 : 0;
  EXPECT_EQ(ended, 1);
}

// A dead process's load is set aside by the first listing that finds it
// dead: still listed (its energy counts), ended at its last heartbeat, and
// never read again by a program that starts (ListLive).
TEST(LoadTest, ADeadLoadIsSetAsideStillListedAndLeftOutOfTheLiveOnes) {
  testing::TempDir dir;
  LoadRegistry registry(dir.path());
  Load alive = OwnLoad({0});
  Load dead = alive;
  dead.start_ticks = alive.start_ticks + 1;  // Same PID, another process: gone.
  ASSERT_TRUE(registry.Register(alive).ok());
  Result<std::string> dead_path = registry.Register(dead);
  ASSERT_TRUE(dead_path.ok());
  struct timespec last_heartbeat[2] = {{1700000000, 0}, {1700000000, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, dead_path.value().c_str(), last_heartbeat, 0), 0);

  std::vector<Load> live = registry.ListLive();
  ASSERT_EQ(live.size(), 1u);
  EXPECT_EQ(live[0].start_ticks, alive.start_ticks);
  EXPECT_NE(::access(dead_path.value().c_str(), F_OK), 0) << "set aside";
  for (int i = 0; i < 2; ++i) {  // Found in the folder, then set aside.
    std::vector<Load> loads = registry.List();
    ASSERT_EQ(loads.size(), 2u) << "listing " << i;
    const Load& gone = loads[0].start_ticks == dead.start_ticks ? loads[0] : loads[1];
    ASSERT_TRUE(gone.ended_at.has_value());
    EXPECT_EQ(*gone.ended_at, std::chrono::system_clock::time_point(std::chrono::seconds(1700000000)));
  }
  EXPECT_EQ(registry.ListLive().size(), 1u);
}

// Listing alone (the agent's NVML) moves nothing; a link planted as
// loads/ended is never followed: the dead load stays where it was.
TEST(LoadTest, ListingMovesNothingAndALinkedEndedFolderIsNeverFollowed) {
  testing::TempDir dir;
  testing::TempDir elsewhere;
  LoadRegistry registry(dir.path());
  Load dead = OwnLoad({0});
  dead.start_ticks += 1;
  Result<std::string> path = registry.Register(dead);
  ASSERT_TRUE(path.ok());
  ASSERT_EQ(registry.List().size(), 1u);
  EXPECT_EQ(::access(path.value().c_str(), F_OK), 0) << "List() moved it";
  ASSERT_EQ(::symlink(elsewhere.path().c_str(), (dir.path() + "/loads/ended").c_str()), 0);
  EXPECT_TRUE(registry.ListLive().empty());
  EXPECT_EQ(::access(path.value().c_str(), F_OK), 0) << "moved through the link";
  std::vector<Load> loads = registry.List();
  ASSERT_EQ(loads.size(), 1u);
  EXPECT_TRUE(loads[0].ended_at.has_value());
}

TEST(LoadTest, ALiveProcessEndsItsLoadAndLoadsAgainUnderAnotherSerial) {
  testing::TempDir dir;
  LoadRegistry registry(dir.path());
  Load model = OwnLoad({1});
  model.memory_bytes = int64_t{8} << 30;
  Result<std::string> first = registry.Register(model, 1);
  ASSERT_TRUE(first.ok());
  auto now = std::chrono::system_clock::time_point(std::chrono::seconds(1700000100));
  ASSERT_TRUE(registry.End(first.value(), model, now).ok());
  std::vector<Load> loads = registry.List();
  ASSERT_EQ(loads.size(), 1u);
  ASSERT_TRUE(loads[0].ended_at.has_value()) << "the process lives, yet its load has ended";
  EXPECT_EQ(*loads[0].ended_at, now);
  Result<std::string> second = registry.Register(model, 2);
  ASSERT_TRUE(second.ok());
  EXPECT_NE(second.value(), first.value());
  loads = registry.List();
  ASSERT_EQ(loads.size(), 2u);
  int active = 0;
  for (const Load& l : loads) active += l.ended_at ? 0 : 1;
  EXPECT_EQ(active, 1);
}

}  // namespace
}  // namespace tarmac::sim
