// SPDX-License-Identifier: Apache-2.0
#include "store/store_config.h"

namespace tarmac::store {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// Reads a duration kept in seconds: a part of a second is refused, not
// dropped.
void ReadSeconds(ConfigSection& section, std::string_view key, milliseconds min, milliseconds max,
                 seconds* out) {
  milliseconds value = *out;
  section.Interval(key, min, max, &value);
  if (RequireWholeSeconds(section, key, value)) *out = std::chrono::duration_cast<seconds>(value);
}

}  // namespace

void ReadStoreSection(ConfigSection& section, StoreConfig* out) {
  section.Bool("enabled", &out->is_enabled);
  section.String("path", &out->options.path);
  milliseconds day = std::chrono::hours(24);
  Retention& r = out->options.retention;
  ReadSeconds(section, "raw_retention", day, day * 365 * 10, &r.raw);
  ReadSeconds(section, "minute_retention", day, day * 365 * 10, &r.minute);
  ReadSeconds(section, "hour_retention", day, day * 365 * 30, &r.hour);
  ReadSeconds(section, "integrity_check_interval", milliseconds(0), day * 30,
              &out->options.integrity_check_interval);
  if (r.minute < r.raw || r.hour < r.minute) {
    section.Fail("minute_retention", "tiers must keep longer as they get coarser (raw <= minute <= hour)",
                 section.Has("minute_retention") ? "minute_retention" : "hour_retention");
  }
}

}  // namespace tarmac::store
