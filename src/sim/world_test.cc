// SPDX-License-Identifier: Apache-2.0
//
// The world's cached state (kept for cache_for, as a driver keeps its
// sample) never outlives a load's process or misses a new load: a process
// and its memory come and go at once, as with a real driver.
#include "sim/world.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>

#include "testutil/fake_clock.h"
#include "testutil/sim_fixture.h"

namespace tarmac::sim {
namespace {

class WorldTest : public testing::SimWorldTest {};

bool Lists(const WorldState& state, int gpu, int64_t pid) {
  const std::vector<ProcessState>& p = state.gpus[static_cast<size_t>(gpu)].processes;
  return std::any_of(p.begin(), p.end(), [pid](const ProcessState& s) { return s.pid == pid; });
}

TEST_F(WorldTest, ALoadsExitAndANewLoadShowWithinTheCachedSample) {
  UseScenario("lab-8gpu.toml");
  testing::FakeClock clock(RealClock()->WallNow());
  WorldOptions options;
  options.cache_for = std::chrono::hours(1);  // Only a change ends the cached state.
  Result<std::unique_ptr<World>> world = World::Open(options, &clock);
  ASSERT_TRUE(world.ok()) << world.status().ToString();
  testing::Child* first = StartLoad("0", {"--memory", "1GiB", "--util", "50"});
  clock.SetWall(RealClock()->WallNow());  // Loads count from their start on.
  std::shared_ptr<const WorldState> state = world.value()->State();
  ASSERT_TRUE(Lists(*state, 0, first->pid()));

  // Within a millisecond, the same state (one consistent sample).
  testing::Child* second = StartLoad("1", {"--memory", "1GiB", "--util", "50"});
  clock.SetWall(RealClock()->WallNow());
  EXPECT_EQ(world.value()->State(), state);
  clock.Advance(std::chrono::milliseconds(2));
  state = world.value()->State();
  EXPECT_TRUE(Lists(*state, 1, second->pid())) << "a new load is seen at once";

  first->KillAndWait(SIGKILL);
  clock.Advance(std::chrono::milliseconds(2));
  state = world.value()->State();
  EXPECT_FALSE(Lists(*state, 0, first->pid())) << "an exited load's memory is free at once";
  EXPECT_TRUE(Lists(*state, 1, second->pid()));
}

}  // namespace
}  // namespace tarmac::sim
