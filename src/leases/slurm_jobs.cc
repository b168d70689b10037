// SPDX-License-Identifier: Apache-2.0
//
// Slurm jobs' GPUs as leases (lease_api.h): the prolog and epilog that
// Slurm runs on the node as root call slurm.prolog and slurm.epilog. Slurm
// decides which GPUs a job gets and when it ends; the agent records it, so
// that `tarmac run` never hands out a job's GPU and the idle policy and
// reports see it, and cleans up after it.
#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "leases/gpu_drains.h"
#include "leases/lease_answers.h"
#include "leases/lease_api.h"
#include "leases/lease_text.h"
#include "leases/scheduler_leases.h"
#include "slurm/job_answer_json.h"
#include "slurm/job_request.h"

namespace tarmac::leases {

using TimePoint = sched::TimePoint;

using nlohmann::json;

Result<json> OnSlurmProlog(LeaseCore& core, const ApiCall& c) {
  if (!c.caller.is_admin) {
    return Status::PermissionDenied("slurm.prolog is for Slurm's prolog",
                                    "it runs as root (Prolog= in slurm.conf)");
  }
  Result<slurm::PrologRequest> request = slurm::PrologRequestFromJson(c.params);
  if (!request.ok()) return request.status();
  const std::string* job = &request.value().job;
  if (!core.has_gpus) return Status::Unavailable("the agent has not read its GPUs yet");
  std::vector<std::string> uuids;
  for (int index : request.value().gpus) {
    if (index >= static_cast<int>(core.slots.size())) {
      return Status::InvalidArgument(
          fmt::format("params.gpus: no GPU {} on this node (it has {})", index, core.slots.size()));
    }
    uuids.push_back(core.slots[static_cast<size_t>(index)].uuid);
  }
  if (uuids.empty()) return json{{"job", *job}, {"lease", nullptr}, {"detail", "the job has no GPUs here"}};
  // The same job again (a requeue, a prolog run twice): its lease.
  for (const auto& [id, l] : core.book.leases()) {
    if (l.slurm_job == *job) {
      if (std::set<std::string>(l.uuids.begin(), l.uuids.end()) ==
          std::set<std::string>(uuids.begin(), uuids.end())) {
        return json{{"job", *job}, {"lease", LeaseJson(core, l, c.caller, c.now)}};
      }
      core.EndLease(id, "slurm_job_ended", fmt::format("job {} started again on other GPUs", *job), Actor{},
                    false, c.now);
      break;
    }
  }
  // A GPU to drain fails the prolog, as Slurm's administrators expect of a
  // node health check: with `tarmac slurm prolog --strict`, Slurm then
  // drains the node and requeues the job (docs/slurm.md).
  for (int index : request.value().gpus) {
    if (std::string why = WhyToDrain(core, index); !why.empty()) {
      return Status::FailedPrecondition(fmt::format("GPU {} is to drain: {}", index, why),
                                        "fix or reset it, then tarmac undrain it if it was drained by hand");
    }
  }
  // Slurm has given these GPUs to this job: another job's lease on them is
  // over (its epilog did not reach the agent).
  std::set<int64_t> stale;
  for (const auto& [id, l] : core.book.leases()) {
    for (const std::string& uuid : uuids) {
      if (std::find(l.uuids.begin(), l.uuids.end(), uuid) == l.uuids.end()) continue;
      if (l.priority == sched::Priority::kBackfill) continue;  // Gives way below.
      if (l.kind != node::LeaseKind::kSlurm) {
        return Status::FailedPrecondition(
            fmt::format("GPU {} is in lease {} of {} ({}): Slurm and tarmac both hand it out", uuid, id,
                        l.user, sched::LeaseKindName(l)),
            "leave the node's GPUs to Slurm, or release the lease");
      }
      stale.insert(id);
    }
  }
  for (int64_t id : stale) {
    core.EndLease(id, "slurm_job_ended", fmt::format("Slurm gave its GPUs to job {}", *job), Actor{}, false,
                  c.now);
  }
  sched::Lease lease;
  lease.uuids = uuids;
  lease.kind = node::LeaseKind::kSlurm;
  lease.slurm_job = *job;
  lease.user = request.value().user;
  lease.command = fmt::format("slurm job {}", *job);
  if (request.value().partition) lease.slurm_partition = *request.value().partition;
  // The prolog: what started after it is the job's (the epilog ends only that).
  if (std::optional<ProcessIdentity> prolog = core.process_control->Identify(c.peer.pid)) {
    lease.holder = {prolog->pid, prolog->start_ticks};
  }
  // Backfill on its GPUs gives way first (its grace, then an empty GPU):
  // the prolog asks again until then (tarmac slurm prolog does).
  if (!GiveWay(core, uuids, fmt::format("Slurm job {}", *job), c.now)) {
    const SchedulerClaims::Claim& claim = *core.claims.Find(fmt::format("Slurm job {}", *job));
    return json{{"job", *job},
                {"lease", nullptr},
                {"waiting", true},
                {"retry_after_ms", kClaimRetry.count()},
                {"detail", claim.waiting_for}};
  }
  sched::Caller owner{request.value().uid, request.value().user, false};
  Result<const sched::Lease*> held =
      core.GrantHeld(owner, std::move(lease), Actor{c.caller.uid, "slurm"},
                     fmt::format("Slurm job {} of {}", *job, owner.user), c.now);
  if (!held.ok()) return held.status();
  return json{{"job", *job}, {"lease", LeaseJson(core, *held.value(), c.caller, c.now)}};
}

Result<json> OnSlurmEpilog(LeaseCore& core, const ApiCall& c) {
  if (!c.caller.is_admin) {
    return Status::PermissionDenied("slurm.epilog is for Slurm's epilog",
                                    "it runs as root (Epilog= in slurm.conf)");
  }
  Result<std::string> job_id = slurm::JobOfParams(c.params);
  if (!job_id.ok()) return job_id.status();
  const std::string* job = &job_id.value();
  const sched::Lease* found = nullptr;
  for (const auto& [id, l] : core.book.leases()) {
    if (l.slurm_job == *job) found = &l;
  }
  if (found == nullptr) {
    return Status::NotFound(
        fmt::format("no lease for Slurm job {} (its prolog did not reach the agent, or it ended)", *job));
  }
  sched::Lease l = *found;
  // What the job's user left on its GPUs: terminated (SIGTERM, then SIGKILL
  // after the grace), each verified by start time and owner when signalled.
  std::vector<sched::ProcessRef> left;
  slurm::EpilogAnswer answer;
  for (int gpu : l.gpus) {
    auto it = core.processes_by_gpu.find(gpu);
    if (it == core.processes_by_gpu.end()) continue;
    for (const ProcessIdentity& p : it->second) {
      // The job's: its user's, started after its prolog (a process of the
      // same user that was there before is not the job's to end).
      if (p.uid != l.uid || p.start_ticks < l.holder.start_ticks) continue;
      if (std::any_of(left.begin(), left.end(), [&](const sched::ProcessRef& r) { return r.pid == p.pid; }))
        continue;
      left.push_back({p.pid, p.start_ticks});
      answer.terminated.push_back({p.pid, gpu, p.name});
    }
  }
  const LeaseRuntime& rt = core.runtime[l.id];
  answer.job = *job;
  answer.lease_id = l.id;
  answer.gpus = l.gpus;
  answer.held_seconds = std::max(0.0, std::chrono::duration<double>(c.now - l.granted_at).count());
  answer.idle_gpu_seconds = rt.idle_gpu_seconds;
  if (rt.utilization_samples > 0)
    answer.mean_utilization_ratio = rt.utilization_sum / static_cast<double>(rt.utilization_samples);
  answer.memory_max_bytes = rt.memory_max_bytes;
  std::string detail = fmt::format("Slurm job {} ended", *job);
  if (!answer.terminated.empty())
    detail += fmt::format("; {} process(es) it left on its GPUs are terminated", answer.terminated.size());
  core.EndLease(l.id, "slurm_job_ended", detail, Actor{c.caller.uid, "slurm"}, false, c.now);
  if (!left.empty())
    core.TerminateProcesses(l.id, l.uid, std::move(left), detail, Actor{c.caller.uid, "slurm"});
  return slurm::EpilogAnswerToJson(answer);
}

}  // namespace tarmac::leases
