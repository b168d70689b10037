// SPDX-License-Identifier: Apache-2.0
//
// Names for NVML's clock event (throttle) reason bits. The bit values are the
// same under the old nvmlClocksThrottleReason* and the new
// nvmlClocksEventReason* names (NVML header, "Clock event reasons").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tarmac::nvidia {

inline constexpr uint64_t kReasonGpuIdle = 0x1;
inline constexpr uint64_t kReasonApplicationsClocksSetting = 0x2;
inline constexpr uint64_t kReasonSwPowerCap = 0x4;
inline constexpr uint64_t kReasonHwSlowdown = 0x8;
inline constexpr uint64_t kReasonSyncBoost = 0x10;
inline constexpr uint64_t kReasonSwThermalSlowdown = 0x20;
inline constexpr uint64_t kReasonHwThermalSlowdown = 0x40;
inline constexpr uint64_t kReasonHwPowerBrakeSlowdown = 0x80;
inline constexpr uint64_t kReasonDisplayClockSetting = 0x100;

struct ClockEventReason {
  uint64_t bit;
  std::string_view name;  // snake_case, used in JSON and metric labels
  bool is_throttle;       // True when the reason lowers clocks under load.
};

// Every known reason, in bit order.
const std::vector<ClockEventReason>& ClockEventReasons();

// Names of the bits set in `reasons`, in bit order; unknown bits are named
// "unknown_0x..".
std::vector<std::string> DecodeClockEventReasons(uint64_t reasons);

// True when any bit that lowers clocks under load is set (power cap, thermal,
// hardware slowdown, power brake). Idle, application clocks, sync boost and
// display settings are not throttling.
bool IsThrottled(uint64_t reasons);

}  // namespace tarmac::nvidia
