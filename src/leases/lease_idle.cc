// SPDX-License-Identifier: Apache-2.0
//
// The idle policy (lease_ticks.h): whether each lease's own processes
// computed on its GPUs this tick, its warning once idle past its timeout,
// and the action its policy takes after [leases] idle_grace (a Slurm job's
// through Slurm's commands, run after the tick).
#include <fmt/format.h>

#include <algorithm>
#include <tuple>

#include "common/units.h"
#include "leases/lease_text.h"
#include "leases/lease_ticks.h"
#include "node/gpu_marks.h"
#include "sched/lease_devices.h"

namespace tarmac::leases {

using std::chrono::duration_cast;
using std::chrono::seconds;

namespace {

using TimePoint = sched::TimePoint;

// Whether the lease's own processes computed on its GPUs this tick, and
// whether that could be known.
struct Activity {
  bool is_active = false;
  bool is_known = true;
};

IdleAction IdleActionFor(const LeaseCore& core, const sched::Lease& l) {
  // The kubelet or Slurm owns those GPUs: an idle pod or job is reported,
  // never ended by tarmac.
  if (sched::IsExternal(l)) return IdleAction::kWarn;
  if (auto it = core.policy.idle_action_by_user.find(l.user); it != core.policy.idle_action_by_user.end())
    return it->second;
  if (auto it = core.policy.idle_action_by_priority.find(l.priority);
      it != core.policy.idle_action_by_priority.end()) {
    return it->second;
  }
  return core.policy.idle_action;
}

std::chrono::milliseconds IdleTimeoutOf(const LeaseCore& core, const sched::Lease& l) {
  if (l.kind == node::LeaseKind::kSlurm) return core.policy.slurm.idle_after;  // [slurm]: 0 is off.
  if (l.idle_timeout) return *l.idle_timeout;
  return core.policy.default_idle_timeout;
}

SlurmIdleAction SlurmActionFor(const LeaseCore& core, const sched::Lease& l) {
  auto it = core.policy.slurm.action_by_partition.find(l.slurm_partition);
  return it != core.policy.slurm.action_by_partition.end() ? it->second : core.policy.slurm.action;
}

void QueueSlurmAction(LeaseCore& core, const sched::Lease& l, const std::string& why) {
  SlurmIdleAction action = SlurmActionFor(core, l);
  std::vector<std::string> argv;
  switch (action) {
    case SlurmIdleAction::kWarn:
      argv = {"scontrol", "notify", l.slurm_job,
              fmt::format("tarmac: this job's GPUs ({}) have been idle: {}", GpuList(l.gpus), why)};
      break;
    case SlurmIdleAction::kRequeue:
      argv = {"scontrol", "requeue", l.slurm_job};
      break;
    case SlurmIdleAction::kCancel:
      argv = {"scancel", l.slurm_job};
      break;
  }
  if (core.policy.slurm.is_dry_run) {
    core.runtime[l.id].acted =
        fmt::format("would have run `{} {}` ([slurm] dry_run = true)", argv[0], argv[1]);
    core.Event("slurm_idle_dry_run", l.id, l.uid, l.user, l.gpus, Actor{},
               fmt::format("job {}: {}; would {} it ({} {}), [slurm] dry_run = true", l.slurm_job, why,
                           SlurmIdleActionName(action), argv[0], argv[1]));
    return;
  }
  core.runtime[l.id].acted = fmt::format("is running `{} {}`", argv[0], argv[1]);
  core.claims.QueueSlurmAction({l.id, l.uid, l.user, l.gpus, l.slurm_job, action, why, std::move(argv)});
}

Activity ObserveActivity(const LeaseCore& core, const sched::Lease& l, const node::NodeView& reading,
                         LeaseRuntime& rt) {
  bool is_active = false;
  bool is_known = true;
  for (int index : l.gpus) {
    if (index < 0 || index >= static_cast<int>(reading.gpus.size())) continue;
    const node::GpuView& g = reading.gpus[static_cast<size_t>(index)];
    if (g.sample.health != node::GpuHealth::kOk) is_known = false;
    if (sched::IsMigLease(l)) {
      // An instance: its engine's activity (GPM) says; without it, nothing
      // is known and the policy never acts.
      const node::MigInstance* m = sched::LeasedInstance(l, g);
      if (m == nullptr || !m->graphics_engine_active_ratio) {
        is_known = false;
        continue;
      }
      rt.utilization_sum += *m->graphics_engine_active_ratio;
      rt.utilization_samples++;
      rt.memory_max_bytes = std::max(rt.memory_max_bytes, m->memory_used_bytes.value_or(0));
      is_active |= *m->graphics_engine_active_ratio > node::kMigIdleEngineRatio;
      continue;
    }
    // The lease's figures are its holder's: with another user's process
    // on the GPU, its own processes' memory and SM, not the GPU's.
    bool has_others = false;
    bool has_own_sm = true;
    int64_t own_memory = 0;
    double own_sm = 0;
    for (const node::ProcessView& p : g.processes) {
      if ((l.kind != node::LeaseKind::kPod && p.details.uid != l.uid) ||
          core.loans.IsLoanProcess(index, p.details.pid)) {
        has_others = true;
        continue;
      }
      own_memory += p.process.used_memory_bytes.value_or(0);
      if (p.process.sm_utilization_ratio)
        own_sm += *p.process.sm_utilization_ratio;
      else
        has_own_sm = false;
    }
    if (g.sample.health == node::GpuHealth::kOk && g.sample.utilization_gpu_ratio &&
        (!has_others || has_own_sm)) {
      rt.utilization_sum += has_others ? std::min(1.0, own_sm) : *g.sample.utilization_gpu_ratio;
      rt.utilization_samples++;
    }
    rt.memory_max_bytes =
        std::max(rt.memory_max_bytes, has_others ? own_memory : g.sample.memory_used_bytes.value_or(0));
    for (const node::ProcessView& p : g.processes) {
      // A pod's processes run as any user; a loan's are not its lender's.
      if ((l.kind != node::LeaseKind::kPod && p.details.uid != l.uid) ||
          core.loans.IsLoanProcess(index, p.details.pid))
        continue;
      if (p.process.sm_utilization_ratio ? *p.process.sm_utilization_ratio > 0
                                         : g.sample.utilization_gpu_ratio.value_or(0) > 0) {
        is_active = true;
      }
    }
  }
  return Activity{is_active, is_known};
}

void ActOnIdle(LeaseCore& core, const std::vector<std::tuple<int64_t, IdleAction, std::string>>& acts,
               TimePoint now) {
  for (const auto& [id, action, why] : acts) {
    const sched::Lease* l = core.book.FindLease(id);
    if (l->kind == node::LeaseKind::kSlurm) {  // Slurm's to end: ask it, per [slurm].
      QueueSlurmAction(core, *l, why);
      continue;
    }
    if (action == IdleAction::kWarn) {
      core.runtime[id].acted = "warned only: the lease is kept";
      core.Event("idle_kept", id, l->uid, l->user, l->gpus, Actor{},
                 why + "; policy 'warn': the lease is kept");
    } else {
      core.EndLease(
          id, action == IdleAction::kRelease ? "idle_released" : "idle_terminated",
          why + (action == IdleAction::kRelease ? "; policy 'release': the lease ends"
                                                : "; policy 'terminate': the lease ends and its processes "
                                                  "are terminated"),
          Actor{}, action == IdleAction::kTerminate, now);
    }
  }
}

}  // namespace

void CheckIdle(LeaseCore& core, const node::NodeView& reading, TimePoint now) {
  std::vector<std::tuple<int64_t, IdleAction, std::string>> acts;
  for (const auto& [id, l] : core.book.leases()) {
    LeaseRuntime& rt = core.runtime[id];
    auto [is_active, is_known] = ObserveActivity(core, l, reading, rt);
    if (!is_active && is_known && rt.last_tick) {
      rt.idle_gpu_seconds +=
          std::chrono::duration<double>(now - *rt.last_tick).count() * static_cast<double>(l.gpus.size());
    }
    rt.last_tick = now;
    if (is_active || !is_known) {
      if (l.idle_since) {
        core.book.SetIdleSince(id, std::nullopt);
        core.SaveLease(*core.book.FindLease(id));
      }
      rt.warned_at.reset();
      rt.has_acted = false;
      rt.warning.clear();
      rt.acted.clear();
      continue;
    }
    if (!l.idle_since) {
      core.book.SetIdleSince(id, now);
      core.SaveLease(*core.book.FindLease(id));
    }
    TimePoint idle_since = *core.book.FindLease(id)->idle_since;
    std::chrono::milliseconds timeout = IdleTimeoutOf(core, l);
    if (timeout.count() <= 0 || now - idle_since < timeout) continue;
    IdleAction action = IdleActionFor(core, l);
    if (!rt.warned_at) {
      rt.warned_at = now;
      std::string policy = l.kind != node::LeaseKind::kSlurm
                               ? std::string(IdleActionName(action))
                               : fmt::format("{}{}", SlurmIdleActionName(SlurmActionFor(core, l)),
                                             core.policy.slurm.is_dry_run ? " (dry run)" : "");
      rt.warning = fmt::format("lease {} idle for {}: no SM activity from {}'s processes on {}; policy '{}'",
                               id, FormatDuration(duration_cast<seconds>(now - idle_since)), l.user,
                               DeviceList(l), policy);
      core.Event("idle_warning", id, l.uid, l.user, l.gpus, Actor{},
                 rt.warning + " acts in " + FormatDuration(core.policy.idle_grace));
      continue;
    }
    if (rt.has_acted || now - *rt.warned_at < core.policy.idle_grace) continue;
    rt.has_acted = true;
    acts.emplace_back(id, action,
                      fmt::format("idle for {} (timeout {}, then {} of grace): no SM activity on {}",
                                  FormatDuration(duration_cast<seconds>(now - idle_since)),
                                  FormatDuration(duration_cast<seconds>(timeout)),
                                  FormatDuration(core.policy.idle_grace), DeviceList(l)));
  }
  ActOnIdle(core, acts, now);
}

}  // namespace tarmac::leases
