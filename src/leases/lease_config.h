// SPDX-License-Identifier: Apache-2.0
//
// The lease service's keys of the agent's config, read into LeasePolicy
// (which holds their defaults).
//
// [leases]: admin_group, kill_grace (0 to 10m), idle_timeout (0 to 7d; 0:
// none), idle_grace (0 to 7d), idle_policy and the tables
// idle_policy_by_user and idle_policy_by_priority ("warn", "release" or
// "terminate"; priorities low, normal, high), foreign_policy ("report" or
// "terminate").
// [zombies]: policy ("report" or "terminate"), besides the detection keys
// (sched/zombie_config.h).
// [backfill]: grace (0 to 10m), idle_for ("auto" or 0 to 7d), settle and
// min_run (0 to 1d; used by "auto"), lend_idle ("off", "reservations",
// "all"), lend_after (0 to 7d), lend_margin (a size), windows (["HH:MM-HH:MM"]),
// max_temperature (degrees C, 0: none), max_power (watts, 0: none).
#pragma once

#include "common/config_section.h"
#include "leases/lease_policy.h"

namespace tarmac::leases {

void ReadLeasesSection(ConfigSection& section, LeasePolicy* out);
void ReadZombieAction(ConfigSection& section, LeasePolicy* out);
void ReadBackfillSection(ConfigSection& section, BackfillPolicy* out);
// [slurm]: idle_after (0 to 7d; 0: off), idle_policy and the table
// idle_policy_by_partition ("warn", "requeue" or "cancel"), dry_run.
void ReadSlurmSection(ConfigSection& section, SlurmIdlePolicy* out);

// A time of day window, "HH:MM-HH:MM" (local time), wrapping past midnight
// when the end is earlier than the start.
struct TimeWindow {
  int from_minute = 0;  // Minutes after midnight.
  int to_minute = 0;
  bool Contains(int minute_of_day) const;
};
// False for a malformed window, or one whose start and end are the same.
bool ParseWindow(std::string_view text, TimeWindow* out);
// Whether local time `minute_of_day` (0-1439) is inside `window`; false for
// a malformed window.
bool InWindow(std::string_view window, int minute_of_day);

}  // namespace tarmac::leases
