// SPDX-License-Identifier: Apache-2.0
//
// The callers of lease.wait the lease service holds (LeaseService::Wait),
// by request id, until their request is settled (granted or ended; for a
// watcher of a granted lease: revoked or ended), their timeout passes or
// they hang up. Each event marks the id it concerns (Touch); once what
// happened is saved, the touched ids' settled waiters are answered, so a
// waiter never hears of a change that a failed commit takes back.
//
// Thread safety: none of its own; the lease service calls it under its
// lock.
#pragma once

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "ipc/reply.h"
#include "sched/lease_book.h"

namespace tarmac::leases {

class LeaseWaiters {
 public:
  using TimePoint = sched::TimePoint;
  struct Waiter {
    nlohmann::json request_id;
    sched::Caller viewer;
    ipc::Reply reply;
    TimePoint deadline;
    bool watches = false;  // Waits on a granted lease: for its revocation or end.
  };
  // Sends `waiter` where request `id` stands now.
  using Answer = std::function<void(int64_t id, const Waiter& waiter)>;

  void Add(int64_t id, Waiter waiter) { waiters_.emplace(id, std::move(waiter)); }
  // Something happened to `id`: its waiters are looked at by AnswerTouched.
  void Touch(int64_t id) {
    if (waiters_.count(id) != 0) touched_.insert(id);
  }
  // Answers the touched ids' waiters that `book` settles; forgets the
  // touched ids.
  void AnswerTouched(const sched::LeaseBook& book, const Answer& answer);
  // Answers the waiters past their deadline and, when `is_saved` (the book
  // is as saved), those the book settles; drops those whose caller hung up.
  void Expire(const sched::LeaseBook& book, TimePoint now, bool is_saved, const Answer& answer);
  size_t size() const { return waiters_.size(); }

  // Whether `waiter` of request `id` has its answer in `book`.
  static bool IsSettled(const sched::LeaseBook& book, int64_t id, const Waiter& waiter);

 private:
  std::multimap<int64_t, Waiter> waiters_;  // By request id.
  std::set<int64_t> touched_;
};

}  // namespace tarmac::leases
