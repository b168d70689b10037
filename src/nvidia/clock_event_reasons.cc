// SPDX-License-Identifier: Apache-2.0
#include "nvidia/clock_event_reasons.h"

#include <fmt/format.h>

namespace tarmac::nvidia {

const std::vector<ClockEventReason>& ClockEventReasons() {
  static const std::vector<ClockEventReason>* const reasons = new std::vector<ClockEventReason>{
      {kReasonGpuIdle, "gpu_idle", false},
      {kReasonApplicationsClocksSetting, "applications_clocks_setting", false},
      {kReasonSwPowerCap, "sw_power_cap", true},
      {kReasonHwSlowdown, "hw_slowdown", true},
      {kReasonSyncBoost, "sync_boost", false},
      {kReasonSwThermalSlowdown, "sw_thermal_slowdown", true},
      {kReasonHwThermalSlowdown, "hw_thermal_slowdown", true},
      {kReasonHwPowerBrakeSlowdown, "hw_power_brake_slowdown", true},
      {kReasonDisplayClockSetting, "display_clock_setting", false},
  };
  return *reasons;
}

std::vector<std::string> DecodeClockEventReasons(uint64_t reasons) {
  std::vector<std::string> names;
  uint64_t known = 0;
  for (const ClockEventReason& r : ClockEventReasons()) {
    known |= r.bit;
    if (reasons & r.bit) names.emplace_back(r.name);
  }
  uint64_t unknown = reasons & ~known;
  for (int bit = 0; bit < 64; ++bit) {
    uint64_t mask = uint64_t{1} << bit;
    if (unknown & mask) names.push_back(fmt::format("unknown_{:#x}", mask));
  }
  return names;
}

bool IsThrottled(uint64_t reasons) {
  for (const ClockEventReason& r : ClockEventReasons()) {
    if (r.is_throttle && (reasons & r.bit)) return true;
  }
  return false;
}

}  // namespace tarmac::nvidia
