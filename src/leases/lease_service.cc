// SPDX-License-Identifier: Apache-2.0
#include "leases/lease_service.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/json_fields.h"
#include "ipc/method_table.h"
#include "leases/callers.h"
#include "leases/lease_answers.h"
#include "leases/lease_ticks.h"
#include "leases/scheduler_leases.h"

namespace tarmac::leases {

LeaseService::LeaseService(LeasePolicy policy, std::unique_ptr<store::LeaseState> state,
                           ProcessControl* processes, Clock* clock, Logger* logger)
    : clock_(clock), core_(std::move(policy), std::move(state), processes, clock, logger) {
  MutexLock lock(&mu_);
  PublishMarks();  // Figures (every priority at 0) from the start.
}

Status LeaseService::Restore() {
  MutexLock lock(&mu_);
  Status s = core_.Restore();
  PublishMarks();
  return s;
}

void LeaseService::SetPolicy(LeasePolicy policy) {
  MutexLock lock(&mu_);
  core_.zombies.SetPolicy(policy.zombies);
  core_.gate.SetPolicy(policy.backfill);
  core_.loans.SetPolicy(policy.backfill.lend_after, policy.backfill.lend_margin_bytes);
  core_.policy = std::move(policy);
}

void LeaseService::SeedBackfillLastUse(const std::map<std::string, int64_t>& unix_by_uuid) {
  MutexLock lock(&mu_);
  sched::TimeBase base = core_.Base();
  std::map<std::string, TimePoint> seeded;
  for (const auto& [uuid, unix] : unix_by_uuid)
    seeded[uuid] = std::min(base.steady, base.FromUnix(static_cast<double>(unix)));
  core_.gate.SeedLastUse(seeded);
}

std::string LeaseService::AdminGroup() const {
  MutexLock lock(&mu_);
  return core_.policy.admin_group;
}

// --- API ---------------------------------------------------------------------

Status LeaseService::AddMethods(ipc::MethodTable* table) {
  for (const LeaseMethod& m : LeaseMethods()) {
    Status s = table->AddDeferring(m.name,
                                   [this, &m](const ipc::Request& r, const ipc::PeerCredentials& p,
                                              const ipc::Reply& reply) -> std::optional<std::string> {
                                     return Dispatch(m, r, p, reply);
                                   });
    if (!s.ok()) return s;
  }
  return Status::OK();
}

std::optional<std::string> LeaseService::Handle(const ipc::Request& request, const ipc::PeerCredentials& peer,
                                                const ipc::Reply& reply) {
  for (const LeaseMethod& m : LeaseMethods()) {
    if (request.method == m.name) return Dispatch(m, request, peer, reply);
  }
  return ipc::EncodeError(request.id, ipc::kErrorUnknownMethod,
                          fmt::format("unknown method \"{}\"", request.method));
}

std::optional<std::string> LeaseService::Dispatch(const LeaseMethod& method, const ipc::Request& request,
                                                  const ipc::PeerCredentials& peer, const ipc::Reply& reply) {
  std::optional<std::string> answer =
      method.may_defer ? Wait(method, request, peer, reply) : Serve(method, request, peer);
  if (method.is_change) {
    MutexLock lock(&mu_);
    PublishMarks();  // A grant or release shows in status at once, not at the next tick.
  }
  return answer;
}

std::string LeaseService::Serve(const LeaseMethod& method, const ipc::Request& request,
                                const ipc::PeerCredentials& peer) {
  sched::Caller caller = ResolveCaller(peer.uid, peer.gid, AdminGroup());
  MutexLock lock(&mu_);
  TimePoint now = core_.clock->SteadyNow();
  if (!method.is_change) {
    std::string answer = Answer(method, request, peer, caller, now);
    if (core_.journal.has_events()) {
      core_.SendSignals(now);
      core_.Flush(now).IgnoreError();  // Refusals and zombie signals: kept for the next try when this fails.
    }
    return answer;
  }
  // A change is answered only once it is saved; otherwise it is taken back.
  if (!core_.CanSave(now)) {
    return ipc::EncodeError(
        request.id, ipc::kErrorStorage,
        fmt::format("{}; the agent makes no lease change until it can save it", core_.journal.problem()));
  }
  LeaseCore::Undo undo = core_.Checkpoint();
  std::string answer = Answer(method, request, peer, caller, now);
  // GPUs given back go to the queue at once, not at the next tick.
  if (request.method == "lease.release") core_.Decide(now);
  if (Status saved = core_.Flush(now); !saved.ok()) {
    core_.Rollback(std::move(undo));
    return ipc::EncodeError(request.id, ipc::kErrorStorage,
                            fmt::format("{}; nothing was changed", saved.message()));
  }
  core_.SendSignals(now);
  core_.Flush(now).IgnoreError();
  return answer;
}

std::string LeaseService::Answer(const LeaseMethod& method, const ipc::Request& request,
                                 const ipc::PeerCredentials& peer, const sched::Caller& caller,
                                 TimePoint now) {
  const nlohmann::json& params = request.params;
  Result<nlohmann::json> result = method.answer(core_, ApiCall{params, peer, caller, now});
  if (!result.ok()) {
    if (result.status().code() == StatusCode::kPermissionDenied) {
      auto id = params.find("id");
      core_.Event("refused", id != params.end() && id->is_number_integer() ? id->get<int64_t>() : 0,
                  caller.uid, caller.user, {}, Actor{caller.uid, caller.user},
                  fmt::format("{}: {}", method.name, result.status().message()));
    }
    return ipc::EncodeError(request.id, ipc::ErrorCodeOf(result.status()), result.status().message());
  }
  return ipc::EncodeResult(request.id, result.value());
}

// Pushed grants: lease.wait holds a caller whose request is queued and
// answers it the moment the request is granted or ends, once that is saved
// (a waiter never hears of a grant that a failed commit takes back), or
// when its timeout passes, with where the request stands then. With
// `watch`, it holds the holder of a granted lease until the lease is
// revoked (backfill preempted) or ends.
std::optional<std::string> LeaseService::Wait(const LeaseMethod& method, const ipc::Request& request,
                                              const ipc::PeerCredentials& peer, const ipc::Reply& reply) {
  sched::Caller caller = ResolveCaller(peer.uid, peer.gid, AdminGroup());
  MutexLock lock(&mu_);
  TimePoint now = core_.clock->SteadyNow();
  int64_t timeout_ms = kDefaultWaitTimeout.count();
  bool watches = false;
  JsonFields f(request.params, "params");
  f.Optional("timeout_ms", &timeout_ms);
  f.Optional("watch", &watches);
  if (f.ok() && (timeout_ms < 0 || timeout_ms > kMaxWaitTimeout.count())) {
    f.Fail("timeout_ms", fmt::format("expected an integer from 0 to {}", kMaxWaitTimeout.count()));
  }
  if (!f.ok()) return ipc::EncodeError(request.id, ipc::kErrorBadRequest, f.status().message());
  std::chrono::milliseconds timeout(timeout_ms);
  auto id = request.params.find("id");
  bool is_known = id != request.params.end() && id->is_number_integer();
  bool is_queued = is_known && core_.book.FindPending(id->get<int64_t>()) != nullptr;
  const sched::Lease* lease = is_known ? core_.book.FindLease(id->get<int64_t>()) : nullptr;
  bool is_watched = watches && lease != nullptr && !lease->revoking_since;
  // Nothing to wait for (ended, unknown, malformed; granted unless
  // watched), no time to wait, or nobody to answer later: answered now, as
  // lease.get.
  if ((!is_queued && !is_watched) || timeout.count() == 0 || !reply.IsOpen()) {
    return Answer(method, request, peer, caller, now);
  }
  core_.waiters.Add(id->get<int64_t>(),
                    LeaseWaiters::Waiter{request.id, caller, reply, now + timeout, is_watched});
  return std::nullopt;
}

sched::LeaseListing LeaseService::Listing(const sched::Caller& viewer) const {
  MutexLock lock(&mu_);
  return ShowListing(core_, viewer, core_.clock->SteadyNow());
}

Result<std::vector<store::LeaseEvent>> LeaseService::Events(int64_t after, int64_t limit, bool newest) {
  MutexLock lock(&mu_);
  if (!core_.journal.keeps_state()) return Status::Unavailable("this agent keeps no lease state");
  return core_.journal.Events(after, limit, newest);
}

size_t LeaseService::waiter_count() const {
  MutexLock lock(&mu_);
  return core_.waiters.size();
}

// --- ticks -------------------------------------------------------------------

void LeaseService::OnTick(const node::NodeView& reading, TimePoint now) {
  MutexLock lock(&mu_);
  Enforce(core_, reading, now);
  core_.ExpireWaiters(now);
  PublishMarks();
  std::vector<SchedulerClaims::SlurmAction> actions = core_.claims.TakeSlurmActions();
  if (actions.empty()) return;
  // Slurm's commands run without the lock: API calls do not wait for them.
  SchedulerClaims::Command run = core_.claims.slurm_command();
  lock.Unlock();
  std::vector<Status> results;
  for (const SchedulerClaims::SlurmAction& a : actions) {
    results.push_back(run ? run(a.argv)
                          : Status::Unavailable("the agent has no way to run Slurm's commands"));
  }
  lock.Lock();
  RecordSlurmResults(core_, actions, results, now);
}

std::optional<sched::TimePoint> LeaseService::NextWake() const {
  MutexLock lock(&mu_);
  return leases::NextWake(core_, core_.clock->SteadyNow());
}

void LeaseService::OnWake() {
  MutexLock lock(&mu_);
  TimePoint now = core_.clock->SteadyNow();
  AskReadingAtGateOpening(core_, now);
  // Between its ends, a look in a lease's grace (every kHandoverPoll)
  // changes nothing but maybe asks for a reading: nothing to decide.
  if (!CheckRevoked(core_, now)) return;
  SaveThenDecide(core_, now);
  PublishMarks();
}

// --- pods ----------------------------------------------------------------------

Status LeaseService::HoldForPod(const std::vector<std::string>& uuids) {
  const std::chrono::milliseconds bound = ClaimBound();
  TimePoint until = clock_->SteadyNow() + bound;
  std::string waiting_for = "backfill gives way first";
  for (;;) {
    Result<bool> held = TryHoldForPod(uuids);
    if (!held.ok() || held.value()) return held.status();
    {
      MutexLock lock(&mu_);
      if (const SchedulerClaims::Claim* claim = core_.claims.Find(PodClaim(uuids)))
        waiting_for = claim->waiting_for;
    }
    TimePoint now = clock_->SteadyNow();
    if (now >= until) {
      return Status::Unavailable(fmt::format("waited {} s, and still {}",
                                             std::chrono::duration_cast<std::chrono::seconds>(bound).count(),
                                             waiting_for));
    }
    clock_->SleepUntil(std::min(until, now + kClaimRetry), std::stop_token());
  }
}

Result<bool> LeaseService::TryHoldForPod(const std::vector<std::string>& uuids) {
  MutexLock lock(&mu_);
  Result<bool> held = leases::TryHoldForPod(core_, uuids, core_.clock->SteadyNow());
  PublishMarks();
  return held;
}

std::chrono::milliseconds LeaseService::ClaimBound() const {
  MutexLock lock(&mu_);
  return core_.policy.backfill.grace + kHandoverBound + kClaimSlack;
}

void LeaseService::SyncPods(const std::map<std::string, node::KubernetesNames>& by_uuid) {
  MutexLock lock(&mu_);
  leases::SyncPods(core_, by_uuid, core_.clock->SteadyNow());
  PublishMarks();
}

// --- events and state ------------------------------------------------------------

void LeaseService::RecordEvent(const std::string& kind, int64_t uid, const std::string& user,
                               int64_t actor_uid, const std::string& detail) {
  MutexLock lock(&mu_);
  Actor actor;
  if (actor_uid >= 0) actor = Actor{actor_uid, UserName(actor_uid)};
  core_.Event(kind, 0, uid, user, {}, actor, detail);
  core_.Flush(core_.clock->SteadyNow()).IgnoreError();  // Kept for the next try when this fails.
}

void LeaseService::RecordAgentEvents(const std::vector<std::pair<std::string, std::string>>& kind_detail) {
  MutexLock lock(&mu_);
  for (const auto& [kind, detail] : kind_detail) core_.Event(kind, 0, -1, "", {}, Actor{}, detail);
  core_.Flush(core_.clock->SteadyNow()).IgnoreError();  // Kept for the next try when this fails.
}

std::string LeaseService::Problem() const {
  MutexLock lock(&mu_);
  return core_.journal.problem();
}

nlohmann::json LeaseService::StateJson() const {
  MutexLock lock(&mu_);
  return core_.journal.StateJson();
}

void LeaseService::PublishMarks() { marks_.Publish(core_.MakePublication()); }

}  // namespace tarmac::leases
