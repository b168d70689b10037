// SPDX-License-Identifier: Apache-2.0
//
// How the lease service saves what changes (lease_service.h): records and
// events kept until the next commit, commits that fail closed (a change is
// taken back when it cannot be saved), the state file watched for deletion
// or replacement, and the store reopened while it fails.
#include <fmt/format.h>

#include <algorithm>

#include "leases/callers.h"
#include "leases/lease_helpers.h"
#include "leases/lease_service.h"
#include "common/fs.h"

namespace tarmac::leases {

using namespace lease_helpers;  // NOLINT: this module's own helpers.
using nlohmann::json;

void LeaseService::SaveLease(const sched::Lease& lease) {
  changes_.push_back({"lease", lease.id, sched::LeaseToJson(lease, Base())});
}

void LeaseService::SavePending(int64_t id) {
  if (const sched::Pending* p = book_.FindPending(id)) changes_.push_back({"queue", id, sched::PendingToJson(*p, Base())});
  changes_.push_back({"meta", 0, json{{"next_id", book_.next_id()}}});
}

void LeaseService::SaveShare(int64_t uid) {
  auto it = book_.share().accounts().find(uid);
  if (it == book_.share().accounts().end()) return;
  changes_.push_back({"share", uid, json{{"gpu_seconds", it->second.gpu_seconds},
                                         {"as_of_unix", Base().ToUnix(it->second.as_of)}}});
}

void LeaseService::Erase(const char* kind, int64_t id) { changes_.push_back({kind, id, nullptr}); }

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
  if (waiters_.count(lease_id) != 0) touched_.insert(lease_id);
  logger_->Log(kind == "refused" ? LogLevel::kWarning : LogLevel::kInfo, "lease {}: {} ({}, by {}): {}", lease_id,
               kind, user, actor.name, detail);
  events_.push_back(std::move(e));
}

void LeaseService::RecordEvent(const std::string& kind, int64_t uid, const std::string& user, int64_t actor_uid,
                               const std::string& detail) {
  MutexLock lock(&mu_);
  Actor actor;
  if (actor_uid >= 0) actor = Actor{actor_uid, UserName(actor_uid)};
  Event(kind, 0, uid, user, {}, actor, detail);
  Flush(clock_->SteadyNow()).IgnoreError();  // Kept for the next try when this fails.
}

void LeaseService::SaveAll() {
  for (const auto& [id, l] : book_.leases()) SaveLease(l);
  for (const sched::Pending& p : book_.queue()) changes_.push_back({"queue", p.id, sched::PendingToJson(p, Base())});
  for (const auto& [uid, account] : book_.share().accounts()) SaveShare(uid);
  changes_.push_back({"meta", 0, json{{"next_id", book_.next_id()}}});
}

Status LeaseService::Flush(TimePoint now) {
  if (state_ == nullptr) {
    changes_.clear();
    events_.clear();
    AnswerWaiters(now);
    return Status::OK();
  }
  if (is_file_lost_) return Status::IOError(problem_);
  // While failing, even a tick with nothing to save tries a write, so that
  // the problem is cleared only when saving really works again.
  if (!problem_.empty() && changes_.empty()) changes_.push_back({"meta", 0, json{{"next_id", book_.next_id()}}});
  Status s = state_->Apply(changes_, &events_);
  if (!s.ok()) {
    if (problem_.empty()) {
      logger_->Log(LogLevel::kError, "leases: saving to {} failed: {}; no lease is granted until it works again",
                   state_->path(), s.message());
    }
    problem_ = fmt::format("lease state {} cannot be saved: {}", state_->path(), s.message());
    if (!retry_at_) retry_at_ = now + kStateRetryInterval;
    // Keep what the ticks changed for the next try, but not without bound:
    // events past this many are dropped (the state records are kept).
    constexpr size_t kMaxBacklogEvents = 10000;
    if (events_.size() > kMaxBacklogEvents) events_.erase(events_.begin(), events_.end() - kMaxBacklogEvents);
    return Status::IOError(problem_);
  }
  if (!problem_.empty()) logger_->Log(LogLevel::kInfo, "leases: saving to {} works again", state_->path());
  problem_.clear();
  retry_at_.reset();
  changes_.clear();
  events_.clear();
  AnswerWaiters(now);  // What waiters hear is saved.
  return Status::OK();
}

