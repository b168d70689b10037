// SPDX-License-Identifier: Apache-2.0
#include "leases/lease_service.h"

#include <fmt/format.h>
#include <signal.h>

#include <algorithm>
#include <tuple>

#include "common/units.h"
#include "ipc/method_table.h"
#include "leases/callers.h"
#include "leases/lease_text.h"

namespace tarmac::leases {
namespace {

using nlohmann::json;
using std::chrono::duration_cast;
using std::chrono::seconds;

// How a --no-wait request that did not fit is remembered, so that its
// repeat is answered the same way.
constexpr const char* kNoFitPrefix = "no GPUs fit now: ";

// {"state":"ended","reason":why,"ended_by":kind} (ended_by when known).
json EndedJson(const LeaseService::Ended& e) {
  json j = {{"state", "ended"}, {"reason", e.why}};
  if (!e.kind.empty()) j["ended_by"] = e.kind;
  return j;
}

}  // namespace

LeaseService::LeaseService(LeasePolicy policy, std::unique_ptr<store::LeaseState> state,
                           ProcessControl* processes, Clock* clock, Logger* logger)
    : policy_(std::move(policy)),
      processes_(processes),
      clock_(clock),
      logger_(logger),
      zombies_(policy_.zombies),
      backfill_(policy_.backfill, std::chrono::duration<double>(clock->WallNow().time_since_epoch()).count()),
      signaller_(processes),
      journal_(std::move(state), logger) {
  MutexLock lock(&mu_);
  loans_.SetPolicy(policy_.backfill.lend_after, policy_.backfill.lend_margin_bytes);
  PublishMarks();  // Figures (every priority at 0) from the start.
}

void LeaseService::SetPolicy(LeasePolicy policy) {
  MutexLock lock(&mu_);
  zombies_.SetPolicy(policy.zombies);
  backfill_.SetPolicy(policy.backfill);
  loans_.SetPolicy(policy.backfill.lend_after, policy.backfill.lend_margin_bytes);
  policy_ = std::move(policy);
}

void LeaseService::SeedBackfillLastUse(const std::map<std::string, int64_t>& unix_by_uuid) {
  MutexLock lock(&mu_);
  sched::TimeBase base = Base();
  std::map<std::string, TimePoint> seeded;
  for (const auto& [uuid, unix] : unix_by_uuid)
    seeded[uuid] = std::min(base.steady, base.FromUnix(static_cast<double>(unix)));
  backfill_.SeedLastUse(seeded);
}

std::string LeaseService::AdminGroup() const {
  MutexLock lock(&mu_);
  return policy_.admin_group;
}

sched::TimeBase LeaseService::Base() const { return {clock_->SteadyNow(), clock_->WallNow()}; }

// --- restore ---------------------------------------------------------------

Status LeaseService::Restore() {
  MutexLock lock(&mu_);
  if (!journal_.keeps_state()) return Status::OK();
  sched::TimeBase base = Base();
  std::vector<sched::Lease> leases;
  std::vector<sched::Pending> queue;
  int64_t next_id = 1;
  sched::FairShare share;
  for (const char* kind : {"lease", "queue", "share", "meta"}) {
    Result<std::vector<std::pair<int64_t, json>>> rows = journal_.Load(kind);
    if (!rows.ok()) return rows.status().WithContext(fmt::format("lease state {}", journal_.path()));
    for (const auto& [id, body] : rows.value()) {
      std::string where = fmt::format("lease state {}: {} {}", journal_.path(), kind, id);
      if (std::string(kind) == "lease") {
        Result<sched::Lease> l = sched::LeaseFromJson(body, base);
        if (!l.ok()) return l.status().WithContext(where);
        leases.push_back(std::move(l).value());
      } else if (std::string(kind) == "queue") {
        Result<sched::Pending> p = sched::PendingFromJson(body, base);
        if (!p.ok()) return p.status().WithContext(where);
        queue.push_back(std::move(p).value());
      } else if (std::string(kind) == "share") {
        if (!body.value("gpu_seconds", json()).is_number() || !body.value("as_of_unix", json()).is_number()) {
          return Status::Corruption(where + ": expected gpu_seconds and as_of_unix");
        }
        share.Restore(id,
                      {body["gpu_seconds"].get<double>(), base.FromUnix(body["as_of_unix"].get<double>())});
      } else if (body.value("next_id", json()).is_number_integer()) {
        next_id = body["next_id"].get<int64_t>();
      }
    }
  }
  book_.Restore(leases, queue, next_id, std::move(share));
  SeedArrivals();
  for (const sched::Lease& l : leases) memory_.RememberKey(l.uid, l.request_key, l.id);
  for (const sched::Pending& p : queue) memory_.RememberKey(p.owner.uid, p.request.request_key, p.id);
  TimePoint now = base.steady;
  int reattached = 0;
  int ended = 0;
  for (const sched::Lease& l : leases) {
    if (l.kind != node::LeaseKind::kRun || IsAlive(l.holder)) {
      ++reattached;
      runtime_[l.id];
      Event("reattached", l.id, l.uid, l.user, l.gpus, Actor{},
            l.kind != node::LeaseKind::kRun
                ? fmt::format("{} restored after an agent restart", sched::LeaseKindName(l))
                : fmt::format("its client (pid {}) still runs", l.holder.pid));
      continue;
    }
    ++ended;
    EndLease(l.id, "client_gone",
             fmt::format("its client (pid {}) exited while the agent was down; its processes are terminated",
                         l.holder.pid),
             Actor{}, true, now);
  }
  int dropped = 0;
  for (const sched::Pending& p : queue) {
    if (p.request.holder.pid == 0 || IsAlive(p.request.holder)) continue;
    ++dropped;
    book_.Cancel(kAgentCaller, p.id).IgnoreError();
    Erase("queue", p.id);
    memory_.RememberEnded(p.id, "its client exited while the agent was down");
    Event("client_gone", p.id, p.owner.uid, p.owner.user, {}, Actor{},
          "queued request dropped: " + memory_.FindEnded(p.id)->why);
  }
  SendSignals(now);
  if (Status s = Flush(now); !s.ok()) return s;
  logger_->Log(LogLevel::kInfo,
               "leases: restored {} lease{} ({} re-attached, {} ended: client gone) and {} queued request{} "
               "({} dropped) from {}",
               leases.size(), leases.size() == 1 ? "" : "s", reattached, ended, queue.size(),
               queue.size() == 1 ? "" : "s", dropped, journal_.path());
  PublishMarks();
  return Status::OK();
}

// --- API ---------------------------------------------------------------------

// The lease service's methods: one table that the agent's API serves from
// (AddMethods), the protocol documents, and Handle answers from in tests.
const std::vector<LeaseService::MethodEntry>& LeaseService::Methods() {
  static const std::vector<MethodEntry> kMethods = {
      {"lease.request", true, &LeaseService::OnRequest},
      {"lease.get", false, &LeaseService::OnGet},
      {"lease.wait", false, &LeaseService::OnGet, true},
      {"lease.attach", true, &LeaseService::OnAttach},
      {"lease.release", true, &LeaseService::OnRelease},
      {"lease.extend", true, &LeaseService::OnExtend},
      {"leases", false, &LeaseService::OnLeases},
      {"queue", false, &LeaseService::OnQueue},
      {"events", false, &LeaseService::OnEvents},
      {"zombies", false, &LeaseService::OnZombies},
      {"zombies.kill", false, &LeaseService::OnZombiesKill},
      {"backfill.gpus", false, &LeaseService::OnBackfillGpus},
      {"slurm.prolog", true, &LeaseService::OnSlurmProlog},
      {"slurm.epilog", true, &LeaseService::OnSlurmEpilog},
  };
  return kMethods;
}

Status LeaseService::AddMethods(ipc::MethodTable* table) {
  for (const MethodEntry& m : Methods()) {
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
  for (const MethodEntry& m : Methods()) {
    if (request.method == m.name) return Dispatch(m, request, peer, reply);
  }
  return ipc::EncodeError(request.id, ipc::kErrorUnknownMethod,
                          fmt::format("unknown method \"{}\"", request.method));
}

std::optional<std::string> LeaseService::Dispatch(const MethodEntry& method, const ipc::Request& request,
                                                  const ipc::PeerCredentials& peer, const ipc::Reply& reply) {
  std::optional<std::string> answer =
      method.may_defer ? Wait(method, request, peer, reply) : Serve(method, request, peer);
  if (method.is_change) {
    MutexLock lock(&mu_);
    PublishMarks();  // A grant or release shows in status at once, not at the next tick.
  }
  return answer;
}

std::string LeaseService::Serve(const MethodEntry& method, const ipc::Request& request,
                                const ipc::PeerCredentials& peer) {
  sched::Caller caller = ResolveCaller(peer.uid, peer.gid, AdminGroup());
  MutexLock lock(&mu_);
  TimePoint now = clock_->SteadyNow();
  if (!method.is_change) {
    std::string answer = Answer(method, request, peer, caller, now);
    if (journal_.has_events()) {
      SendSignals(now);
      Flush(now).IgnoreError();  // Refusals and zombie signals: kept for the next try when this fails.
    }
    return answer;
  }
  // A change is answered only once it is saved; otherwise it is taken back.
  if (!CanSave(now)) {
    return ipc::EncodeError(
        request.id, ipc::kErrorStorage,
        fmt::format("{}; the agent makes no lease change until it can save it", journal_.problem()));
  }
  Undo undo = Checkpoint();
  std::string answer = Answer(method, request, peer, caller, now);
  // GPUs given back go to the queue at once, not at the next tick.
  if (request.method == "lease.release") Decide(now);
  if (Status saved = Flush(now); !saved.ok()) {
    Rollback(std::move(undo));
    return ipc::EncodeError(request.id, ipc::kErrorStorage,
                            fmt::format("{}; nothing was changed", saved.message()));
  }
  SendSignals(now);
  Flush(now).IgnoreError();
  return answer;
}

std::string LeaseService::Answer(const MethodEntry& method, const ipc::Request& request,
                                 const ipc::PeerCredentials& peer, const sched::Caller& caller,
                                 TimePoint now) {
  const json& params = request.params;
  Result<json> result = (this->*method.answer)(Call{params, peer, caller, now});
  if (!result.ok()) {
    if (result.status().code() == StatusCode::kPermissionDenied) {
      auto id = params.find("id");
      Event("refused", id != params.end() && id->is_number_integer() ? id->get<int64_t>() : 0, caller.uid,
            caller.user, {}, Actor{caller.uid, caller.user},
            fmt::format("{}: {}", method.name, result.status().message()));
    }
    return ipc::EncodeError(request.id, ipc::ErrorCodeOf(result.status()), result.status().message());
  }
  return ipc::EncodeResult(request.id, result.value());
}

Result<json> LeaseService::OnRequest(const Call& c) { return Request(c.params, c.peer, c.caller, c.now); }

Result<json> LeaseService::OnGet(const Call& c) {
  Result<int64_t> id = ipc::IdParam(c.params);
  return id.ok() ? Get(id.value(), c.caller, c.now) : Result<json>(id.status());
}

Result<json> LeaseService::OnAttach(const Call& c) {
  Result<int64_t> id = ipc::IdParam(c.params);
  Result<int64_t> pid = id.ok() ? ipc::IdParam(c.params, "pid") : id;
  if (!pid.ok()) return pid.status();
  std::optional<ProcessIdentity> who = processes_->Identify(pid.value());
  if (!who) return Status::NotFound(fmt::format("pid {} is not running", pid.value()));
  if (who->pid == 1 || who->pid == 2 || who->parent_pid == 2) {
    return Status::PermissionDenied(fmt::format("pid {} ({}) is {}; only a lease's own job can be attached",
                                                pid.value(), who->name,
                                                who->pid == 1 ? "the init process" : "a kernel thread"));
  }
  if (const sched::Lease* l = book_.FindLease(id.value()); l != nullptr && who->uid != l->uid) {
    return Status::PermissionDenied(
        fmt::format("pid {} belongs to uid {}, not to the lease's owner {}", pid.value(), who->uid, l->user));
  }
  if (who->uid != c.caller.uid && !c.caller.is_admin) {
    return Status::PermissionDenied(fmt::format("pid {} belongs to another user", pid.value()));
  }
  Status s = book_.AttachJob(c.caller, id.value(), {who->pid, who->start_ticks});
  if (!s.ok()) return s;
  SaveLease(*book_.FindLease(id.value()));
  return json{{"attached", true}};
}

Result<json> LeaseService::OnRelease(const Call& c) {
  Result<int64_t> id = ipc::IdParam(c.params);
  return id.ok() ? Release(id.value(), c.peer, c.caller, c.now) : Result<json>(id.status());
}

Result<json> LeaseService::OnExtend(const Call& c) {
  Result<int64_t> id = ipc::IdParam(c.params);
  if (!id.ok()) return id.status();
  auto by = c.params.find("seconds");
  if (by == c.params.end() || !by->is_number_integer()) {
    return Status::InvalidArgument("params.seconds: expected an integer");
  }
  if (const sched::Lease* l = book_.FindLease(id.value()); l != nullptr && sched::IsExternal(*l)) {
    return Status::FailedPrecondition(
        fmt::format("lease {} is a {} lease", id.value(), sched::LeaseKindName(*l)),
        l->kind == node::LeaseKind::kPod ? "a pod lease has no end of its own: the kubelet ends it"
                                         : "a Slurm job's lease ends with the job: use scontrol");
  }
  Status s = book_.Extend(c.caller, id.value(), seconds(by->get<int64_t>()), c.now);
  if (!s.ok()) return s;
  const sched::Lease& l = *book_.FindLease(id.value());
  SaveLease(l);
  Event("extended", l.id, l.uid, l.user, l.gpus, Actor{c.caller.uid, c.caller.user},
        fmt::format("by {}; ends at {}", FormatDuration(seconds(by->get<int64_t>())),
                    UtcText(Base().ToUnix(*l.ends_at))));
  return LeaseJson(l, c.caller, c.now);
}

Result<json> LeaseService::OnLeases(const Call& c) { return LeasesJson(c.caller, c.now); }

Result<json> LeaseService::OnQueue(const Call& c) { return QueueJson(c.now); }

Result<json> LeaseService::OnZombies(const Call&) {
  json result = sched::ZombiesToJson(zombies_.Zombies(), zombies_.policy());
  result["policy"]["action"] = policy_.terminates_zombies ? "terminate" : "report";
  return result;
}

Result<json> LeaseService::OnZombiesKill(const Call& c) { return KillZombies(c.params, c.caller, c.now); }

Result<json> LeaseService::OnEvents(const Call& c) {
  int64_t after = 0;
  int64_t limit = 1000;
  auto a = c.params.find("after");
  auto n = c.params.find("limit");
  if (a != c.params.end()) after = a->is_number_integer() ? a->get<int64_t>() : -1;
  if (n != c.params.end()) limit = n->is_number_integer() ? n->get<int64_t>() : -1;
  bool is_newest = false;
  if (auto w = c.params.find("newest"); w != c.params.end()) {
    if (!w->is_boolean()) return Status::InvalidArgument("params.newest: true or false");
    is_newest = w->get<bool>();
  }
  if (after < 0 || limit < 1 || limit > 100000) {
    return Status::InvalidArgument("params.after: an integer >= 0; params.limit: 1 to 100000");
  }
  if (!journal_.keeps_state()) return Status::Unavailable("this agent keeps no lease state");
  Result<std::vector<store::LeaseEvent>> events = journal_.Events(after, limit, is_newest);
  if (!events.ok()) return events.status();
  json list = json::array();
  for (const store::LeaseEvent& e : events.value()) list.push_back(store::LeaseEventToJson(e));
  return json{{"events", list}};
}

Result<json> LeaseService::Request(const json& params, const ipc::PeerCredentials& peer,
                                   const sched::Caller& caller, TimePoint now) {
  Result<sched::LeaseRequest> parsed = sched::LeaseRequestFromJson(params);
  if (!parsed.ok()) return parsed.status();
  sched::LeaseRequest request = std::move(parsed).value();
  auto wait = params.find("wait");
  if (wait != params.end() && !wait->is_boolean())
    return Status::InvalidArgument("params.wait: expected true or false");
  bool waits = wait == params.end() || wait->get<bool>();
  // A repeat of a request already made (the client retried after a timeout)
  // answers with what the first one made.
  if (std::optional<int64_t> first = memory_.FindKey(caller.uid, request.request_key)) {
    const Ended* ended = memory_.FindEnded(*first);
    if (ended != nullptr && ended->why.rfind(kNoFitPrefix, 0) == 0)
      return Status::ResourceExhausted(ended->why);
    return Get(*first, caller, now);
  }
  if (!has_gpus_) return Status::Unavailable("the agent has not read the GPUs yet");
  // GPUs named by index, as CUDA_VISIBLE_DEVICES and nvidia-smi name them.
  for (std::string& name : request.wants.uuids) {
    if (name.empty() || name.size() > 4 || name.find_first_not_of("0123456789") != std::string::npos)
      continue;
    size_t index = static_cast<size_t>(std::stoi(name));
    if (index >= slots_.size()) {
      return Status::InvalidArgument(fmt::format("no GPU {} here (GPUs 0 to {})", name, slots_.size() - 1));
    }
    name = slots_[index].uuid;
  }
  // The asking client: a queued request goes when it dies, and so does a
  // `tarmac run` lease (a reservation outlives it). A client already gone
  // (its call waited on a stopped agent) gets nothing: no one would hold it.
  std::optional<ProcessIdentity> client = processes_->Identify(peer.pid);
  if (!client) return Status::Unavailable(fmt::format("the asking client (pid {}) has exited", peer.pid));
  request.holder = {client->pid, client->start_ticks};
  if (!request.idle_timeout && policy_.default_idle_timeout.count() > 0) {
    request.idle_timeout = duration_cast<seconds>(policy_.default_idle_timeout);
  }
  Result<int64_t> id = book_.Submit(caller, request, slots_, now);
  if (!id.ok()) return id.status();
  memory_.RememberKey(caller.uid, request.request_key, id.value());
  journal_.SaveNextId(book_.next_id());
  Decide(now);
  if (const sched::Lease* l = book_.FindLease(id.value())) {
    return json{{"state", "granted"}, {"lease", LeaseJson(*l, caller, now)}};
  }
  if (!waits) {
    std::string why = fmt::format("{}{}", kNoFitPrefix, WaitReason(id.value()));
    book_.Cancel(kAgentCaller, id.value()).IgnoreError();
    memory_.RememberEnded(id.value(), why);
    return Status::ResourceExhausted(why);
  }
  const sched::Pending* p = book_.FindPending(id.value());
  SavePending(id.value());
  // The command stays in the request's `command` (`tarmac queue --json`),
  // never in an event's prose: what the web may not show is found by its
  // field (agent/web_redaction.h).
  Event("queued", id.value(), caller.uid, caller.user, {}, Actor{caller.uid, caller.user},
        WaitReason(id.value()));
  return json{{"state", "queued"}, {"request", QueuedJson(*p, now)}};
}

Result<json> LeaseService::Get(int64_t id, const sched::Caller& viewer, TimePoint now) const {
  if (const sched::Lease* l = book_.FindLease(id)) {
    return json{{"state", "granted"}, {"lease", LeaseJson(*l, viewer, now)}};
  }
  if (const sched::Pending* p = book_.FindPending(id))
    return json{{"state", "queued"}, {"request", QueuedJson(*p, now)}};
  if (const Ended* ended = memory_.FindEnded(id)) return EndedJson(*ended);
  return Status::NotFound(fmt::format("no lease or queued request {}", id));
}

Result<json> LeaseService::Release(int64_t id, const ipc::PeerCredentials& peer, const sched::Caller& caller,
                                   TimePoint now) {
  Actor actor{caller.uid, caller.user};
  if (const sched::Lease* l = book_.FindLease(id)) {
    if (l->kind == node::LeaseKind::kPod) {
      return Status::FailedPrecondition(fmt::format("lease {} is {}'s pod lease", id, l->user),
                                        "the kubelet ends it when the pod goes: delete the pod");
    }
    if (l->kind == node::LeaseKind::kSlurm) {
      return Status::FailedPrecondition(
          fmt::format("lease {} holds the GPUs of Slurm job {}", id, l->slurm_job),
          "the job's epilog ends it: scancel the job");
    }
    if (!caller.is_admin && caller.uid != l->uid) {
      return Status::PermissionDenied(fmt::format("lease {} belongs to {}", id, l->user),
                                      "only its owner or an admin may release it");
    }
    // The client of a `tarmac run` lease releases it once every process it
    // started has exited (it reaps them as their subreaper): nothing to
    // terminate. Anyone else's release terminates what still runs.
    if (l->revoking_since && IsListedOnItsGpus(*l)) {
      // A revoked lease let go while its GPUs still list processes: what is
      // left of it is killed, and it stays, revoking for its request (which
      // then revokes no other lease), until a reading shows them empty.
      Runtime& rt = runtime_[id];
      rt.is_released = true;
      if (!rt.killed_at) {
        rt.killed_at = now;
        std::vector<sched::ProcessRef> victims = LeaseVictims(*l, SelfAndAncestors(peer.pid));
        if (!victims.empty()) {
          TerminateProcesses(id, l->uid, std::move(victims),
                             fmt::format("released by {} while revoked", caller.user), actor, now);
          KillNow(id);
        }
      }
      return json{{"released", id}};
    }
    bool by_holder =
        l->kind != node::LeaseKind::kReservation && static_cast<int64_t>(peer.pid) == l->holder.pid;
    EndLease(id, "released", by_holder ? "its job finished" : fmt::format("released by {}", caller.user),
             actor, !by_holder, now, SelfAndAncestors(peer.pid));
    return json{{"released", id}};
  }
  if (const sched::Pending* p = book_.FindPending(id)) {
    Status s = book_.Cancel(caller, id);
    if (!s.ok()) return s;
    (void)p;
    Erase("queue", id);
    memory_.RememberEnded(id, fmt::format("cancelled by {}", caller.user));
    Event("cancelled", id, caller.uid, caller.user, {}, actor, memory_.FindEnded(id)->why);
    return json{{"cancelled", id}};
  }
  if (const Ended* ended = memory_.FindEnded(id)) {
    json answer = EndedJson(*ended);
    answer["released"] = nullptr;
    return answer;
  }
  return Status::NotFound(fmt::format("no lease or queued request {}", id));
}

// --- answers -----------------------------------------------------------------

json LeaseService::LeaseJson(const sched::Lease& l, const sched::Caller& viewer, TimePoint now) const {
  json j = sched::LeaseToJson(l, Base());
  if (!viewer.is_admin && viewer.uid != l.uid) j.erase("token");
  j.erase("request_key");
  j["held_seconds"] = duration_cast<seconds>(now - l.granted_at).count();
  j["idle_seconds"] =
      l.idle_since ? std::max<int64_t>(0, duration_cast<seconds>(now - *l.idle_since).count()) : 0;
  j["revoke_by_unix"] =
      l.revoking_since ? json(Base().ToUnix(*l.revoking_since + policy_.backfill.grace)) : json(nullptr);
  auto rt = runtime_.find(l.id);
  if (rt != runtime_.end()) {
    const Runtime& r = rt->second;
    std::string warning = r.warning;
    if (!warning.empty() && !r.acted.empty()) {
      warning += " " + r.acted;
    } else if (!warning.empty() && r.warned_at) {
      TimePoint acts_at = *r.warned_at + policy_.idle_grace;
      warning +=
          now < acts_at ? " acts in " + FormatDuration(duration_cast<seconds>(acts_at - now)) : " acts now";
    }
    j["warning"] = warning.empty() ? json(nullptr) : json(warning);
    j["foreign_processes"] = rt->second.foreign;
  }
  return j;
}

json LeaseService::QueuedJson(const sched::Pending& p, TimePoint now) const {
  json j = sched::PendingToJson(p, Base());
  j.erase("request_key");
  j["waiting_seconds"] = duration_cast<seconds>(now - p.submitted_at).count();
  const sched::Waiting* w = WaitingOf(p.id);
  j["position"] = w != nullptr ? w->position : 0;
  j["queue_length"] = book_.queue().size();
  j["reason"] = WaitReason(p.id);
  return j;
}

const sched::Waiting* LeaseService::WaitingOf(int64_t id) const {
  auto it = waiting_.find(id);
  return it == waiting_.end() ? nullptr : &it->second;
}

std::map<int, int64_t> LeaseService::LeasedGpus() const {
  std::map<int, int64_t> by_gpu;
  for (const auto& [id, l] : book_.leases()) {
    if (sched::IsMigLease(l) || sched::IsLoan(l))
      continue;  // Holds an instance, not its GPU; or its lender does.
    for (int g : l.gpus) by_gpu[g] = id;
  }
  return by_gpu;
}

std::string LeaseService::BackfillRefusal(const std::vector<sched::GpuSlot>& marked, int64_t memory) const {
  const GateVerdict* first = nullptr;
  int first_index = -1;
  for (const sched::GpuSlot& g : marked) {
    if (!sched::IsFree(g, memory)) continue;
    auto it = backfill_.verdicts().find(g.uuid);
    if (it == backfill_.verdicts().end() || it->second.accepts) continue;
    const GateVerdict& v = it->second;
    bool is_sooner =
        first == nullptr || (v.starts_in && (!first->starts_in || *v.starts_in < *first->starts_in));
    if (is_sooner) {
      first = &v;
      first_index = g.index;
    }
  }
  if (first == nullptr) return "";
  std::string text = fmt::format("GPU {}: {}", first_index, backfill_.Describe(*first));
  if (first->starts_in) {
    text +=
        fmt::format(", opens in {}", FormatDuration(std::chrono::duration_cast<seconds>(*first->starts_in)));
  }
  return text;
}

std::string LeaseService::WaitReason(int64_t id) const {
  const sched::Decision& d = book_.last_decision();
  if (const sched::Waiting* found = WaitingOf(id)) {
    const sched::Waiting& w = *found;
    if (w.reason == sched::WaitReason::kPreempting) {
      return fmt::format("position {}: backfill leases on the GPUs it gets are being revoked (grace {} s)",
                         w.position, duration_cast<seconds>(policy_.backfill.grace).count());
    }
    if (w.reason == sched::WaitReason::kBehindHead) {
      return fmt::format("position {}: behind the head of the queue, which has the next free GPUs reserved",
                         w.position);
    }
    const sched::Pending* p = book_.FindPending(id);
    int free_now = 0;
    std::vector<sched::GpuSlot> marked = slots_;
    book_.MarkLeased(&marked);
    if (p != nullptr && sched::WantsMig(p->request.wants)) {
      const sched::GpuWants& want = p->request.wants;
      std::string what =
          want.mig_profile.empty() ? "MIG instance " + want.uuids[0] : want.mig_profile + " MIG instance";
      for (const sched::GpuSlot& g : marked) {
        for (const sched::MigSlot& m : g.mig) {
          bool matches = want.mig_profile.empty() ? m.uuid == want.uuids[0] : m.profile == want.mig_profile;
          free_now += matches && g.is_healthy && !m.is_leased && !m.has_foreign_processes ? 1 : 0;
        }
      }
      return fmt::format("position {}: needs a free {}, {} free now", w.position, what, free_now);
    }
    int64_t memory = p != nullptr ? p->request.wants.min_free_memory_bytes : 0;
    for (const sched::GpuSlot& g : marked) free_now += sched::IsFree(g, memory) ? 1 : 0;
    if (p != nullptr && p->request.priority == sched::Priority::kBackfill && free_now > 0) {
      if (std::string why = BackfillRefusal(marked, memory); !why.empty()) {
        return fmt::format("position {}: {} free, but backfill waits for a GPU [backfill] accepts; {}",
                           w.position, free_now, why);
      }
    }
    int wants = p == nullptr                     ? 0
                : p->request.wants.uuids.empty() ? p->request.wants.gpu_count
                                                 : static_cast<int>(p->request.wants.uuids.size());
    std::string when;
    if (d.reserved_from && w.position == 1) {
      when = fmt::format("; expected in {}",
                         FormatDuration(duration_cast<seconds>(*d.reserved_from - clock_->SteadyNow())));
    }
    return fmt::format(
        "position {}: needs {} GPU{}{}, {} free now{}", w.position, wants, wants == 1 ? "" : "s",
        memory > 0 ? fmt::format(" with {} free", FormatBytes(memory)) : std::string(), free_now, when);
  }
  return "waiting for the next decision";
}

json LeaseService::LeasesJson(const sched::Caller& viewer, TimePoint now) const {
  json list = json::array();
  for (const auto& [id, l] : book_.leases()) list.push_back(LeaseJson(l, viewer, now));
  return json{{"leases", list}};
}

json LeaseService::QueueJson(TimePoint now) const {
  json list = json::array();
  auto position = [this](const sched::Pending* p) REQUIRES(mu_) {
    const sched::Waiting* w = WaitingOf(p->id);
    return w != nullptr ? w->position : 1 << 30;
  };
  std::vector<const sched::Pending*> order;
  for (const sched::Pending& p : book_.queue()) order.push_back(&p);
  std::stable_sort(order.begin(), order.end(),
                   [&](const sched::Pending* a, const sched::Pending* b)
                       REQUIRES(mu_) { return position(a) < position(b); });
  for (const sched::Pending* p : order) list.push_back(QueuedJson(*p, now));
  return json{{"queue", list}};
}

void LeaseService::PublishMarks() {
  auto marks = std::make_shared<Publication>();
  for (const auto& [id, l] : book_.leases()) {
    node::GpuLease mark{id, l.user, sched::KindOf(l), l.revoking_since.has_value(), l.slurm_job};
    if (sched::IsLoan(l)) continue;  // Its lender's mark names it, below.
    if (sched::IsMigLease(l)) {
      marks->mig_leases[l.uuids[0]] = mark;
      continue;
    }
    for (int g : l.gpus) marks->leases[g] = mark;
  }
  for (const auto& [id, l] : book_.leases()) {
    if (!sched::IsLoan(l)) continue;
    for (int g : l.gpus) {
      if (auto it = marks->leases.find(g); it != marks->leases.end()) {
        it->second.lent_to = id;
        it->second.lent_to_user = l.user;
      }
    }
  }
  marks->preemptions = backfill_preemptions_by_gpu_;
  marks->figures = ComputeFigures();
  marks_.Publish(std::move(marks));
}

}  // namespace tarmac::leases
