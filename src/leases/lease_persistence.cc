// SPDX-License-Identifier: Apache-2.0
//
// How the lease service saves what changes (lease_service.h): its calls
// into the journal (lease_journal.h) with the book and the time base, and
// a change taken back whole (the book, what it wrote, its signals) when it
// cannot be saved.
#include <fmt/format.h>

#include <algorithm>

#include "leases/callers.h"
#include "leases/lease_service.h"
#include "leases/lease_text.h"

namespace tarmac::leases {

using nlohmann::json;

void LeaseService::SaveLease(const sched::Lease& lease) { journal_.SaveLease(lease, Base()); }

void LeaseService::SavePending(int64_t id) { journal_.SavePending(book_, id, Base()); }

void LeaseService::SaveShare(int64_t uid) { journal_.SaveShare(book_, uid, Base()); }

void LeaseService::Erase(const char* kind, int64_t id) { journal_.Erase(kind, id); }

void LeaseService::Event(const std::string& kind, int64_t lease_id, int64_t uid, const std::string& user,
                         const std::vector<int>& gpus, const Actor& actor, const std::string& detail) {
  store::LeaseEvent e;
  e.at_unix = std::chrono::duration<double>(clock_->WallNow().time_since_epoch()).count();
  e.kind = kind;
  e.lease_id = lease_id;
  e.uid = uid;
  e.user = user;
  e.actor_uid = actor.uid;
  e.actor = actor.name;
  e.gpus = gpus;
  e.detail = detail;
  waiters_.Touch(lease_id);
  logger_->Log(kind == "refused" ? LogLevel::kWarning : LogLevel::kInfo, "lease {}: {} ({}, by {}): {}",
               lease_id, kind, user, actor.name, detail);
  if (IsRealArrival(e)) {
    for (int g : e.gpus) backfill_.NoteArrival(g, e.at_unix);
  }
  journal_.Record(std::move(e));
}

void LeaseService::SeedArrivals() {
  // The newest grants of the last kArrivalWeeks weeks: what "auto" learns from.
  constexpr int64_t kArrivalWeeks = 8;
  constexpr int64_t kMostEvents = 100000;
  Result<std::vector<store::LeaseEvent>> events = journal_.Events(0, kMostEvents, /*is_newest=*/true);
  if (!events.ok()) return;  // Learned from now on instead.
  double since = std::chrono::duration<double>(clock_->WallNow().time_since_epoch()).count() -
                 kArrivalWeeks * 7 * 86400.0;
  for (const store::LeaseEvent& e : events.value()) {
    if (e.at_unix < since || !IsRealArrival(e)) continue;
    for (int g : e.gpus) backfill_.NoteArrival(g, e.at_unix);
  }
}

void LeaseService::RecordEvent(const std::string& kind, int64_t uid, const std::string& user,
                               int64_t actor_uid, const std::string& detail) {
  MutexLock lock(&mu_);
  Actor actor;
  if (actor_uid >= 0) actor = Actor{actor_uid, UserName(actor_uid)};
  Event(kind, 0, uid, user, {}, actor, detail);
  Flush(clock_->SteadyNow()).IgnoreError();  // Kept for the next try when this fails.
}

void LeaseService::RecordAgentEvents(const std::vector<std::pair<std::string, std::string>>& kind_detail) {
  MutexLock lock(&mu_);
  for (const auto& [kind, detail] : kind_detail) Event(kind, 0, -1, "", {}, Actor{}, detail);
  Flush(clock_->SteadyNow()).IgnoreError();  // Kept for the next try when this fails.
}

Status LeaseService::Flush(TimePoint now) {
  Status s = journal_.Commit(book_.next_id(), now);
  if (s.ok()) AnswerWaiters(now);  // What waiters hear is saved.
  return s;
}

void LeaseService::CheckStateFile(TimePoint now) {
  if (std::optional<std::string> why = journal_.CheckFile(book_, Base(), now)) {
    Event("state_recreated", 0, -1, "", {}, Actor{}, *why);
  }
}

bool LeaseService::CanSave(TimePoint now) {
  if (!journal_.problem().empty() && journal_.keeps_state()) {
    CheckStateFile(now);
    if (!journal_.is_file_lost()) Flush(now).IgnoreError();  // Clears the problem when it works.
  }
  return journal_.problem().empty();
}

LeaseService::Undo LeaseService::Checkpoint() const {
  return Undo{book_, memory_, waiting_, journal_.mark(), signaller_.asked()};
}

void LeaseService::Rollback(Undo undo) {
  int64_t next_id = book_.next_id();
  book_ = std::move(undo.book);
  book_.ReserveIdsBelow(next_id);  // An id handed out once is never handed out again.
  memory_ = std::move(undo.memory);
  waiting_ = std::move(undo.waiting);
  journal_.TakeBack(undo.journal);
  signaller_.TakeBack(undo.signals_asked);
  for (auto it = runtime_.begin(); it != runtime_.end();) {
    it = book_.FindLease(it->first) == nullptr ? runtime_.erase(it) : std::next(it);
  }
  for (const auto& [id, l] : book_.leases()) runtime_[id];
}

std::string LeaseService::Problem() const {
  MutexLock lock(&mu_);
  return journal_.problem();
}

json LeaseService::StateJson() const {
  MutexLock lock(&mu_);
  return journal_.StateJson();
}

}  // namespace tarmac::leases
