// SPDX-License-Identifier: Apache-2.0
//
// What the lease service may do and when: who administers leases, how
// processes are stopped, and what happens to idle leases, zombies and
// processes on a GPU leased to someone else, and when backfill may run. The
// defaults are the agent's ([leases], [zombies] and [backfill] in
// docs/config.md, read by lease_config.h).
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "leases/loans.h"
#include "sched/schedule.h"
#include "sched/zombies.h"

namespace tarmac::leases {

enum class IdleAction { kWarn, kRelease, kTerminate };
const char* IdleActionName(IdleAction a);
// "warn", "release" or "terminate"; false for anything else.
bool ParseIdleAction(std::string_view name, IdleAction* out);

// When backfill (priority "backfill") may start on a GPU, and how long a
// revoked backfill lease has to let go ([backfill] in docs/config.md).
struct BackfillPolicy {
  std::chrono::milliseconds grace{5000};  // From the notice to the end of a revoked lease.
  // idle_for = "auto" (the default): a GPU accepts backfill once no other
  // work has used it for `settle`, no request of another priority waits
  // that could use it, and a real arrival within `min_run` is less likely
  // than not at the rate learned for its hour of the week (backfill_gate.h).
  bool is_auto = true;
  std::chrono::milliseconds settle{std::chrono::seconds(30)};
  std::chrono::milliseconds min_run{std::chrono::minutes(2)};
  // idle_for = a duration: a GPU accepts backfill once no other work has
  // used it for this long, whatever waits or is likely.
  std::chrono::milliseconds idle_for{std::chrono::minutes(10)};
  // Local times of day ("HH:MM-HH:MM", may wrap past midnight) when backfill
  // may start; empty: any time.
  std::vector<std::string> windows;
  // Lending held-idle GPUs' free memory to backfill (loans.h): which leases
  // lend besides those asked with --lend-idle, after how long at 0 % SM,
  // and how much memory above the lender's peak stays free.
  LendIdle lend_idle = LendIdle::kOff;
  std::chrono::milliseconds lend_after{std::chrono::minutes(10)};
  int64_t lend_margin_bytes = int64_t{4} << 30;
  int64_t max_temperature_celsius = 0;  // A GPU this hot takes no new backfill; 0: no limit.
  int64_t max_power_watts = 0;          // Nor one drawing this much; 0: no limit.
  // The CPU niceness batch runners and their engines start with (0 to 19):
  // backfill yields the CPU to real work as it yields the GPU.
  int nice = 19;

  bool operator==(const BackfillPolicy&) const = default;
};

// What the agent does about a Slurm job whose GPUs sit idle ([slurm] in
// docs/config.md, docs/slurm.md): after `idle_after` without SM activity
// it warns (an idle_warning event), and after [leases] idle_grace more it
// acts: warn (scontrol notify: a message to the job), requeue (scontrol
// requeue) or cancel (scancel), per partition; with `is_dry_run` it only
// records what it would have done.
enum class SlurmIdleAction { kWarn, kRequeue, kCancel };
const char* SlurmIdleActionName(SlurmIdleAction a);
// "warn", "requeue" or "cancel"; false for anything else.
bool ParseSlurmIdleAction(std::string_view name, SlurmIdleAction* out);
struct SlurmIdlePolicy {
  std::chrono::milliseconds idle_after{0};  // 0: off.
  SlurmIdleAction action = SlurmIdleAction::kWarn;
  std::map<std::string, SlurmIdleAction> action_by_partition;
  bool is_dry_run = true;

  bool operator==(const SlurmIdlePolicy&) const = default;
};

struct LeasePolicy {
  std::string admin_group = "tarmac-admin";     // Members manage every lease and process (root always does).
  std::chrono::milliseconds kill_grace{10000};  // SIGTERM, then SIGKILL after this.
  std::chrono::milliseconds default_idle_timeout{0};  // 0: leases without one are never idle-reclaimed.
  // Once the head of the queue has waited this long, the GPUs it will get
  // are kept for it as they free up, even with no lease end to plan on
  // (sched/schedule.h). 0: never (the default: keeping costs throughput).
  std::chrono::milliseconds keep_for_head_after{0};
  std::chrono::milliseconds idle_grace{std::chrono::minutes(5)};  // From the idle warning to the action.
  IdleAction idle_action = IdleAction::kWarn;
  std::map<std::string, IdleAction> idle_action_by_user;
  std::map<sched::Priority, IdleAction> idle_action_by_priority;
  bool terminates_zombies = false;  // [zombies] policy = "terminate".
  bool terminates_foreign = false;  // [leases] foreign_policy = "terminate".
  // [leases] auto_drain: drain a GPU whose verdict turns drain on critical
  // evidence (kept until an admin undrains it), telling its lease's holder.
  bool is_auto_drain = false;
  sched::ZombiePolicy zombies;
  BackfillPolicy backfill;
  SlurmIdlePolicy slurm;

  bool operator==(const LeasePolicy&) const = default;
};

}  // namespace tarmac::leases
