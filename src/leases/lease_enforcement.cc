// SPDX-License-Identifier: Apache-2.0
//
// What the lease service enforces: decisions that grant leases, the ends of
// leases and the signals they take, and the per-tick policies (clients gone,
// expiry, idle leases, foreign processes, zombies). See lease_service.h.
#include <fmt/format.h>
#include <signal.h>

#include <algorithm>
#include <ctime>

#include "common/random_id.h"
#include "common/units.h"
#include "leases/callers.h"
#include "leases/lease_service.h"
#include "leases/lease_text.h"
#include "node/gpu_marks.h"
#include "sched/lease_devices.h"
#include "sched/node_slots.h"

namespace tarmac::leases {

using nlohmann::json;
using std::chrono::duration_cast;
using std::chrono::seconds;

// --- decisions and actions -----------------------------------------------------

void LeaseService::Decide(TimePoint now) {
  if (book_.queue().empty() || !has_gpus_) return;
  std::vector<sched::Lease> granted = book_.Decide(slots_, now);
  waiting_.clear();
  for (const sched::Waiting& w : book_.last_decision().waiting) waiting_[w.request_id] = w;
  AnnounceRevocations(now);
  for (sched::Lease& l : granted) RecordGrant(std::move(l), "");
}

void LeaseService::RecordGrant(sched::Lease l, const std::string& more) {
  l.token = RandomHex128();  // A lease's token: 128 random bits as hex.
  book_.SetToken(l.id, l.token);
  runtime_[l.id];
  Erase("queue", l.id);
  SaveLease(l);
  Event("granted", l.id, l.uid, l.user, l.gpus, Actor{},
        fmt::format("GPU {} ({}){}{}{}", GpuList(l.gpus), fmt::join(l.uuids, ","),
                    l.ends_at ? ", until " + UtcText(Base().ToUnix(*l.ends_at)) : std::string(), more,
                    l.priority == sched::Priority::kBackfill ? kBackfillGrantMark : std::string_view()));
}

// --- backfill --------------------------------------------------------------------

void LeaseService::AnnounceRevocations(TimePoint now) {
  for (const sched::Preemption& p : book_.last_decision().preemptions) {
    const sched::Lease* l = book_.FindLease(p.lease_id);
    if (l == nullptr) continue;
    SaveLease(*l);
    CountPreemption(*l);
    const sched::Pending* wants = book_.FindPending(p.request_id);
    Event("preempting", l->id, l->uid, l->user, l->gpus, Actor{},
          fmt::format("revoked for request {}{}: ends by {} ({} s of grace)", p.request_id,
                      wants != nullptr ? " of " + wants->owner.user : std::string(),
                      UtcText(Base().ToUnix(now + policy_.backfill.grace)),
                      duration_cast<seconds>(policy_.backfill.grace).count()));
  }
}

void LeaseService::CountPreemption(const sched::Lease& l) {
  ++backfill_preemptions_;
  for (int g : l.gpus) ++backfill_preemptions_by_gpu_[g];
  if (on_revocation_) on_revocation_();
}

void LeaseService::KillNow(int64_t id) { signaller_.KillNow(id); }

// While a revoked lease's GPUs drain (up to kHandoverBound): how often the lease thread looks whether the
// listed processes have exited, and how often it may ask for a reading that would show it.
constexpr std::chrono::milliseconds kHandoverPoll{5};
constexpr std::chrono::milliseconds kReadingAskEvery{100};

bool LeaseService::CheckRevoked(TimePoint now) {
  std::vector<std::pair<int64_t, int64_t>> due;  // (lease, for request)
  for (const auto& [id, l] : book_.leases()) {
    if (!l.revoking_since) continue;
    auto rt = runtime_.find(id);
    bool is_let_go = rt != runtime_.end() && rt->second.killed_at.has_value();
    if (is_let_go || now >= *l.revoking_since + policy_.backfill.grace) {
      due.emplace_back(id, l.revoked_for);
    } else if (!sched::IsLoan(l)) {
      // In its grace: once what it ran has exited (or while the last reading
      // lists nothing there: what it started since may have come and gone),
      // a reading at once shows the GPU empty to its holder, which confirms
      // that before letting go, rather than the next sampling tick.
      AskReadingOnceExited(l, &runtime_[id], now);
    }
  }
  bool is_changed = false;
  for (const auto& [id, for_request] : due) {
    const sched::Lease l = *book_.FindLease(id);
    Runtime& rt = runtime_[id];
    std::string for_whom = for_request != 0                ? fmt::format("request {}", for_request)
                           : !rt.revoked_for_claim.empty() ? rt.revoked_for_claim
                                                           : std::string("another scheduler's job");
    std::string why = rt.is_released
                          ? fmt::format("let go while revoked for {}", for_whom)
                          : fmt::format("backfill lease revoked for {}; its grace of {} s has passed",
                                        for_whom, duration_cast<seconds>(policy_.backfill.grace).count());
    if (!rt.killed_at) {
      // Its grace was its time to let go: what is left is killed at once.
      // The lease stays, revoking for its request (which then takes no
      // other GPU), until a reading shows its GPUs empty.
      KillRevokedNow(l, why, now);
      is_changed = true;
    }
    if (IsListedOnItsGpus(l) && now < *rt.killed_at + kHandoverBound) {
      AskReadingOnceExited(l, &rt, now);
      continue;
    }
    if (IsListedOnItsGpus(l))
      why += fmt::format("; its GPUs still list a process {} s after SIGKILL", kHandoverBound.count());
    EndLease(id, rt.is_released ? "released" : "preempted", why, Actor{}, false, now);
    is_changed = true;
  }
  return is_changed;
}

void LeaseService::AskReadingOnceExited(const sched::Lease& l, Runtime* rt, TimePoint now) {
  if (!on_wants_reading_ || (rt->reading_asked_at && now < *rt->reading_asked_at + kReadingAskEvery)) return;
  for (int g : l.gpus) {
    auto listed = processes_by_gpu_.find(g);
    if (listed == processes_by_gpu_.end()) continue;
    for (const ProcessIdentity& p : listed->second) {
      if (IsAlive({p.pid, p.start_ticks})) return;
    }
  }
  rt->reading_asked_at = now;
  on_wants_reading_();
}

bool LeaseService::IsListedOnItsGpus(const sched::Lease& l) const {
  // A loan's GPU stays its lender's: nobody waits for it to be empty.
  if (sched::IsMigLease(l) || sched::IsExternal(l) || sched::IsLoan(l)) return false;
  return std::any_of(l.gpus.begin(), l.gpus.end(), [this](int g) REQUIRES(mu_) {
    auto listed = processes_by_gpu_.find(g);
    return listed != processes_by_gpu_.end() && !listed->second.empty();
  });
}

void LeaseService::EndLease(int64_t id, const std::string& kind, const std::string& detail,
                            const Actor& actor, bool terminate, TimePoint now,
                            const std::set<int64_t>& spared) {
  const sched::Lease* found = book_.FindLease(id);
  if (found == nullptr) return;
  sched::Lease l = *found;
  std::vector<sched::ProcessRef> victims;
  if (terminate) victims = LeaseVictims(l, spared);
  // A GPU is handed on empty: while the driver lists any process on it, it
  // counts as occupied (until a reading shows it empty).
  if (IsListedOnItsGpus(l)) {
    for (int g : l.gpus) {
      if (g >= 0 && static_cast<size_t>(g) < slots_.size())
        slots_[static_cast<size_t>(g)].has_foreign_processes = true;
    }
  }
  if (l.priority == sched::Priority::kBackfill) {
    backfill_gpu_seconds_ended_ +=
        static_cast<double>(l.gpus.size()) * std::chrono::duration<double>(now - l.granted_at).count();
  }
  book_.Release(kAgentCaller, id, now).IgnoreError();  // Found above; the agent may.
  runtime_.erase(id);
  Erase("lease", id);
  SaveShare(l.uid);
  memory_.RememberEnded(id, detail, kind);
  Event(kind, id, l.uid, l.user, l.gpus, actor, detail);
  if (!victims.empty()) TerminateProcesses(id, l.uid, std::move(victims), detail, actor, now);
}

void LeaseService::TerminateProcesses(int64_t lease_id, int64_t uid, std::vector<sched::ProcessRef> processes,
                                      const std::string& why, const Actor& actor, TimePoint) {
  signaller_.Ask(lease_id, uid, std::move(processes), why, actor);
}

void LeaseService::SendSignals(TimePoint now) {
  RecordSignals(signaller_.SendAsked(now, policy_.kill_grace));
}

void LeaseService::FinishTerminations(TimePoint now) {
  RecordSignals(signaller_.Finish(now, policy_.kill_grace));
}

void LeaseService::RecordSignals(const std::vector<SignalEvent>& events) {
  for (const SignalEvent& e : events)
    Event(e.kind, e.lease_id, e.uid, UserName(e.uid), {}, e.actor, e.detail);
}

bool LeaseService::IsAlive(const sched::ProcessRef& ref) {
  if (ref.pid == 0) return false;
  std::optional<ProcessIdentity> now = processes_->Identify(ref.pid);
  return now && now->start_ticks == ref.start_ticks;
}

void LeaseService::CheckClients(TimePoint now) {
  std::vector<int64_t> gone_requests;
  for (const sched::Pending& p : book_.queue()) {
    if (!IsAlive(p.request.holder)) gone_requests.push_back(p.id);
  }
  for (int64_t id : gone_requests) {
    const sched::Pending* p = book_.FindPending(id);
    Event("client_gone", id, p->owner.uid, p->owner.user, {}, Actor{},
          fmt::format("queued request dropped: its client (pid {}) exited", p->request.holder.pid));
    book_.Cancel(kAgentCaller, id).IgnoreError();
    Erase("queue", id);
    memory_.RememberEnded(id, "its client exited while it waited");
  }
  std::vector<std::pair<int64_t, int64_t>> gone_leases;
  for (const auto& [id, l] : book_.leases()) {
    // A lease for a job ends with its client, whatever state it was in;
    // one without a known client has no one to end it and ends now.
    auto rt = runtime_.find(id);
    if (rt != runtime_.end() && rt->second.killed_at) continue;  // Ending already: CheckRevoked ends it.
    if (l.kind == node::LeaseKind::kRun && !IsAlive(l.holder)) gone_leases.emplace_back(id, l.holder.pid);
  }
  for (const auto& [id, pid] : gone_leases) {
    EndLease(
        id, "client_gone",
        fmt::format("its client (pid {}) exited without releasing it; its processes are terminated", pid),
        Actor{}, true, now);
  }
  for (int64_t id : book_.Expired(now)) {
    const sched::Lease* l = book_.FindLease(id);
    EndLease(id, "expired",
             l->kind == node::LeaseKind::kReservation
                 ? std::string("the reservation's time is up")
                 : fmt::format("--max-time reached after {}",
                               FormatDuration(duration_cast<seconds>(now - l->granted_at))),
             Actor{}, true, now);
  }
}

IdleAction LeaseService::IdleActionFor(const sched::Lease& l) const {
  // The kubelet or Slurm owns those GPUs: an idle pod or job is reported,
  // never ended by tarmac.
  if (sched::IsExternal(l)) return IdleAction::kWarn;
  if (auto it = policy_.idle_action_by_user.find(l.user); it != policy_.idle_action_by_user.end())
    return it->second;
  if (auto it = policy_.idle_action_by_priority.find(l.priority);
      it != policy_.idle_action_by_priority.end()) {
    return it->second;
  }
  return policy_.idle_action;
}

std::chrono::milliseconds LeaseService::IdleTimeoutOf(const sched::Lease& l) const {
  if (l.kind == node::LeaseKind::kSlurm) return policy_.slurm.idle_after;  // [slurm]: 0 is off.
  if (l.idle_timeout) return *l.idle_timeout;
  return policy_.default_idle_timeout;
}

void LeaseService::CheckIdle(const node::NodeView& fleet, TimePoint now) {
  std::vector<std::tuple<int64_t, IdleAction, std::string>> acts;
  for (const auto& [id, l] : book_.leases()) {
    Runtime& rt = runtime_[id];
    auto [is_active, is_known] = ObserveActivity(l, fleet, rt);
    if (!is_active && is_known && rt.last_tick) {
      rt.idle_gpu_seconds +=
          std::chrono::duration<double>(now - *rt.last_tick).count() * static_cast<double>(l.gpus.size());
    }
    rt.last_tick = now;
    if (is_active || !is_known) {
      if (l.idle_since) {
        book_.SetIdleSince(id, std::nullopt);
        SaveLease(*book_.FindLease(id));
      }
      rt.warned_at.reset();
      rt.has_acted = false;
      rt.warning.clear();
      rt.acted.clear();
      continue;
    }
    if (!l.idle_since) {
      book_.SetIdleSince(id, now);
      SaveLease(*book_.FindLease(id));
    }
    TimePoint idle_since = *book_.FindLease(id)->idle_since;
    std::chrono::milliseconds timeout = IdleTimeoutOf(l);
    if (timeout.count() <= 0 || now - idle_since < timeout) continue;
    IdleAction action = IdleActionFor(l);
    if (!rt.warned_at) {
      rt.warned_at = now;
      std::string policy = l.kind != node::LeaseKind::kSlurm
                               ? std::string(IdleActionName(action))
                               : fmt::format("{}{}", SlurmIdleActionName(SlurmActionFor(l)),
                                             policy_.slurm.is_dry_run ? " (dry run)" : "");
      rt.warning = fmt::format("lease {} idle for {}: no SM activity from {}'s processes on {}; policy '{}'",
                               id, FormatDuration(duration_cast<seconds>(now - idle_since)), l.user,
                               DeviceList(l), policy);
      Event("idle_warning", id, l.uid, l.user, l.gpus, Actor{},
            rt.warning + " acts in " + FormatDuration(policy_.idle_grace));
      continue;
    }
    if (rt.has_acted || now - *rt.warned_at < policy_.idle_grace) continue;
    rt.has_acted = true;
    acts.emplace_back(id, action,
                      fmt::format("idle for {} (timeout {}, then {} of grace): no SM activity on {}",
                                  FormatDuration(duration_cast<seconds>(now - idle_since)),
                                  FormatDuration(duration_cast<seconds>(timeout)),
                                  FormatDuration(policy_.idle_grace), DeviceList(l)));
  }
  ActOnIdle(acts, now);
}

LeaseService::Activity LeaseService::ObserveActivity(const sched::Lease& l, const node::NodeView& fleet,
                                                     Runtime& rt) const {
  bool is_active = false;
  bool is_known = true;
  for (int index : l.gpus) {
    if (index < 0 || index >= static_cast<int>(fleet.gpus.size())) continue;
    const node::GpuView& g = fleet.gpus[static_cast<size_t>(index)];
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
          IsLoanProcess(index, p.details.pid)) {
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
      if ((l.kind != node::LeaseKind::kPod && p.details.uid != l.uid) || IsLoanProcess(index, p.details.pid))
        continue;
      if (p.process.sm_utilization_ratio ? *p.process.sm_utilization_ratio > 0
                                         : g.sample.utilization_gpu_ratio.value_or(0) > 0) {
        is_active = true;
      }
    }
  }
  return Activity{is_active, is_known};
}

