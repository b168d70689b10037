// SPDX-License-Identifier: Apache-2.0
//
// The lease service's state and the steps that change it (lease_core.h):
// saving and telling, commits and what they settle, grants, restore.
#include "leases/lease_core.h"

#include <fmt/format.h>

#include "common/json_fields.h"
#include "common/random_id.h"
#include "common/units.h"
#include "leases/callers.h"
#include "leases/gpu_drains.h"
#include "leases/lease_answers.h"
#include "leases/lease_text.h"

namespace tarmac::leases {

using nlohmann::json;
using std::chrono::duration_cast;
using std::chrono::seconds;
using TimePoint = sched::TimePoint;

namespace {

void AnswerWaiter(LeaseCore& core, int64_t id, const LeaseWaiters::Waiter& w, TimePoint now) {
  Result<json> state = LeaseStateJson(core, id, w.viewer, now);
  w.reply.Send(state.ok() ? ipc::EncodeResult(w.request_id, state.value())
                          : ipc::EncodeError(w.request_id, ipc::kErrorNotFound, state.status().message()));
}

node::AgentFigures ComputeFigures(const LeaseCore& core) {
  TimePoint now = core.clock->SteadyNow();
  node::AgentFigures f;
  for (sched::Priority p : {sched::Priority::kBackfill, sched::Priority::kLow, sched::Priority::kNormal,
                            sched::Priority::kHigh}) {
    f.leases_by_priority[sched::PriorityName(p)] = 0;
  }
  f.backfill_gpu_seconds = core.backfill_gpu_seconds_ended;
  for (const auto& [id, l] : core.book.leases()) {
    f.leases_by_priority[sched::PriorityName(l.priority)]++;
    if (l.kind == node::LeaseKind::kPod) f.kube_pod_leases++;
    if (l.priority == sched::Priority::kBackfill) {
      f.backfill_gpu_seconds +=
          static_cast<double>(l.gpus.size()) * std::chrono::duration<double>(now - l.granted_at).count();
    }
  }
  f.queued = static_cast<int64_t>(core.book.queue().size());
  f.backfill_preemptions = core.backfill_preemptions;
  return f;
}

void AnnounceRevocations(LeaseCore& core, TimePoint now) {
  for (const sched::Preemption& p : core.book.last_decision().preemptions) {
    const sched::Lease* l = core.book.FindLease(p.lease_id);
    if (l == nullptr) continue;
    core.SaveLease(*l);
    core.CountPreemption(*l);
    const sched::Pending* wants = core.book.FindPending(p.request_id);
    core.Event("preempting", l->id, l->uid, l->user, l->gpus, Actor{},
               fmt::format("revoked for request {}{}: ends by {} ({} s of grace)", p.request_id,
                           wants != nullptr ? " of " + wants->owner.user : std::string(),
                           UtcText(core.Base().ToUnix(now + core.policy.backfill.grace)),
                           duration_cast<seconds>(core.policy.backfill.grace).count()));
  }
}

}  // namespace

LeaseCore::LeaseCore(LeasePolicy policy_in, std::unique_ptr<store::LeaseState> state,
                     ProcessControl* processes, Clock* clock_in, Logger* logger_in)
    : policy(std::move(policy_in)),
      process_control(processes),
      clock(clock_in),
      logger(logger_in),
      signaller(processes),
      journal(std::move(state), logger_in),
      zombies(policy.zombies),
      gate(policy.backfill, std::chrono::duration<double>(clock_in->WallNow().time_since_epoch()).count()) {
  loans.SetPolicy(policy.backfill.lend_after, policy.backfill.lend_margin_bytes);
}

sched::TimeBase LeaseCore::Base() const { return {clock->SteadyNow(), clock->WallNow()}; }

std::shared_ptr<Publication> LeaseCore::MakePublication() const {
  auto marks = std::make_shared<Publication>();
  for (const auto& [id, l] : book.leases()) {
    node::GpuLease mark{id, l.user, sched::KindOf(l), l.revoking_since.has_value(), l.slurm_job};
    if (sched::IsLoan(l)) continue;  // Its lender's mark names it, below.
    if (sched::IsMigLease(l)) {
      marks->mig_leases[l.uuids[0]] = mark;
      continue;
    }
    for (int g : l.gpus) marks->leases[g] = mark;
  }
  for (const auto& [id, l] : book.leases()) {
    if (!sched::IsLoan(l)) continue;
    for (int g : l.gpus) {
      if (auto it = marks->leases.find(g); it != marks->leases.end()) {
        it->second.lent_to = id;
        it->second.lent_to_user = l.user;
      }
    }
  }
  marks->preemptions = backfill_preemptions_by_gpu;
  marks->drains = drains;
  marks->figures = ComputeFigures(*this);
  return marks;
}

void LeaseCore::Event(const std::string& kind, int64_t lease_id, int64_t uid, const std::string& user,
                      const std::vector<int>& gpus, const Actor& actor, const std::string& detail) {
  store::LeaseEvent e;
  e.at_unix = std::chrono::duration<double>(clock->WallNow().time_since_epoch()).count();
  e.kind = kind;
  e.lease_id = lease_id;
  e.uid = uid;
  e.user = user;
  e.actor_uid = actor.uid;
  e.actor = actor.name;
  e.gpus = gpus;
  e.detail = detail;
  waiters.Touch(lease_id);
  logger->Log(kind == "refused" ? LogLevel::kWarning : LogLevel::kInfo, "lease {}: {} ({}, by {}): {}",
              lease_id, kind, user, actor.name, detail);
  if (IsRealArrival(e)) {
    for (int g : e.gpus) gate.NoteArrival(g, e.at_unix);
  }
  journal.Record(std::move(e));
}

Status LeaseCore::Flush(TimePoint now) {
  Status s = journal.Commit(book.next_id(), now);
  if (s.ok()) AnswerWaiters(now);  // What waiters hear is saved.
  return s;
}

bool LeaseCore::CanSave(TimePoint now) {
  if (!journal.problem().empty() && journal.keeps_state()) {
    CheckStateFile(now);
    if (!journal.is_file_lost()) Flush(now).IgnoreError();  // Clears the problem when it works.
  }
  return journal.problem().empty();
}

void LeaseCore::SaveDrains() { journal.Save("drain", 0, DrainsToJson(drains, xids_cleared_unix)); }

void LeaseCore::CheckStateFile(TimePoint now) {
  if (std::optional<std::string> why = journal.CheckFile(book, Base(), now)) {
    if (!drains.empty() || !xids_cleared_unix.empty()) SaveDrains();  // The new file keeps them too.
    Event("state_recreated", 0, -1, "", {}, Actor{}, *why);
  }
}

LeaseCore::Undo LeaseCore::Checkpoint() const {
  return Undo{book, memory, waiting, journal.mark(), signaller.asked(), drains, xids_cleared_unix};
}

void LeaseCore::Rollback(Undo undo) {
  int64_t next_id = book.next_id();
  book = std::move(undo.book);
  book.ReserveIdsBelow(next_id);  // An id handed out once is never handed out again.
  memory = std::move(undo.memory);
  waiting = std::move(undo.waiting);
  journal.TakeBack(undo.journal);
  signaller.TakeBack(undo.signals_asked);
  drains = std::move(undo.drains);
  xids_cleared_unix = std::move(undo.xids_cleared_unix);
  MarkDrained(drains, &slots);
  for (auto it = runtime.begin(); it != runtime.end();) {
    it = book.FindLease(it->first) == nullptr ? runtime.erase(it) : std::next(it);
  }
  for (const auto& [id, l] : book.leases()) runtime[id];
}

void LeaseCore::SeedArrivals() {
  // The newest grants of the last kArrivalWeeks weeks: what "auto" learns from.
  constexpr int64_t kArrivalWeeks = 8;
  constexpr int64_t kMostEvents = 100000;
  Result<std::vector<store::LeaseEvent>> events = journal.Events(0, kMostEvents, /*is_newest=*/true);
  if (!events.ok()) return;  // Learned from now on instead.
  double since = std::chrono::duration<double>(clock->WallNow().time_since_epoch()).count() -
                 kArrivalWeeks * 7 * 86400.0;
  for (const store::LeaseEvent& e : events.value()) {
    if (e.at_unix < since || !IsRealArrival(e)) continue;
    for (int g : e.gpus) gate.NoteArrival(g, e.at_unix);
  }
}

void LeaseCore::AnswerWaiters(TimePoint now) {
  waiters.AnswerTouched(book,
                        [&](int64_t id, const LeaseWaiters::Waiter& w) { AnswerWaiter(*this, id, w, now); });
}

void LeaseCore::ExpireWaiters(TimePoint now) {
  waiters.Expire(book, now, journal.problem().empty(),
                 [&](int64_t id, const LeaseWaiters::Waiter& w) { AnswerWaiter(*this, id, w, now); });
}

void LeaseCore::Decide(TimePoint now) {
  if (book.queue().empty() || !has_gpus) return;
  std::vector<sched::Lease> granted = book.Decide(slots, now, policy.keep_for_head_after);
  waiting.clear();
  for (const sched::Waiting& w : book.last_decision().waiting) waiting[w.request_id] = w;
  AnnounceRevocations(*this, now);
  for (sched::Lease& l : granted) RecordGrant(std::move(l), "");
}

void LeaseCore::RecordGrant(sched::Lease l, const std::string& more) {
  l.token = RandomHex128();  // A lease's token: 128 random bits as hex.
  book.SetToken(l.id, l.token);
  runtime[l.id];
  Erase("queue", l.id);
  SaveLease(l);
  // For how long, not until when: the event's own time says when, in the
  // reader's time zone, and the UUIDs are the lease's (tarmac leases --json).
  std::string span;
  if (l.ends_at) {
    span =
        " for " + FormatDuration(std::chrono::duration_cast<std::chrono::seconds>(*l.ends_at - l.granted_at));
  }
  Event("granted", l.id, l.uid, l.user, l.gpus, Actor{},
        fmt::format("GPU {}{}{}{}", GpuList(l.gpus), span, more,
                    l.priority == sched::Priority::kBackfill ? kBackfillGrantMark : std::string_view()));
}

Result<const sched::Lease*> LeaseCore::GrantHeld(const sched::Caller& owner, sched::Lease lease,
                                                 const Actor& actor, const std::string& why, TimePoint now) {
  lease.token = RandomHex128();  // A lease's token: 128 random bits as hex.
  Result<int64_t> id = book.Hold(owner, std::move(lease), slots, now);
  if (!id.ok()) return id.status();
  const sched::Lease* held = book.FindLease(id.value());
  runtime[held->id];
  SaveLease(*held);
  Event("granted", held->id, held->uid, held->user, held->gpus, actor,
        fmt::format("{} (GPU {})", why, GpuList(held->gpus)));
  return held;
}

void LeaseCore::CountPreemption(const sched::Lease& l) {
  ++backfill_preemptions;
  for (int g : l.gpus) ++backfill_preemptions_by_gpu[g];
  if (on_next_wake_sooner) on_next_wake_sooner();
}

std::map<int, int64_t> LeaseCore::LeasedGpus() const {
  std::map<int, int64_t> by_gpu;
  for (const auto& [id, l] : book.leases()) {
    if (sched::IsMigLease(l) || sched::IsLoan(l))
      continue;  // Holds an instance, not its GPU; or its lender does.
    for (int g : l.gpus) by_gpu[g] = id;
  }
  return by_gpu;
}

Status LeaseCore::Restore() {
  if (!journal.keeps_state()) return Status::OK();
  sched::TimeBase base = Base();
  std::vector<sched::Lease> leases;
  std::vector<sched::Pending> queue;
  int64_t next_id = 1;
  sched::FairShare share;
  for (const char* kind : {"lease", "queue", "share", "meta", "drain"}) {
    Result<std::vector<std::pair<int64_t, json>>> rows = journal.Load(kind);
    if (!rows.ok()) return rows.status().WithContext(fmt::format("lease state {}", journal.path()));
    for (const auto& [id, body] : rows.value()) {
      std::string where = fmt::format("lease state {}: {} {}", journal.path(), kind, id);
      if (std::string(kind) == "lease") {
        Result<sched::Lease> l = sched::LeaseFromJson(body, base);
        if (!l.ok()) return l.status().WithContext(where);
        leases.push_back(std::move(l).value());
      } else if (std::string(kind) == "queue") {
        Result<sched::Pending> p = sched::PendingFromJson(body, base);
        if (!p.ok()) return p.status().WithContext(where);
        queue.push_back(std::move(p).value());
      } else if (std::string(kind) == "share") {
        double gpu_seconds = 0;
        double as_of_unix = 0;
        JsonFields f(body, where);
        f.Get("gpu_seconds", &gpu_seconds);
        f.Get("as_of_unix", &as_of_unix);
        if (!f.ok()) return Status::Corruption(f.status().message());
        share.Restore(id, {gpu_seconds, base.FromUnix(as_of_unix)});
      } else if (std::string(kind) == "drain") {
        Status saved = DrainsFromJson(body, &drains, &xids_cleared_unix);
        if (!saved.ok()) return saved.WithContext(where);
      } else {
        JsonFields(body, where, JsonFields::kSkipWrongTypes).Optional("next_id", &next_id);
      }
    }
  }
  book.Restore(leases, queue, next_id, std::move(share));
  SeedArrivals();
  for (const sched::Lease& l : leases) memory.RememberKey(l.uid, l.request_key, l.id);
  for (const sched::Pending& p : queue) memory.RememberKey(p.owner.uid, p.request.request_key, p.id);
  TimePoint now = base.steady;
  int reattached = 0;
  int ended = 0;
  for (const sched::Lease& l : leases) {
    if (l.kind != node::LeaseKind::kRun || IsAlive(l.holder)) {
      ++reattached;
      runtime[l.id];
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
    book.Cancel(kAgentCaller, p.id).IgnoreError();
    Erase("queue", p.id);
    memory.RememberEnded(p.id, "its client exited while the agent was down");
    Event("client_gone", p.id, p.owner.uid, p.owner.user, {}, Actor{},
          "queued request dropped: " + memory.FindEnded(p.id)->why);
  }
  SendSignals(now);
  if (Status s = Flush(now); !s.ok()) return s;
  logger->Log(LogLevel::kInfo,
              "leases: restored {} lease{} ({} re-attached, {} ended: client gone) and {} queued request{} "
              "({} dropped) from {}",
              leases.size(), leases.size() == 1 ? "" : "s", reattached, ended, queue.size(),
              queue.size() == 1 ? "" : "s", dropped, journal.path());
  return Status::OK();
}

}  // namespace tarmac::leases
