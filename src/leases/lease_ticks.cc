// SPDX-License-Identifier: Apache-2.0
//
// What the lease service enforces each tick (lease_ticks.h): the GPUs as
// read, clients gone, expiry, foreign processes, zombies; then saves and
// decides.
#include "leases/lease_ticks.h"

#include <fmt/format.h>
#include <signal.h>

#include <algorithm>
#include <set>

#include "common/units.h"
#include "leases/callers.h"
#include "leases/gpu_drains.h"
#include "leases/lease_text.h"
#include "sched/lease_devices.h"
#include "sched/node_slots.h"

namespace tarmac::leases {

using nlohmann::json;
using std::chrono::duration_cast;
using std::chrono::seconds;
using TimePoint = sched::TimePoint;

// While a revoked lease's GPUs drain (up to kHandoverBound): how often the
// lease thread looks whether the listed processes have exited. Every
// millisecond in the first kHandoverFastFor after the notice or the kill (a
// batch that yields at notice is gone within it, and a real job waits on
// each look), then every kHandoverPoll.
constexpr std::chrono::milliseconds kHandoverFastPoll{1};
constexpr std::chrono::milliseconds kHandoverFastFor{100};
constexpr std::chrono::milliseconds kHandoverPoll{5};

namespace {

void CheckClients(LeaseCore& core, TimePoint now) {
  std::vector<int64_t> gone_requests;
  for (const sched::Pending& p : core.book.queue()) {
    if (!core.IsAlive(p.request.holder)) gone_requests.push_back(p.id);
  }
  for (int64_t id : gone_requests) {
    const sched::Pending* p = core.book.FindPending(id);
    core.Event("client_gone", id, p->owner.uid, p->owner.user, {}, Actor{},
               fmt::format("queued request dropped: its client (pid {}) exited", p->request.holder.pid));
    core.book.Cancel(kAgentCaller, id).IgnoreError();
    core.Erase("queue", id);
    core.memory.RememberEnded(id, "its client exited while it waited");
  }
  std::vector<std::pair<int64_t, int64_t>> gone_leases;
  for (const auto& [id, l] : core.book.leases()) {
    // A lease for a job ends with its client, whatever state it was in;
    // one without a known client has no one to end it and ends now.
    auto rt = core.runtime.find(id);
    if (rt != core.runtime.end() && rt->second.killed_at) continue;  // Ending already: CheckRevoked ends it.
    if (l.kind == node::LeaseKind::kRun && !core.IsAlive(l.holder))
      gone_leases.emplace_back(id, l.holder.pid);
  }
  for (const auto& [id, pid] : gone_leases) {
    core.EndLease(
        id, "client_gone",
        fmt::format("its client (pid {}) exited without releasing it; its processes are terminated", pid),
        Actor{}, true, now);
  }
  for (int64_t id : core.book.Expired(now)) {
    const sched::Lease* l = core.book.FindLease(id);
    core.EndLease(id, "expired",
                  l->kind == node::LeaseKind::kReservation
                      ? std::string("the reservation's time is up")
                      : fmt::format("--max-time reached after {}",
                                    FormatDuration(duration_cast<seconds>(now - l->granted_at))),
                  Actor{}, true, now);
  }
}

void CheckForeign(LeaseCore& core, const node::NodeView& reading) {
  std::vector<std::pair<const node::GpuView*, int64_t>> held;  // (GPU, lease): whole GPUs and instances.
  for (const auto& [id, l] : core.book.leases()) {
    core.runtime[id].foreign.clear();
    for (int index : l.gpus) {
      if (index >= 0 && index < static_cast<int>(reading.gpus.size()))
        held.emplace_back(&reading.gpus[static_cast<size_t>(index)], id);
    }
  }
  const std::vector<std::string>& allow = core.policy.zombies.allowlist;
  for (const auto& [gpu, lease_id] : held) {
    const node::GpuView& g = *gpu;
    const sched::Lease& l = *core.book.FindLease(lease_id);
    if (l.kind == node::LeaseKind::kPod || sched::IsLoan(l))
      continue;  // A pod's processes run as any user; a loan's GPU is its lender's.
    LeaseRuntime& rt = core.runtime[l.id];
    for (const node::ProcessView& p : g.processes) {
      const node::ProcessDetails& d = p.details;
      if (!d.exists || d.uid == l.uid || !node::IsCompute(p) || core.loans.IsLoanProcess(g.info.index, d.pid))
        continue;
      if (!sched::RunsInLease(l, g, p)) continue;  // Another instance of the GPU: not this lease's.
      if (std::find(allow.begin(), allow.end(), d.name) != allow.end()) continue;
      rt.foreign.push_back({g.info.index, d.pid, d.user, d.command});
      if (!rt.foreign_seen.insert({d.pid, d.start_ticks}).second) continue;
      std::string why = fmt::format("pid {} ({}, {}) uses {}, leased to {} (lease {})", d.pid, d.name, d.user,
                                    sched::IsMigLease(l)
                                        ? fmt::format("MIG instance {} of GPU {}", l.uuids[0], g.info.index)
                                        : fmt::format("GPU {}", g.info.index),
                                    l.user, l.id);
      core.Event("foreign_process", l.id, d.uid, d.user, {g.info.index}, Actor{}, why);
      if (core.policy.terminates_foreign)
        core.TerminateProcesses(l.id, d.uid, {{d.pid, d.start_ticks}}, why, Actor{});
    }
  }
}

}  // namespace

void Enforce(LeaseCore& core, const node::NodeView& reading, TimePoint now) {
  // GPUs as the scheduler sees them.
  std::map<int, int64_t> by_gpu = core.LeasedGpus();
  if (reading.backend_error.empty() && !reading.gpus.empty()) {
    std::vector<sched::GpuSlot> slots = sched::SlotsOf(reading);
    std::set<int> leased;
    for (const auto& [gpu, id] : by_gpu) leased.insert(gpu);
    sched::MarkUse(reading, leased, sched::kBusyUtilizationRatio, &slots);
    MarkDrained(core.drains, &slots);
    core.slots = std::move(slots);
    NoteDrainEvidence(core, reading);
    AutoDrain(core, reading, now);
    MarkMigForeign(core, reading);
    core.has_gpus = true;
    core.processes_by_gpu.clear();
    ++core.readings_seen;
    for (const node::GpuView& g : reading.gpus) {
      for (const node::ProcessView& p : g.processes) {
        if (p.details.exists) {
          core.processes_by_gpu[g.info.index].push_back(
              {p.details.pid, p.details.uid, p.details.start_ticks, 0, p.details.name});
        }
      }
    }
    MarkBackfill(core, reading, by_gpu, now);
    WatchLoans(core, reading, now);
    // A revoked lease whose processes this reading lists: the next ask
    // waits for them to exit, not for the last ask's 100 ms.
    for (const auto& [id, l] : core.book.leases()) {
      if (l.revoking_since && core.IsListedOnItsGpus(l)) core.runtime[id].reading_asked_at.reset();
    }
  }
  core.claims.MarkClaimed(now, &core.slots);
  CheckClients(core, now);
  CheckRevoked(core, now);
  if (reading.backend_error.empty()) CheckMigInstances(core, reading, now);
  CheckForeign(core, reading);
  CheckIdle(core, reading, now);
  core.FinishTerminations(now);
  core.zombies.Observe(
      reading, now,
      [&by_gpu, &core](const node::GpuView& g, const node::ProcessView& p) -> std::optional<int64_t> {
        const sched::Lease* l = nullptr;
        if (auto it = by_gpu.find(g.info.index); it != by_gpu.end()) l = core.book.FindLease(it->second);
        if (p.process.gpu_instance_id) {  // Under MIG: the lease of its instance, if any.
          l = nullptr;
          for (const auto& [id, lease] : core.book.leases()) {
            const node::MigInstance* m = sched::LeasedInstance(lease, g);
            if (m != nullptr && m->gpu_instance_id == *p.process.gpu_instance_id) l = &lease;
          }
        }
        if (l == nullptr || l->uid != p.details.uid) return std::nullopt;
        return l->id;
      });
  if (core.policy.terminates_zombies) {
    for (const sched::ZombieEvidence& z : core.zombies.Zombies()) {
      if (core.signaller.IsTerminating({z.pid, z.start_ticks})) continue;
      Status s = core.process_control->Signal({z.pid, z.start_ticks}, z.uid, SIGTERM);
      if (s.ok()) {
        core.Event("zombie_terminated", z.lease_id.value_or(0), z.uid, z.user, {z.gpu_index}, Actor{},
                   fmt::format("SIGTERM to pid {} ({}) by policy 'terminate': {}", z.pid, z.name, z.why));
        core.signaller.Watch(z.lease_id.value_or(0), z.uid, {{z.pid, z.start_ticks}},
                             now + core.policy.kill_grace);
      } else {
        core.Event("zombie_skipped", z.lease_id.value_or(0), z.uid, z.user, {z.gpu_index}, Actor{},
                   fmt::format("pid {} not signalled: {}", z.pid, s.message()));
      }
    }
  }
  SaveThenDecide(core, now);
}

void SaveThenDecide(LeaseCore& core, TimePoint now) {
  core.SendSignals(now);
  // What was enforced is saved (or kept for the next try); new grants are
  // made only while saving works, so that none is lost to a restart.
  core.CheckStateFile(now);
  if (!core.Flush(now).ok() || core.book.queue().empty()) return;
  LeaseCore::Undo undo = core.Checkpoint();
  core.Decide(now);
  GrantLoans(core, now);
  if (!core.Flush(now).ok()) core.Rollback(std::move(undo));
}

namespace {

std::optional<TimePoint> RevocationDeadline(const LeaseCore& core, TimePoint now) {
  std::optional<TimePoint> first;
  for (const auto& [id, l] : core.book.leases()) {
    if (!l.revoking_since) continue;
    TimePoint at = *l.revoking_since + core.policy.backfill.grace;
    // Killed already: it ends at a reading, or at the hand-over bound. In
    // its grace: looked at every poll, for a reading once it has stopped.
    auto rt = core.runtime.find(id);
    auto poll = [now](TimePoint since) {
      return now + (now < since + kHandoverFastFor ? kHandoverFastPoll : kHandoverPoll);
    };
    if (rt != core.runtime.end() && rt->second.killed_at) {
      at = std::min(*rt->second.killed_at + kHandoverBound, poll(*rt->second.killed_at));
    } else if (!sched::IsLoan(l)) {
      at = std::min(at, poll(*l.revoking_since));
    }
    if (!first || at < *first) first = at;
  }
  return first;
}

}  // namespace

std::optional<TimePoint> GateOpening(const LeaseCore& core) {
  // The gate's few devices first; the queue (thousands, some days) only
  // when one opens by time.
  std::optional<TimePoint> opens = core.gate.NextOpening();
  if (!opens || opens == core.gate_reading_asked_for) return std::nullopt;
  bool is_backfill_waiting =
      std::any_of(core.book.queue().begin(), core.book.queue().end(),
                  [](const sched::Pending& p) { return p.request.priority == sched::Priority::kBackfill; });
  return is_backfill_waiting ? opens : std::nullopt;
}

void AskReadingAtGateOpening(LeaseCore& core, TimePoint now) {
  std::optional<TimePoint> opens = GateOpening(core);
  if (!opens || now < *opens || !core.on_wants_reading) return;
  core.gate_reading_asked_for = opens;
  core.on_wants_reading();
}

std::optional<TimePoint> NextWake(const LeaseCore& core, TimePoint now) {
  std::optional<TimePoint> revocation = RevocationDeadline(core, now);
  std::optional<TimePoint> opens = core.on_wants_reading ? GateOpening(core) : std::nullopt;
  if (!revocation || !opens) return revocation ? revocation : opens;
  return std::min(*revocation, *opens);
}

void RecordSlurmResults(LeaseCore& core, const std::vector<SchedulerClaims::SlurmAction>& actions,
                        const std::vector<Status>& results, TimePoint now) {
  for (size_t i = 0; i < actions.size(); ++i) {
    const SchedulerClaims::SlurmAction& a = actions[i];
    std::string command = fmt::format(
        "{}", fmt::join(a.argv.begin(), a.argv.begin() + std::min<size_t>(a.argv.size(), 3), " "));
    if (auto rt = core.runtime.find(a.lease_id); rt != core.runtime.end()) {
      rt->second.acted = results[i].ok()
                             ? fmt::format("acted: ran `{}`", command)
                             : fmt::format("did not act: `{}` failed: {}", command, results[i].message());
    }
    if (results[i].ok()) {
      core.Event(fmt::format("slurm_idle_{}", SlurmIdleActionName(a.action)), a.lease_id, a.uid, a.user,
                 a.gpus, Actor{}, fmt::format("job {}: {}; ran `{}`", a.job, a.why, command));
    } else {
      core.Event("slurm_action_failed", a.lease_id, a.uid, a.user, a.gpus, Actor{},
                 fmt::format("job {}: `{}` failed: {}", a.job, command, results[i].message()));
    }
  }
  core.Flush(now).IgnoreError();  // Kept for the next commit when it fails.
}

}  // namespace tarmac::leases