void LeaseService::ActOnIdle(const std::vector<std::tuple<int64_t, IdleAction, std::string>>& acts,
                             TimePoint now) {
  for (const auto& [id, action, why] : acts) {
    const sched::Lease* l = book_.FindLease(id);
    if (l->kind == node::LeaseKind::kSlurm) {  // Slurm's to end: ask it, per [slurm].
      QueueSlurmAction(*l, why);
      continue;
    }
    if (action == IdleAction::kWarn) {
      runtime_[id].acted = "warned only: the lease is kept";
      Event("idle_kept", id, l->uid, l->user, l->gpus, Actor{}, why + "; policy 'warn': the lease is kept");
    } else {
      EndLease(
          id, action == IdleAction::kRelease ? "idle_released" : "idle_terminated",
          why + (action == IdleAction::kRelease ? "; policy 'release': the lease ends"
                                                : "; policy 'terminate': the lease ends and its processes "
                                                  "are terminated"),
          Actor{}, action == IdleAction::kTerminate, now);
    }
  }
}

void LeaseService::CheckForeign(const node::NodeView& fleet, TimePoint now) {
  std::vector<std::pair<const node::GpuView*, int64_t>> held;  // (GPU, lease): whole GPUs and instances.
  for (const auto& [id, l] : book_.leases()) {
    runtime_[id].foreign = json::array();
    for (int index : l.gpus) {
      if (index >= 0 && index < static_cast<int>(fleet.gpus.size()))
        held.emplace_back(&fleet.gpus[static_cast<size_t>(index)], id);
    }
  }
  const std::vector<std::string>& allow = policy_.zombies.allowlist;
  for (const auto& [gpu, lease_id] : held) {
    const node::GpuView& g = *gpu;
    const sched::Lease& l = *book_.FindLease(lease_id);
    if (l.kind == node::LeaseKind::kPod || sched::IsLoan(l))
      continue;  // A pod's processes run as any user; a loan's GPU is its lender's.
    Runtime& rt = runtime_[l.id];
    for (const node::ProcessView& p : g.processes) {
      const node::ProcessDetails& d = p.details;
      if (!d.exists || d.uid == l.uid || !node::IsCompute(p) || IsLoanProcess(g.info.index, d.pid)) continue;
      if (!sched::RunsInLease(l, g, p)) continue;  // Another instance of the GPU: not this lease's.
      if (std::find(allow.begin(), allow.end(), d.name) != allow.end()) continue;
      rt.foreign.push_back({{"gpu", g.info.index}, {"pid", d.pid}, {"user", d.user}, {"command", d.command}});
      if (!rt.foreign_seen.insert({d.pid, d.start_ticks}).second) continue;
      std::string why = fmt::format("pid {} ({}, {}) uses {}, leased to {} (lease {})", d.pid, d.name, d.user,
                                    sched::IsMigLease(l)
                                        ? fmt::format("MIG instance {} of GPU {}", l.uuids[0], g.info.index)
                                        : fmt::format("GPU {}", g.info.index),
                                    l.user, l.id);
      Event("foreign_process", l.id, d.uid, d.user, {g.info.index}, Actor{}, why);
      if (policy_.terminates_foreign)
        TerminateProcesses(l.id, d.uid, {{d.pid, d.start_ticks}}, why, Actor{}, now);
    }
  }
}

