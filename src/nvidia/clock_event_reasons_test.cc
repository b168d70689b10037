// SPDX-License-Identifier: Apache-2.0
#include "nvidia/clock_event_reasons.h"

#include <gtest/gtest.h>

namespace tarmac::nvidia {
namespace {

TEST(ClockEventReasonsTest, DecodesBitsByName) {
  EXPECT_EQ(DecodeClockEventReasons(0), std::vector<std::string>{});
  EXPECT_EQ(DecodeClockEventReasons(0x61),
            (std::vector<std::string>{"gpu_idle", "sw_thermal_slowdown", "hw_thermal_slowdown"}));
  EXPECT_EQ(DecodeClockEventReasons(0x1000), std::vector<std::string>{"unknown_0x1000"});
}

TEST(ClockEventReasonsTest, IdleAndSyncBoostAreNotThrottling) {
  EXPECT_FALSE(IsThrottled(kReasonGpuIdle | kReasonSyncBoost | kReasonApplicationsClocksSetting));
  EXPECT_TRUE(IsThrottled(kReasonSwPowerCap));
  EXPECT_TRUE(IsThrottled(kReasonHwThermalSlowdown | kReasonGpuIdle));
}

}  // namespace
}  // namespace tarmac::nvidia