void LeaseService::CheckStateFile(TimePoint now) {
  if (state_ == nullptr) return;
  Status file = state_->CheckFile();
  if (!file.ok()) {
    if (!is_file_lost_) logger_->Log(LogLevel::kError, "leases: {}; no lease is granted until it is back", file.message());
    is_file_lost_ = true;
    problem_ = file.message();
    // A deleted file is written anew from what the agent holds; a file that
    // took its place is not ours to overwrite.
    if (file.code() != StatusCode::kNotFound || (retry_at_ && now < *retry_at_)) {
      if (!retry_at_) retry_at_ = now + kStateRetryInterval;
      return;
    }
    retry_at_ = now + kStateRetryInterval;
    if (!MakeDirs(Dirname(state_->path())).ok() || !state_->Reopen().ok()) return;
    is_file_lost_ = false;
    SaveAll();
    Event("state_recreated", 0, -1, "", {}, Actor{}, file.message() + "; written anew from the agent's memory");
    return;
  }
  if (is_file_lost_) {  // The file is ours again (for example, put back).
    is_file_lost_ = false;
    SaveAll();
  }
  if (!problem_.empty() && retry_at_ && now >= *retry_at_) {
    // A store that was read-only, full or locked may work again; a fresh
    // handle does not keep a read-only state.
    retry_at_ = now + kStateRetryInterval;
    state_->Reopen().IgnoreError();
  }
}

LeaseService::Undo LeaseService::Checkpoint() const {
  return Undo{book_, ended_, waiting_, keys_, changes_.size(), events_.size(), signalling_.size()};
}

void LeaseService::Rollback(Undo undo) {
  int64_t next_id = book_.next_id();
  book_ = std::move(undo.book);
  book_.ReserveIdsBelow(next_id);  // An id handed out once is never handed out again.
  ended_ = std::move(undo.ended);
  waiting_ = std::move(undo.waiting);
  keys_ = std::move(undo.keys);
  changes_.resize(undo.changes);
  events_.resize(undo.events);
  signalling_.resize(undo.signalling);
  for (auto it = runtime_.begin(); it != runtime_.end();) {
    it = book_.FindLease(it->first) == nullptr ? runtime_.erase(it) : std::next(it);
  }
  for (const auto& [id, l] : book_.leases()) runtime_[id];
}

void LeaseService::RememberKey(int64_t uid, const std::string& key, int64_t id) {
  if (key.empty()) return;
  constexpr size_t kMaxKeys = 2 * kMaxEndedRemembered;
  if (keys_.size() >= kMaxKeys) {
    auto oldest = std::min_element(keys_.begin(), keys_.end(),
                                   [](const auto& a, const auto& b) { return a.second < b.second; });
    keys_.erase(oldest);
  }
  keys_[{uid, key}] = id;
}

void LeaseService::RememberEnded(int64_t id, std::string why) {
  if (ended_.size() >= kMaxEndedRemembered) ended_.erase(ended_.begin());
  ended_[id] = std::move(why);
}

std::string LeaseService::Problem() const {
  MutexLock lock(&mu_);
  return problem_;
}

json LeaseService::StateJson() const {
  MutexLock lock(&mu_);
  json j = {{"path", state_ == nullptr ? json(nullptr) : json(state_->path())}, {"ok", problem_.empty()}};
  if (!problem_.empty()) j["problem"] = problem_;
  j["unsaved_changes"] = changes_.size();
  return j;
}

}  // namespace tarmac::leases