void LeaseService::OnTick(const node::NodeView& fleet, TimePoint now) {
  MutexLock lock(&mu_);
  Enforce(fleet, now);
  ExpireWaiters(now);
  PublishMarks();
  if (slurm_actions_.empty()) return;
  // Slurm's commands run without the lock: API calls do not wait for them.
  std::vector<SlurmAct> acts = std::move(slurm_actions_);
  slurm_actions_.clear();
  std::function<Status(const std::vector<std::string>&)> run = slurm_command_;
  lock.Unlock();
  std::vector<Status> results;
  for (const SlurmAct& a : acts) {
    results.push_back(run ? run(a.argv)
                          : Status::Unavailable("the agent has no way to run Slurm's commands"));
  }
  lock.Lock();
  for (size_t i = 0; i < acts.size(); ++i) {
    const SlurmAct& a = acts[i];
    std::string command = fmt::format(
        "{}", fmt::join(a.argv.begin(), a.argv.begin() + std::min<size_t>(a.argv.size(), 3), " "));
    if (auto rt = runtime_.find(a.lease_id); rt != runtime_.end()) {
      rt->second.acted = results[i].ok()
                             ? fmt::format("acted: ran `{}`", command)
                             : fmt::format("did not act: `{}` failed: {}", command, results[i].message());
    }
    if (results[i].ok()) {
      Event(fmt::format("slurm_idle_{}", SlurmIdleActionName(a.action)), a.lease_id, a.uid, a.user, a.gpus,
            Actor{}, fmt::format("job {}: {}; ran `{}`", a.job, a.why, command));
    } else {
      Event("slurm_action_failed", a.lease_id, a.uid, a.user, a.gpus, Actor{},
            fmt::format("job {}: `{}` failed: {}", a.job, command, results[i].message()));
    }
  }
  Flush(now).IgnoreError();  // Kept for the next commit when it fails.
}

