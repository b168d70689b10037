// SPDX-License-Identifier: Apache-2.0
//
// [doctor] in the agent's config: whether the agent runs the doctor's
// checks on a schedule, and how often (docs/config.md).
#pragma once

#include <chrono>

#include "common/config_section.h"

namespace tarmac::doctor {

struct WatchOptions {
  bool is_enabled = true;                     // enabled
  std::chrono::milliseconds interval{60000};  // interval: 10 s to 1 day
  bool operator==(const WatchOptions&) const = default;
};

void ReadDoctorSection(ConfigSection& section, WatchOptions* out);

}  // namespace tarmac::doctor
