// SPDX-License-Identifier: Apache-2.0
//
// The lease methods of the local API (lease_api.h): requests, gets,
// attaches, releases, extensions, listings and events.
#include "leases/lease_api.h"

#include <fmt/format.h>

#include "common/json_fields.h"
#include "common/units.h"
#include "ipc/method_table.h"
#include "leases/callers.h"
#include "leases/gpu_drains.h"
#include "leases/lease_answers.h"
#include "leases/lease_text.h"
#include "leases/lease_ticks.h"

namespace tarmac::leases {

using nlohmann::json;
using std::chrono::duration_cast;
using std::chrono::seconds;

namespace {

using TimePoint = sched::TimePoint;

// How a --no-wait request that did not fit is remembered, so that its
// repeat is answered the same way.
constexpr const char* kNoFitPrefix = "no GPUs fit now: ";

Result<json> Request(LeaseCore& core, const json& params, const ipc::PeerCredentials& peer,
                     const sched::Caller& caller, TimePoint now) {
  Result<sched::LeaseRequest> parsed = sched::LeaseRequestFromJson(params);
  if (!parsed.ok()) return parsed.status();
  sched::LeaseRequest request = std::move(parsed).value();
  if (request.wants.allows_unhealthy && !caller.is_admin) {
    return Status::PermissionDenied(
        "params.allow_unhealthy: only root or a member of the admin group may take a GPU to drain");
  }
  auto wait = params.find("wait");
  if (wait != params.end() && !wait->is_boolean())
    return Status::InvalidArgument("params.wait: expected true or false");
  bool waits = wait == params.end() || wait->get<bool>();
  // A repeat of a request already made (the client retried after a timeout)
  // answers with what the first one made.
  if (std::optional<int64_t> first = core.memory.FindKey(caller.uid, request.request_key)) {
    const RequestMemory::Ended* ended = core.memory.FindEnded(*first);
    if (ended != nullptr && ended->why.rfind(kNoFitPrefix, 0) == 0)
      return Status::ResourceExhausted(ended->why);
    return LeaseStateJson(core, *first, caller, now);
  }
  if (!core.has_gpus) return Status::Unavailable("the agent has not read the GPUs yet");
  // GPUs named by index, as CUDA_VISIBLE_DEVICES and nvidia-smi name them.
  for (std::string& name : request.wants.uuids) {
    if (name.empty() || name.size() > 4 || name.find_first_not_of("0123456789") != std::string::npos)
      continue;
    size_t index = static_cast<size_t>(std::stoi(name));
    if (index >= core.slots.size()) {
      return Status::InvalidArgument(
          fmt::format("no GPU {} here (GPUs 0 to {})", name, core.slots.size() - 1));
    }
    name = core.slots[index].uuid;
  }
  // The asking client: a queued request goes when it dies, and so does a
  // `tarmac run` lease (a reservation outlives it). A client already gone
  // (its call waited on a stopped agent) gets nothing: no one would hold it.
  std::optional<ProcessIdentity> client = core.process_control->Identify(peer.pid);
  if (!client) return Status::Unavailable(fmt::format("the asking client (pid {}) has exited", peer.pid));
  request.holder = {client->pid, client->start_ticks};
  request.yields_at_notice = request.priority == sched::Priority::kBackfill && core.is_batch_runner &&
                             core.is_batch_runner(request.holder);
  if (!request.idle_timeout && core.policy.default_idle_timeout.count() > 0) {
    request.idle_timeout = duration_cast<seconds>(core.policy.default_idle_timeout);
  }
  Result<int64_t> id = core.book.Submit(caller, request, core.slots, now);
  if (!id.ok()) return id.status();
  core.memory.RememberKey(caller.uid, request.request_key, id.value());
  core.journal.SaveNextId(core.book.next_id());
  core.Decide(now);
  if (const sched::Lease* l = core.book.FindLease(id.value())) {
    return json{{"state", "granted"}, {"lease", LeaseJson(core, *l, caller, now)}};
  }
  if (!waits) {
    std::string why = fmt::format("{}{}", kNoFitPrefix, WaitReason(core, id.value()));
    core.book.Cancel(kAgentCaller, id.value()).IgnoreError();
    core.memory.RememberEnded(id.value(), why);
    return Status::ResourceExhausted(why);
  }
  const sched::Pending* p = core.book.FindPending(id.value());
  core.SavePending(id.value());
  // The command stays in the request's `command` (`tarmac queue --json`),
  // never in an event's prose: what the web may not show is found by its
  // field (agent/web_redaction.h).
  core.Event("queued", id.value(), caller.uid, caller.user, {}, Actor{caller.uid, caller.user},
             WaitReason(core, id.value()));
  // A backfill request may wait for a gate to open between readings.
  if (p->request.priority == sched::Priority::kBackfill && core.on_next_wake_sooner)
    core.on_next_wake_sooner();
  return json{{"state", "queued"}, {"request", QueuedJson(core, *p, now)}};
}

Result<json> Release(LeaseCore& core, int64_t id, const ipc::PeerCredentials& peer,
                     const sched::Caller& caller, TimePoint now) {
  Actor actor{caller.uid, caller.user};
  if (const sched::Lease* l = core.book.FindLease(id)) {
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
    if (l->revoking_since) {
      // A revoked lease let go: what is left of it is killed, and it stays,
      // revoking for its request (which then revokes no other lease), until
      // a reading taken since (asked for at once) shows its GPUs empty, even
      // of what it started after the last reading.
      LeaseRuntime& rt = core.runtime[id];
      const bool was_let_go = rt.killed_at.has_value();
      core.MarkLetGo(*l, now);
      if (!core.IsHandedOverEmpty(*l)) {
        if (!was_let_go) rt.is_released = true;  // Else its grace had passed: it is preempted.
        AskReadingOnceExited(core, *l, &rt, now);
        // Its holder has reaped what it started (a batch's runner stopped
        // its engines; `tarmac run` is their subreaper): unless a process
        // listed on its GPUs still runs, what a reading taken now still
        // lists is killed then (CheckRevoked), not looked for in /proc now,
        // while a real request waits.
        bool is_holder = static_cast<int64_t>(peer.pid) == l->holder.pid;
        if (!was_let_go && (!is_holder || core.ListsALiveProcess(*l))) {
          core.SweepRevoked(*l, core.SelfAndAncestors(peer.pid),
                            fmt::format("released by {} while revoked", caller.user), actor);
        }
        return json{{"released", id}};
      }
    }
    bool by_holder =
        l->kind != node::LeaseKind::kReservation && static_cast<int64_t>(peer.pid) == l->holder.pid;
    const sched::Lease ended = *l;
    core.EndLease(id, "released", by_holder ? "its job finished" : fmt::format("released by {}", caller.user),
                  actor, !by_holder, now, core.SelfAndAncestors(peer.pid));
    // Its job has exited (`tarmac run` reaps what it started): the next
    // request need not wait for the next tick to see its GPUs empty.
    if (by_holder) core.AskReadingOnceEnded(ended, now);
    return json{{"released", id}};
  }
  if (const sched::Pending* p = core.book.FindPending(id)) {
    Status s = core.book.Cancel(caller, id);
    if (!s.ok()) return s;
    (void)p;
    core.Erase("queue", id);
    core.memory.RememberEnded(id, fmt::format("cancelled by {}", caller.user));
    core.Event("cancelled", id, caller.uid, caller.user, {}, actor, core.memory.FindEnded(id)->why);
    return json{{"cancelled", id}};
  }
  if (const RequestMemory::Ended* ended = core.memory.FindEnded(id)) {
    json answer = EndedJson(*ended);
    answer["released"] = nullptr;
    return answer;
  }
  return Status::NotFound(fmt::format("no lease or queued request {}", id));
}

}  // namespace

Result<json> OnRequest(LeaseCore& core, const ApiCall& c) {
  return Request(core, c.params, c.peer, c.caller, c.now);
}

Result<json> OnGet(LeaseCore& core, const ApiCall& c) {
  Result<int64_t> id = ipc::IdParam(c.params);
  return id.ok() ? LeaseStateJson(core, id.value(), c.caller, c.now) : Result<json>(id.status());
}

Result<json> OnAttach(LeaseCore& core, const ApiCall& c) {
  Result<int64_t> id = ipc::IdParam(c.params);
  Result<int64_t> pid = id.ok() ? ipc::IdParam(c.params, "pid") : id;
  if (!pid.ok()) return pid.status();
  std::optional<ProcessIdentity> who = core.process_control->Identify(pid.value());
  if (!who) return Status::NotFound(fmt::format("pid {} is not running", pid.value()));
  if (who->pid == 1 || who->pid == 2 || who->parent_pid == 2) {
    return Status::PermissionDenied(fmt::format("pid {} ({}) is {}; only a lease's own job can be attached",
                                                pid.value(), who->name,
                                                who->pid == 1 ? "the init process" : "a kernel thread"));
  }
  if (const sched::Lease* l = core.book.FindLease(id.value()); l != nullptr && who->uid != l->uid) {
    return Status::PermissionDenied(
        fmt::format("pid {} belongs to uid {}, not to the lease's owner {}", pid.value(), who->uid, l->user));
  }
  if (who->uid != c.caller.uid && !c.caller.is_admin) {
    return Status::PermissionDenied(fmt::format("pid {} belongs to another user", pid.value()));
  }
  Status s = core.book.AttachJob(c.caller, id.value(), {who->pid, who->start_ticks});
  if (!s.ok()) return s;
  core.SaveLease(*core.book.FindLease(id.value()));
  return json{{"attached", true}};
}

Result<json> OnRelease(LeaseCore& core, const ApiCall& c) {
  Result<int64_t> id = ipc::IdParam(c.params);
  return id.ok() ? Release(core, id.value(), c.peer, c.caller, c.now) : Result<json>(id.status());
}

Result<json> OnExtend(LeaseCore& core, const ApiCall& c) {
  Result<int64_t> id = ipc::IdParam(c.params);
  if (!id.ok()) return id.status();
  int64_t by_seconds = 0;
  JsonFields f(c.params, "params");
  f.Get("seconds", &by_seconds);
  if (!f.ok()) return f.status();
  if (const sched::Lease* l = core.book.FindLease(id.value()); l != nullptr && sched::IsExternal(*l)) {
    return Status::FailedPrecondition(
        fmt::format("lease {} is a {} lease", id.value(), sched::LeaseKindName(*l)),
        l->kind == node::LeaseKind::kPod ? "a pod lease has no end of its own: the kubelet ends it"
                                         : "a Slurm job's lease ends with the job: use scontrol");
  }
  Status s = core.book.Extend(c.caller, id.value(), seconds(by_seconds), c.now);
  if (!s.ok()) return s;
  const sched::Lease& l = *core.book.FindLease(id.value());
  core.SaveLease(l);
  core.Event("extended", l.id, l.uid, l.user, l.gpus, Actor{c.caller.uid, c.caller.user},
             fmt::format("by {}; ends at {}", FormatDuration(seconds(by_seconds)),
                         UtcText(core.Base().ToUnix(*l.ends_at))));
  return LeaseJson(core, l, c.caller, c.now);
}

Result<json> OnLeases(LeaseCore& core, const ApiCall& c) { return LeasesJson(core, c.caller, c.now); }

Result<json> OnQueue(LeaseCore& core, const ApiCall& c) { return QueueJson(core, c.now); }

Result<json> OnEvents(LeaseCore& core, const ApiCall& c) {
  int64_t after = 0;
  int64_t limit = 1000;
  bool is_newest = false;
  JsonFields f(c.params, "params");
  f.Optional("after", &after);
  f.Optional("limit", &limit);
  f.Optional("newest", &is_newest);
  if (!f.ok()) return f.status();
  if (after < 0 || limit < 1 || limit > 100000) {
    return Status::InvalidArgument("params.after: an integer >= 0; params.limit: 1 to 100000");
  }
  if (!core.journal.keeps_state()) return Status::Unavailable("this agent keeps no lease state");
  Result<std::vector<store::LeaseEvent>> events = core.journal.Events(after, limit, is_newest);
  if (!events.ok()) return events.status();
  json list = json::array();
  for (const store::LeaseEvent& e : events.value()) list.push_back(store::LeaseEventToJson(e));
  return json{{"events", list}};
}

// The lease service's methods: one table that the agent's API serves from
// (LeaseService::AddMethods), the protocol documents, and
// LeaseService::Handle answers from in tests.
const std::vector<LeaseMethod>& LeaseMethods() {
  static const std::vector<LeaseMethod> kMethods = {
      {"lease.request", true, &OnRequest},
      {"lease.get", false, &OnGet},
      {"lease.wait", false, &OnGet, true},
      {"lease.attach", true, &OnAttach},
      {"lease.release", true, &OnRelease},
      {"lease.extend", true, &OnExtend},
      {"leases", false, &OnLeases},
      {"queue", false, &OnQueue},
      {"events", false, &OnEvents},
      {"zombies", false, &OnZombies},
      {"zombies.kill", false, &OnZombiesKill},
      {"backfill.gpus", false, &OnBackfillGpus},
      {"slurm.prolog", true, &OnSlurmProlog},
      {"slurm.epilog", true, &OnSlurmEpilog},
      {"gpu.drain", true, &OnDrain},
      {"gpu.undrain", true, &OnUndrain},
  };
  return kMethods;
}

}  // namespace tarmac::leases
