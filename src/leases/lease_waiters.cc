// SPDX-License-Identifier: Apache-2.0
#include "leases/lease_waiters.h"

namespace tarmac::leases {

bool LeaseWaiters::IsSettled(const sched::LeaseBook& book, int64_t id, const Waiter& waiter) {
  if (book.FindPending(id) != nullptr) return false;
  if (!waiter.watches) return true;
  const sched::Lease* l = book.FindLease(id);
  return l == nullptr || l->revoking_since.has_value();
}

void LeaseWaiters::AnswerTouched(const sched::LeaseBook& book, const Answer& answer) {
  for (int64_t id : touched_) {
    auto [begin, end] = waiters_.equal_range(id);
    for (auto it = begin; it != end;) {
      if (!IsSettled(book, id, it->second)) {
        ++it;
        continue;
      }
      answer(id, it->second);
      it = waiters_.erase(it);
    }
  }
  touched_.clear();
}

void LeaseWaiters::Expire(const sched::LeaseBook& book, TimePoint now, bool is_saved, const Answer& answer) {
  if (waiters_.empty()) return;
  // One pass over the queue, not one search per waiter.
  std::set<int64_t> queued;
  for (const sched::Pending& p : book.queue()) queued.insert(p.id);
  for (auto it = waiters_.begin(); it != waiters_.end();) {
    bool is_settled =
        it->second.watches ? IsSettled(book, it->first, it->second) : queued.count(it->first) == 0;
    if (!it->second.reply.IsOpen()) {
      it = waiters_.erase(it);  // The caller hung up.
    } else if (now >= it->second.deadline || (is_saved && is_settled)) {
      answer(it->first, it->second);
      it = waiters_.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace tarmac::leases
