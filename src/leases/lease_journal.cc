// SPDX-License-Identifier: Apache-2.0
#include "leases/lease_journal.h"

#include <fmt/format.h>

#include "common/fs.h"

namespace tarmac::leases {

using nlohmann::json;

LeaseJournal::LeaseJournal(std::unique_ptr<store::LeaseState> state, Logger* logger)
    : state_(std::move(state)), logger_(logger) {}

void LeaseJournal::SaveLease(const sched::Lease& lease, const sched::TimeBase& base) {
  changes_.push_back({"lease", lease.id, sched::LeaseToJson(lease, base)});
}

void LeaseJournal::SavePending(const sched::LeaseBook& book, int64_t id, const sched::TimeBase& base) {
  if (const sched::Pending* p = book.FindPending(id))
    changes_.push_back({"queue", id, sched::PendingToJson(*p, base)});
  SaveNextId(book.next_id());
}

void LeaseJournal::SaveNextId(int64_t next_id) {
  changes_.push_back({"meta", 0, json{{"next_id", next_id}}});
}

void LeaseJournal::SaveShare(const sched::LeaseBook& book, int64_t uid, const sched::TimeBase& base) {
  auto it = book.share().accounts().find(uid);
  if (it == book.share().accounts().end()) return;
  changes_.push_back(
      {"share", uid,
       json{{"gpu_seconds", it->second.gpu_seconds}, {"as_of_unix", base.ToUnix(it->second.as_of)}}});
}

void LeaseJournal::SaveAll(const sched::LeaseBook& book, const sched::TimeBase& base) {
  for (const auto& [id, l] : book.leases()) SaveLease(l, base);
  for (const sched::Pending& p : book.queue())
    changes_.push_back({"queue", p.id, sched::PendingToJson(p, base)});
  for (const auto& [uid, account] : book.share().accounts()) SaveShare(book, uid, base);
  SaveNextId(book.next_id());
}

void LeaseJournal::Erase(const char* kind, int64_t id) { changes_.push_back({kind, id, nullptr}); }

void LeaseJournal::Save(const char* kind, int64_t id, json body) {
  changes_.push_back({kind, id, std::move(body)});
}

void LeaseJournal::Record(store::LeaseEvent event) { events_.push_back(std::move(event)); }

Status LeaseJournal::Commit(int64_t next_id, TimePoint now) {
  if (state_ == nullptr) {
    changes_.clear();
    events_.clear();
    return Status::OK();
  }
  if (is_file_lost_) return Status::IOError(problem_);
  if (!problem_.empty() && changes_.empty()) SaveNextId(next_id);
  Status s = state_->Apply(changes_, &events_);
  if (!s.ok()) {
    if (problem_.empty()) {
      logger_->Log(LogLevel::kError,
                   "leases: saving to {} failed: {}; no lease is granted until it works again",
                   state_->path(), s.message());
    }
    problem_ = fmt::format("lease state {} cannot be saved: {}", state_->path(), s.message());
    if (!retry_at_) retry_at_ = now + kRetryInterval;
    if (events_.size() > kMaxBacklogEvents) events_.erase(events_.begin(), events_.end() - kMaxBacklogEvents);
    return Status::IOError(problem_);
  }
  if (!problem_.empty()) logger_->Log(LogLevel::kInfo, "leases: saving to {} works again", state_->path());
  problem_.clear();
  retry_at_.reset();
  changes_.clear();
  events_.clear();
  return Status::OK();
}

std::optional<std::string> LeaseJournal::CheckFile(const sched::LeaseBook& book, const sched::TimeBase& base,
                                                   TimePoint now) {
  if (state_ == nullptr) return std::nullopt;
  Status file = state_->CheckFile();
  if (!file.ok()) {
    if (!is_file_lost_)
      logger_->Log(LogLevel::kError, "leases: {}; no lease is granted until it is back", file.message());
    is_file_lost_ = true;
    problem_ = file.message();
    // A deleted file is written anew from what the agent holds; a file that
    // took its place is not ours to overwrite.
    if (file.code() != StatusCode::kNotFound || (retry_at_ && now < *retry_at_)) {
      if (!retry_at_) retry_at_ = now + kRetryInterval;
      return std::nullopt;
    }
    retry_at_ = now + kRetryInterval;
    if (!MakeDirs(Dirname(state_->path())).ok() || !state_->Reopen().ok()) return std::nullopt;
    is_file_lost_ = false;
    SaveAll(book, base);
    return file.message() + "; written anew from the agent's memory";
  }
  if (is_file_lost_) {  // The file is ours again (for example, put back).
    is_file_lost_ = false;
    SaveAll(book, base);
  }
  if (!problem_.empty() && retry_at_ && now >= *retry_at_) {
    // A store that was read-only, full or locked may work again; a fresh
    // handle does not keep a read-only state.
    retry_at_ = now + kRetryInterval;
    state_->Reopen().IgnoreError();
  }
  return std::nullopt;
}

json LeaseJournal::StateJson() const {
  json j = {{"path", state_ == nullptr ? json(nullptr) : json(state_->path())}, {"ok", problem_.empty()}};
  if (!problem_.empty()) j["problem"] = problem_;
  j["unsaved_changes"] = changes_.size();
  return j;
}

void LeaseJournal::TakeBack(Mark mark) {
  changes_.resize(mark.changes);
  events_.resize(mark.events);
}

}  // namespace tarmac::leases
