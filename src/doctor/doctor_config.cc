// SPDX-License-Identifier: Apache-2.0
#include "doctor/doctor_config.h"

namespace tarmac::doctor {

void ReadDoctorSection(ConfigSection& section, WatchOptions* out) {
  section.Bool("enabled", &out->is_enabled);
  section.Interval("interval", std::chrono::seconds(10), std::chrono::hours(24), &out->interval);
}

}  // namespace tarmac::doctor
