// SPDX-License-Identifier: Apache-2.0
#include "sim/world_model.h"

#include <gtest/gtest.h>

#include "nvidia/clock_event_reasons.h"
#include "sim/scenario_parser.h"

namespace tarmac::sim {
namespace {

using std::chrono::seconds;
using std::chrono::system_clock;

const system_clock::time_point kEpoch = system_clock::time_point(seconds(1700000000));

Scenario Make(const std::string& extra = "") {
  Result<Scenario> s = ParseScenario(R"(
[[gpu]]
count = 2
memory = "80GiB"
memory_reserved = "512MiB"
power_idle_w = 100
power_max_w = 600
power_limit_w = 500
ambient_c = 30
thermal_c_per_w = 0.1
slowdown_c = 85
sm_clock_max_mhz = 2000
sm_clock_idle_mhz = 300
)" + extra,
                                     "t.toml");
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.value();
}

Load MakeLoad(int64_t pid, std::vector<int> gpus, double util, LoadPattern pattern, int64_t memory_gib) {
  Load l;
  l.pid = pid;
  l.gpus = std::move(gpus);
  l.utilization_ratio = util;
  l.pattern = pattern;
  l.memory_bytes = memory_gib << 30;
  l.started_at = kEpoch;
  return l;
}

TEST(WorldModelTest, IdleGpuDrawsIdlePowerAtIdleClock) {
  WorldState w = EvaluateWorld(Make(), {}, kEpoch, kEpoch + seconds(10));
  const GpuState& g = w.gpus[0];
  EXPECT_EQ(g.utilization_gpu_percent, 0);
  EXPECT_EQ(g.power_milliwatts, 100000);
  EXPECT_EQ(g.temperature_celsius, 40);
  EXPECT_EQ(g.sm_clock_mhz, 300);
  EXPECT_EQ(g.performance_state, 8);
  EXPECT_EQ(g.clock_event_reasons, nvidia::kReasonGpuIdle);
  EXPECT_EQ(g.memory_used_bytes, 0);
  EXPECT_EQ(g.memory_free_bytes, (int64_t{80} << 30) - (int64_t{512} << 20));
  EXPECT_EQ(g.energy_millijoules, 100 * 10 * 1000);
}

TEST(WorldModelTest, LoadSetsUtilizationMemoryAndProcess) {
  std::vector<Load> loads = {MakeLoad(4242, {1}, 0.5, LoadPattern::kIdle, 20)};
  WorldState w = EvaluateWorld(Make(), loads, kEpoch, kEpoch + seconds(5));
  EXPECT_TRUE(w.gpus[0].processes.empty());
  const GpuState& g = w.gpus[1];
  ASSERT_EQ(g.processes.size(), 1u);
  EXPECT_EQ(g.processes[0].pid, 4242);
  EXPECT_EQ(g.processes[0].used_memory_bytes, int64_t{20} << 30);
  EXPECT_EQ(g.processes[0].sm_utilization_percent, 0);
  EXPECT_EQ(g.memory_used_bytes, int64_t{20} << 30);
  EXPECT_EQ(g.performance_state, 0);  // A context keeps the GPU in P0,
  // but with no kernel running its clocks drop to idle under GPU_IDLE.
  EXPECT_EQ(g.clock_event_reasons & nvidia::kReasonGpuIdle, nvidia::kReasonGpuIdle);
  EXPECT_EQ(g.sm_clock_mhz, 300);
}

TEST(WorldModelTest, PowerCapThrottlesClocks) {
  // 100 + 500 * 0.9 = 550 W demanded, limit 500 W.
  std::vector<Load> loads = {MakeLoad(7, {0}, 0.9, LoadPattern::kSteady, 1)};
  WorldState w = EvaluateWorld(Make(), loads, kEpoch, kEpoch);  // t=0: no wobble.
  const GpuState& g = w.gpus[0];
  EXPECT_NEAR(g.utilization_gpu_percent, 90, 2);  // Steady loads wobble by 2 %.
  EXPECT_EQ(g.power_milliwatts, 500000);
  EXPECT_TRUE(g.clock_event_reasons & nvidia::kReasonSwPowerCap);
  EXPECT_LT(g.sm_clock_mhz, 2000);
  EXPECT_EQ(g.temperature_celsius, 80);
}

TEST(WorldModelTest, SharesAreScaledWhenOversubscribed) {
  std::vector<Load> loads = {MakeLoad(1, {0}, 0.8, LoadPattern::kSteady, 1),
                             MakeLoad(2, {0}, 0.8, LoadPattern::kSteady, 1)};
  WorldState w = EvaluateWorld(Make(), loads, kEpoch, kEpoch);
  EXPECT_EQ(w.gpus[0].utilization_gpu_percent, 100);
  EXPECT_NEAR(w.gpus[0].processes[0].sm_utilization_percent, 50, 2);
  EXPECT_EQ(w.gpus[0].processes[0].sm_utilization_percent + w.gpus[0].processes[1].sm_utilization_percent,
            100);
}

TEST(WorldModelTest, BurstyLoadAlternates) {
  Load l = MakeLoad(3, {0}, 1.0, LoadPattern::kBursty, 1);
  int high = 0;
  for (int t = 0; t < 20; ++t) {
    if (LoadUtilizationAt(l, seconds(t)) > 0.5) ++high;
  }
  EXPECT_EQ(high, 8);  // 40 % of a 20 s period.
}

TEST(WorldModelTest, EndedLoadStopsCountingButKeepsItsEnergy) {
  Load l = MakeLoad(5, {0}, 1.0, LoadPattern::kSteady, 10);
  l.ended_at = kEpoch + seconds(10);
  WorldState during = EvaluateWorld(Make(), {l}, kEpoch, kEpoch + seconds(5));
  WorldState after = EvaluateWorld(Make(), {l}, kEpoch, kEpoch + seconds(20));
  EXPECT_EQ(during.gpus[0].processes.size(), 1u);
  EXPECT_TRUE(after.gpus[0].processes.empty());
  EXPECT_EQ(after.gpus[0].memory_used_bytes, 0);
  // 100 W idle for 20 s plus 500 W extra for the 10 s it ran.
  EXPECT_EQ(after.gpus[0].energy_millijoules, (100 * 20 + 500 * 10) * 1000);
  EXPECT_GT(after.gpus[0].pcie_rx_bytes, during.gpus[0].pcie_rx_bytes);
}

// NVML's thermal violation time agrees with the throttle reason: it grows
// while a thermal_throttle holds the clocks down, overlapping windows once.
TEST(WorldModelTest, ThermalViolationTimeGrowsWhileAThrottleHolds) {
  Scenario s = Make(R"(
[[fault]]
kind = "thermal_throttle"
gpu = 0
at = "10s"
until = "30s"
[[fault]]
kind = "thermal_throttle"
gpu = 0
at = "20s"
until = "40s"
[[fault]]
kind = "thermal_throttle"
gpu = 1
at = "0s"
)");
  EXPECT_EQ(EvaluateWorld(s, {}, kEpoch, kEpoch + seconds(5)).gpus[0].thermal_violation_ms, 0);
  EXPECT_EQ(EvaluateWorld(s, {}, kEpoch, kEpoch + seconds(25)).gpus[0].thermal_violation_ms, 15000);
  WorldState later = EvaluateWorld(s, {}, kEpoch, kEpoch + seconds(50));
  EXPECT_EQ(later.gpus[0].thermal_violation_ms, 30000);
  EXPECT_EQ(later.gpus[1].thermal_violation_ms, 50000);  // Throttled since the start: all of it.
}

TEST(WorldModelTest, TimelineFaultsApplyFromTheirTime) {
  Scenario s = Make(R"(
[[fault]]
kind = "thermal_throttle"
gpu = 0
at = "10s"
until = "20s"
[[fault]]
kind = "pcie_downtrain"
gpu = 1
at = "5s"
width = 8
[[fault]]
kind = "fall_off_bus"
gpu = 1
at = "30s"
[[fault]]
kind = "ecc_error"
gpu = 0
at = "1s"
type = "uncorrected"
count = 3
[[fault]]
kind = "driver_unloaded"
at = "40s"
)");
  WorldState t0 = EvaluateWorld(s, {}, kEpoch, kEpoch);
  WorldState t15 = EvaluateWorld(s, {}, kEpoch, kEpoch + seconds(15));
  WorldState t25 = EvaluateWorld(s, {}, kEpoch, kEpoch + seconds(25));
  WorldState t35 = EvaluateWorld(s, {}, kEpoch, kEpoch + seconds(35));
  WorldState t45 = EvaluateWorld(s, {}, kEpoch, kEpoch + seconds(45));
  EXPECT_FALSE(t0.gpus[0].clock_event_reasons & nvidia::kReasonHwThermalSlowdown);
  EXPECT_TRUE(t15.gpus[0].clock_event_reasons & nvidia::kReasonHwThermalSlowdown);
  EXPECT_GE(t15.gpus[0].temperature_celsius, 87);
  EXPECT_FALSE(t25.gpus[0].clock_event_reasons & nvidia::kReasonHwThermalSlowdown);
  EXPECT_EQ(t0.gpus[1].pcie_width, 16);
  EXPECT_EQ(t15.gpus[1].pcie_width, 8);
  EXPECT_EQ(t0.gpus[0].ecc_uncorrected, 0);
  EXPECT_EQ(t15.gpus[0].ecc_uncorrected, 3);
  EXPECT_EQ(t15.gpus[0].remapped_rows_uncorrected, 3);
  EXPECT_TRUE(t15.gpus[0].is_remap_pending);
  EXPECT_FALSE(t25.gpus[1].is_lost);
  EXPECT_TRUE(t35.gpus[1].is_lost);
  EXPECT_FALSE(t35.gpus[0].is_lost);
  EXPECT_TRUE(t35.is_driver_loaded);
  EXPECT_FALSE(t45.is_driver_loaded);

  std::vector<WorldEvent> events = EventsBetween(s, kEpoch, kEpoch, kEpoch + seconds(60));
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].xid, 48);  // Uncorrectable ECC.
  EXPECT_EQ(events[0].gpu, 0);
  EXPECT_EQ(events[1].xid, 79);
  EXPECT_EQ(events[1].gpu, 1);
  EXPECT_TRUE(EventsBetween(s, kEpoch, kEpoch + seconds(30), kEpoch + seconds(60)).empty());
}

TEST(WorldModelTest, UtilizationHistoryMatchesState) {
  std::vector<Load> loads = {MakeLoad(11, {0}, 0.7, LoadPattern::kBursty, 1)};
  Scenario s = Make();
  for (int t = 0; t < 30; t += 3) {
    system_clock::time_point at = kEpoch + seconds(t);
    EXPECT_EQ(UtilizationPercentAt(s, 0, loads, kEpoch, at),
              EvaluateWorld(s, loads, kEpoch, at).gpus[0].utilization_gpu_percent);
  }
}

}  // namespace
}  // namespace tarmac::sim
