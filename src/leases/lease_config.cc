// SPDX-License-Identifier: Apache-2.0
#include "leases/lease_config.h"

#include <algorithm>
#include <optional>

#include "sched/lease_json.h"

namespace tarmac::leases {
namespace {

// A policy key: "warn", "release" or "terminate"; empty when absent, or
// wrong (then reported).
std::optional<IdleAction> ReadIdleAction(ConfigSection& section, std::string_view key) {
  std::string name;
  section.OneOf(key, {"warn", "release", "terminate"}, &name);
  IdleAction action;
  if (!ParseIdleAction(name, &action)) return std::nullopt;
  return action;
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
  RequireWholeSeconds(section, "idle_timeout",
                      out->default_idle_timeout);  // A lease's idle timeout is in seconds.
  section.Interval("idle_grace", milliseconds(0), week, &out->idle_grace);
  section.Interval("keep_for_head_after", milliseconds(0), week, &out->keep_for_head_after);
  if (std::optional<IdleAction> a = ReadIdleAction(section, "idle_policy")) out->idle_action = *a;
  ReadTerminates(section, "foreign_policy", &out->terminates_foreign);
  section.Bool("auto_drain", &out->is_auto_drain);
  constexpr std::string_view kPolicies = "a table of policies (\"warn\", \"release\" or \"terminate\")";
  if (std::unique_ptr<ConfigSection> users = section.Table("idle_policy_by_user", kPolicies)) {
    for (const std::string& user : users->Keys()) {
      if (std::optional<IdleAction> a = ReadIdleAction(*users, user)) out->idle_action_by_user[user] = *a;
    }
  }
  if (std::unique_ptr<ConfigSection> priorities = section.Table("idle_policy_by_priority", kPolicies)) {
    for (const std::string& key : priorities->Keys()) {
      std::optional<IdleAction> a = ReadIdleAction(*priorities, key);
      sched::Priority priority;
      if (!sched::ParsePriority(key, &priority)) {
        priorities->Fail(key, "expected a priority: backfill, low, normal or high");
        continue;
      }
      if (a) out->idle_action_by_priority[priority] = *a;
    }
  }
}

namespace {

std::optional<SlurmIdleAction> ReadSlurmAction(ConfigSection& section, std::string_view key) {
  if (!section.Has(key)) return std::nullopt;
  std::string name;
  section.OneOf(key, {"warn", "requeue", "cancel"}, &name);
  SlurmIdleAction a;
  if (!ParseSlurmIdleAction(name, &a)) return std::nullopt;  // Reported by OneOf.
  return a;
}

}  // namespace

void ReadSlurmSection(ConfigSection& section, SlurmIdlePolicy* out) {
  using std::chrono::milliseconds;
  section.Interval("idle_after", milliseconds(0), std::chrono::hours(24 * 7), &out->idle_after);
  if (std::optional<SlurmIdleAction> a = ReadSlurmAction(section, "idle_policy")) out->action = *a;
  if (std::unique_ptr<ConfigSection> partitions = section.Table(
          "idle_policy_by_partition", "a table of policies (\"warn\", \"requeue\" or \"cancel\")")) {
    for (const std::string& partition : partitions->Keys()) {
      if (std::optional<SlurmIdleAction> a = ReadSlurmAction(*partitions, partition)) {
        out->action_by_partition[partition] = *a;
      }
    }
  }
  section.Bool("dry_run", &out->is_dry_run);
}

void ReadZombieAction(ConfigSection& section, LeasePolicy* out) {
  ReadTerminates(section, "policy", &out->terminates_zombies);
}

namespace {

// Minutes after midnight of "HH:MM", or -1.
int MinuteOf(std::string_view text) {
  if (text.size() != 5 || text[2] != ':') return -1;
  for (size_t i : {0, 1, 3, 4}) {
    if (text[i] < '0' || text[i] > '9') return -1;
  }
  int hours = (text[0] - '0') * 10 + (text[1] - '0');
  int minutes = (text[3] - '0') * 10 + (text[4] - '0');
  if (hours > 24 || minutes > 59 || (hours == 24 && minutes != 0)) return -1;
  return hours * 60 + minutes;
}

}  // namespace

bool ParseWindow(std::string_view text, TimeWindow* out) {
  size_t dash = text.find('-');
  if (dash == std::string_view::npos) return false;
  int from = MinuteOf(text.substr(0, dash));
  int to = MinuteOf(text.substr(dash + 1));
  if (from < 0 || to < 0 || from == to) return false;
  *out = {from, to};
  return true;
}

bool TimeWindow::Contains(int minute_of_day) const {
  if (from_minute < to_minute) return minute_of_day >= from_minute && minute_of_day < to_minute;
  return minute_of_day >= from_minute || minute_of_day < to_minute;  // Past midnight.
}

bool InWindow(std::string_view window, int minute_of_day) {
  TimeWindow w;
  return ParseWindow(window, &w) && w.Contains(minute_of_day);
}

void ReadBackfillSection(ConfigSection& section, BackfillPolicy* out) {
  using std::chrono::milliseconds;
  section.Interval("grace", milliseconds(0), milliseconds(600000), &out->grace);
  if (section.IsWord("idle_for", "auto")) {
    out->is_auto = true;
  } else if (section.Has("idle_for")) {
    milliseconds idle_for = out->idle_for;
    section.Interval("idle_for", milliseconds(0), std::chrono::hours(24 * 7), &idle_for);
    out->is_auto = false;
    out->idle_for = idle_for;
  }
  section.Interval("settle", milliseconds(0), std::chrono::hours(24), &out->settle);
  section.Interval("min_run", milliseconds(0), std::chrono::hours(24), &out->min_run);
  std::string lend = LendIdleName(out->lend_idle);
  section.OneOf("lend_idle", {"off", "reservations", "all"}, &lend);
  ParseLendIdle(lend, &out->lend_idle);
  section.Interval("lend_after", milliseconds(0), std::chrono::hours(24 * 7), &out->lend_after);
  section.Bytes("lend_margin", &out->lend_margin_bytes);
  if (out->lend_margin_bytes < 0) {
    section.Fail("lend_margin", "must not be negative");
    out->lend_margin_bytes = int64_t{4} << 30;
  }
  std::vector<std::string> windows = out->windows;
  section.Strings("windows", &windows);
  TimeWindow parsed;
  bool is_ok = std::all_of(windows.begin(), windows.end(),
                           [&](const std::string& w) { return ParseWindow(w, &parsed); });
  if (is_ok) {
    out->windows = windows;
  } else {
    section.Fail("windows", "expected times of day such as \"00:00-06:00\" (start and end differ)");
  }
  ReadInteger(section, "max_temperature", &out->max_temperature_celsius, 0, 200);
  ReadInteger(section, "max_power", &out->max_power_watts, 0, 100000);
  ReadInteger(section, "nice", &out->nice, 0, 19);
}

}  // namespace tarmac::leases