SlurmIdleAction LeaseService::SlurmActionFor(const sched::Lease& l) const {
  auto it = policy_.slurm.action_by_partition.find(l.slurm_partition);
  return it != policy_.slurm.action_by_partition.end() ? it->second : policy_.slurm.action;
}

void LeaseService::QueueSlurmAction(const sched::Lease& l, const std::string& why) {
  SlurmIdleAction action = SlurmActionFor(l);
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
  if (policy_.slurm.is_dry_run) {
    runtime_[l.id].acted = fmt::format("would have run `{} {}` ([slurm] dry_run = true)", argv[0], argv[1]);
    Event("slurm_idle_dry_run", l.id, l.uid, l.user, l.gpus, Actor{},
          fmt::format("job {}: {}; would {} it ({} {}), [slurm] dry_run = true", l.slurm_job, why,
                      SlurmIdleActionName(action), argv[0], argv[1]));
    return;
  }
  runtime_[l.id].acted = fmt::format("is running `{} {}`", argv[0], argv[1]);
  slurm_actions_.push_back({l.id, l.uid, l.user, l.gpus, l.slurm_job, action, why, std::move(argv)});
}

void LeaseService::Enforce(const node::NodeView& fleet, TimePoint now) {
  // GPUs as the scheduler sees them.
  std::map<int, int64_t> by_gpu = LeasedGpus();
  if (fleet.backend_error.empty() && !fleet.gpus.empty()) {
    std::vector<sched::GpuSlot> slots = sched::SlotsOf(fleet);
    for (sched::GpuSlot& s : slots) {
      const node::GpuView& g = fleet.gpus[static_cast<size_t>(s.index)];
      if (by_gpu.count(s.index) == 0) {
        s.has_foreign_processes = std::any_of(g.processes.begin(), g.processes.end(), node::IsCompute);
      }
    }
    slots_ = std::move(slots);
    MarkMigForeign(fleet);
    has_gpus_ = true;
    processes_by_gpu_.clear();
    for (const node::GpuView& g : fleet.gpus) {
      for (const node::ProcessView& p : g.processes) {
        if (p.details.exists) {
          processes_by_gpu_[g.info.index].push_back(
              {p.details.pid, p.details.uid, p.details.start_ticks, 0, p.details.name});
        }
      }
    }
    MarkBackfill(fleet, by_gpu, now);
    WatchLoans(fleet, now);
    // A revoked lease whose processes this reading lists: the next ask
    // waits for them to exit, not for the last ask's 100 ms.
    for (const auto& [id, l] : book_.leases()) {
      if (l.revoking_since && IsListedOnItsGpus(l)) runtime_[id].reading_asked_at.reset();
    }
  }
  MarkClaimed(now);
  CheckClients(now);
  CheckRevoked(now);
  if (fleet.backend_error.empty()) CheckMigInstances(fleet, now);
  CheckForeign(fleet, now);
  CheckIdle(fleet, now);
  FinishTerminations(now);
  zombies_.Observe(fleet, now,
                   [&by_gpu, this](const node::GpuView& g, const node::ProcessView& p)
                       REQUIRES(mu_) -> std::optional<int64_t> {
                         const sched::Lease* l = nullptr;
                         if (auto it = by_gpu.find(g.info.index); it != by_gpu.end())
                           l = book_.FindLease(it->second);
                         if (p.process.gpu_instance_id) {  // Under MIG: the lease of its instance, if any.
                           l = nullptr;
                           for (const auto& [id, lease] : book_.leases()) {
                             const node::MigInstance* m = sched::LeasedInstance(lease, g);
                             if (m != nullptr && m->gpu_instance_id == *p.process.gpu_instance_id) l = &lease;
                           }
                         }
                         if (l == nullptr || l->uid != p.details.uid) return std::nullopt;
                         return l->id;
                       });
  if (policy_.terminates_zombies) {
    for (const sched::ZombieEvidence& z : zombies_.Zombies()) {
      if (signaller_.IsTerminating({z.pid, z.start_ticks})) continue;
      Status s = processes_->Signal({z.pid, z.start_ticks}, z.uid, SIGTERM);
      if (s.ok()) {
        Event("zombie_terminated", z.lease_id.value_or(0), z.uid, z.user, {z.gpu_index}, Actor{},
              fmt::format("SIGTERM to pid {} ({}) by policy 'terminate': {}", z.pid, z.name, z.why));
        signaller_.Watch(z.lease_id.value_or(0), z.uid, {{z.pid, z.start_ticks}}, now + policy_.kill_grace);
      } else {
        Event("zombie_skipped", z.lease_id.value_or(0), z.uid, z.user, {z.gpu_index}, Actor{},
              fmt::format("pid {} not signalled: {}", z.pid, s.message()));
      }
    }
  }
  SaveThenDecide(now);
}

