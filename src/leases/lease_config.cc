// SPDX-License-Identifier: Apache-2.0
#include "leases/lease_config.h"

#include "sched/lease_json.h"

namespace tarmac::leases {
namespace {

// A policy key: "warn", "release" or "terminate".
void ReadIdleAction(ConfigSection& section, std::string_view key, IdleAction* out) {
  std::string name = IdleActionName(*out);
  section.OneOf(key, {"warn", "release", "terminate"}, &name);
  ParseIdleAction(name, out);
}

// "report" or "terminate", as whether to terminate.
void ReadTerminates(ConfigSection& section, std::string_view key, bool* out) {
  std::string name = *out ? "terminate" : "report";
  section.OneOf(key, {"report", "terminate"}, &name);
  *out = name == "terminate";
}

}  // namespace

void ReadLeasesSection(ConfigSection& section, LeasePolicy* out) {
  using std::chrono::milliseconds;
  section.String("admin_group", &out->admin_group);
  milliseconds week = std::chrono::hours(24 * 7);
  section.Interval("kill_grace", milliseconds(0), milliseconds(600000), &out->kill_grace);
  section.Interval("idle_timeout", milliseconds(0), week, &out->default_idle_timeout);
  section.Interval("idle_grace", milliseconds(0), week, &out->idle_grace);
  ReadIdleAction(section, "idle_policy", &out->idle_action);
  ReadTerminates(section, "foreign_policy", &out->terminates_foreign);
  constexpr std::string_view kPolicies = "a table of policies (\"warn\", \"release\" or \"terminate\")";
  if (std::unique_ptr<ConfigSection> users = section.Table("idle_policy_by_user", kPolicies)) {
    for (const std::string& user : users->Keys()) {
      std::string name;
      users->OneOf(user, {"warn", "release", "terminate"}, &name);
      if (!name.empty()) ParseIdleAction(name, &out->idle_action_by_user[user]);
    }
  }
  if (std::unique_ptr<ConfigSection> priorities = section.Table("idle_policy_by_priority", kPolicies)) {
    for (const std::string& key : priorities->Keys()) {
      std::string name;
      priorities->OneOf(key, {"warn", "release", "terminate"}, &name);
      sched::Priority priority;
      if (!sched::ParsePriority(key, &priority)) {
        priorities->Fail(key, "expected a priority: low, normal or high");
        continue;
      }
      if (!name.empty()) ParseIdleAction(name, &out->idle_action_by_priority[priority]);
    }
  }
}

void ReadZombieAction(ConfigSection& section, LeasePolicy* out) {
  ReadTerminates(section, "policy", &out->terminates_zombies);
}

}  // namespace tarmac::leases
