// SPDX-License-Identifier: Apache-2.0
//
// What the lease service may do and when: who administers leases, how
// processes are stopped, and what happens to idle leases, zombies and
// processes on a GPU leased to someone else. The defaults are the agent's
// ([leases] and [zombies] in docs/config.md, read by lease_config.h).
#pragma once

#include <chrono>
#include <map>
#include <string>

#include "sched/schedule.h"
#include "sched/zombies.h"

namespace tarmac::leases {

enum class IdleAction { kWarn, kRelease, kTerminate };
const char* IdleActionName(IdleAction a);
// "warn", "release" or "terminate"; false for anything else.
bool ParseIdleAction(std::string_view name, IdleAction* out);

struct LeasePolicy {
  std::string admin_group = "tarmac-admin";  // Members manage every lease and process (root always does).
  std::chrono::milliseconds kill_grace{10000};  // SIGTERM, then SIGKILL after this.
  std::chrono::milliseconds default_idle_timeout{0};  // 0: leases without one are never idle-reclaimed.
  std::chrono::milliseconds idle_grace{std::chrono::minutes(5)};  // From the idle warning to the action.
  IdleAction idle_action = IdleAction::kWarn;
  std::map<std::string, IdleAction> idle_action_by_user;
  std::map<sched::Priority, IdleAction> idle_action_by_priority;
  bool terminates_zombies = false;  // [zombies] policy = "terminate".
  bool terminates_foreign = false;  // [leases] foreign_policy = "terminate".
  sched::ZombiePolicy zombies;

  bool operator==(const LeasePolicy&) const = default;
};

}  // namespace tarmac::leases