void LeaseService::SaveThenDecide(TimePoint now) {
  SendSignals(now);
  // What was enforced is saved (or kept for the next try); new grants are
  // made only while saving works, so that none is lost to a restart.
  CheckStateFile(now);
  if (!Flush(now).ok() || book_.queue().empty()) return;
  Undo undo = Checkpoint();
  Decide(now);
  GrantLoans(now);
  if (!Flush(now).ok()) Rollback(std::move(undo));
}

std::optional<sched::TimePoint> LeaseService::RevocationDeadline() const {
  MutexLock lock(&mu_);
  std::optional<TimePoint> first;
  for (const auto& [id, l] : book_.leases()) {
    if (!l.revoking_since) continue;
    TimePoint at = *l.revoking_since + policy_.backfill.grace;
    // Killed already: it ends at a reading, or at the hand-over bound. In
    // its grace: looked at every poll, for a reading once it has stopped.
    auto rt = runtime_.find(id);
    if (rt != runtime_.end() && rt->second.killed_at) {
      at = std::min(*rt->second.killed_at + kHandoverBound, clock_->SteadyNow() + kHandoverPoll);
    } else if (!sched::IsLoan(l)) {
      at = std::min(at, clock_->SteadyNow() + kHandoverPoll);
    }
    if (!first || at < *first) first = at;
  }
  return first;
}

