// SPDX-License-Identifier: Apache-2.0
//
// The lease service's journal: the records (leases, queued requests,
// fair-share accounts, the next id) and events each change writes, kept
// until a commit saves them to store::LeaseState.
//
//  - Persistence fails closed: a commit that fails keeps what it had for
//    the next try, and problem() says why until a commit works again.
//  - Mark() and TakeBack() drop what a change wrote when the change itself
//    is taken back (it could not be saved).
//  - The state file is watched: one deleted under the agent is written anew
//    from the book; one replaced by another file is left alone and
//    reported. A failing store is reopened every kRetryInterval (a fresh
//    handle does not keep a read-only state).
//  - Past kMaxBacklogEvents unsaved events, the oldest are dropped (the
//    records are kept).
//
// Thread safety: none of its own; the lease service calls it under its
// lock.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/log.h"
#include "sched/lease_book.h"
#include "sched/lease_json.h"
#include "store/lease_state.h"

namespace tarmac::leases {

class LeaseJournal {
 public:
  using TimePoint = sched::TimePoint;
  static constexpr std::chrono::seconds kRetryInterval{5};
  static constexpr size_t kMaxBacklogEvents = 10000;

  // `state` may be null: leases then live in memory only, and every commit
  // works.
  LeaseJournal(std::unique_ptr<store::LeaseState> state, Logger* logger);

  // Whether lease changes are kept in a state file at all.
  bool keeps_state() const { return state_ != nullptr; }
  // The state file; REQUIRES: keeps_state().
  const std::string& path() const { return state_->path(); }
  // The saved rows of `kind` ("lease", "queue", "share", "meta", "drain"), and the
  // saved events after `after_seq`. REQUIRES: keeps_state().
  Result<std::vector<std::pair<int64_t, nlohmann::json>>> Load(const std::string& kind) {
    return state_->Load(kind);
  }
  Result<std::vector<store::LeaseEvent>> Events(int64_t after_seq, int64_t limit, bool is_newest = false) {
    return state_->Events(after_seq, limit, is_newest);
  }

  void SaveLease(const sched::Lease& lease, const sched::TimeBase& base);
  // Request `id` as the book queues it (erased when it is no longer
  // queued is the caller's to say), and the book's next id.
  void SavePending(const sched::LeaseBook& book, int64_t id, const sched::TimeBase& base);
  void SaveNextId(int64_t next_id);
  void SaveShare(const sched::LeaseBook& book, int64_t uid, const sched::TimeBase& base);
  // Every record of `book`: a state file written anew.
  void SaveAll(const sched::LeaseBook& book, const sched::TimeBase& base);
  void Erase(const char* kind, int64_t id);
  // Any other record: `body` as row `id` of `kind` ("drain").
  void Save(const char* kind, int64_t id, nlohmann::json body);
  void Record(store::LeaseEvent event);
  bool has_events() const { return !events_.empty(); }
  size_t unsaved_changes() const { return changes_.size(); }

  // Saves what was written since the last commit. On failure keeps it and
  // sets problem(); while failing, even a commit with nothing written
  // writes the next id, so that the problem is cleared only when saving
  // really works again.
  Status Commit(int64_t next_id, TimePoint now);

  // Notices a state file deleted or replaced, and reopens a failing store
  // once kRetryInterval has passed. A deleted file is written anew from
  // `book`: then says why (for the caller's event).
  std::optional<std::string> CheckFile(const sched::LeaseBook& book, const sched::TimeBase& base,
                                       TimePoint now);

  // Why lease changes cannot be saved now; empty when they can.
  const std::string& problem() const { return problem_; }
  // The state file was deleted or replaced and is not back yet.
  bool is_file_lost() const { return is_file_lost_; }
  // For `hello`: the path, whether saving works, the problem, the backlog.
  nlohmann::json StateJson() const;

  struct Mark {
    size_t changes = 0;
    size_t events = 0;
  };
  Mark mark() const { return {changes_.size(), events_.size()}; }
  // Drops what was written after `mark`.
  void TakeBack(Mark mark);

 private:
  std::unique_ptr<store::LeaseState> state_;
  Logger* logger_;
  std::string problem_;
  std::optional<TimePoint> retry_at_;
  bool is_file_lost_ = false;
  std::vector<store::StateChange> changes_;
  std::vector<store::LeaseEvent> events_;
};

}  // namespace tarmac::leases