void LeaseService::EndRevoked() {
  MutexLock lock(&mu_);
  TimePoint now = clock_->SteadyNow();
  // Between its ends, a look in a lease's grace (every kHandoverPoll)
  // changes nothing but maybe asks for a reading: nothing to decide.
  if (!CheckRevoked(now)) return;
  SaveThenDecide(now);
  PublishMarks();
}

node::AgentFigures LeaseService::ComputeFigures() const {
  TimePoint now = clock_->SteadyNow();
  node::AgentFigures f;
  for (sched::Priority p : {sched::Priority::kBackfill, sched::Priority::kLow, sched::Priority::kNormal,
                            sched::Priority::kHigh}) {
    f.leases_by_priority[sched::PriorityName(p)] = 0;
  }
  f.backfill_gpu_seconds = backfill_gpu_seconds_ended_;
  for (const auto& [id, l] : book_.leases()) {
    f.leases_by_priority[sched::PriorityName(l.priority)]++;
    if (l.kind == node::LeaseKind::kPod) f.kube_pod_leases++;
    if (l.priority == sched::Priority::kBackfill) {
      f.backfill_gpu_seconds +=
          static_cast<double>(l.gpus.size()) * std::chrono::duration<double>(now - l.granted_at).count();
    }
  }
  f.queued = static_cast<int64_t>(book_.queue().size());
  f.backfill_preemptions = backfill_preemptions_;
  return f;
}

}  // namespace tarmac::leases
