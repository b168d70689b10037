// SPDX-License-Identifier: Apache-2.0
//
// Pushed grants: lease.wait holds a caller whose request is queued and
// answers it the moment the request is granted or ends, once that is saved
// (a waiter never hears of a grant that a failed commit takes back), or
// when its timeout passes, with where the request stands then.
#include <fmt/format.h>

#include <set>

#include "leases/callers.h"
#include "leases/lease_service.h"

namespace tarmac::leases {

using nlohmann::json;

std::optional<std::string> LeaseService::Wait(const MethodEntry& method, const ipc::Request& request,
                                              const ipc::PeerCredentials& peer, const ipc::Reply& reply) {
  sched::Caller caller = ResolveCaller(peer.uid, peer.gid, policy_.admin_group);
  MutexLock lock(&mu_);
  TimePoint now = clock_->SteadyNow();
  std::chrono::milliseconds timeout = kDefaultWaitTimeout;
  if (auto t = request.params.find("timeout_ms"); t != request.params.end()) {
    if (!t->is_number_integer() || t->get<int64_t>() < 0 || t->get<int64_t>() > kMaxWaitTimeout.count()) {
      return ipc::EncodeError(request.id, ipc::kErrorBadRequest,
                              fmt::format("params.timeout_ms: expected an integer from 0 to {}",
                                          kMaxWaitTimeout.count()));
    }
    timeout = std::chrono::milliseconds(t->get<int64_t>());
  }
  auto id = request.params.find("id");
  bool is_queued = id != request.params.end() && id->is_number_integer() &&
                   book_.FindPending(id->get<int64_t>()) != nullptr;
  // Not queued (granted, ended, unknown, malformed), nothing to wait for, or
  // nobody to answer later: answered now, as lease.get.
  if (!is_queued || timeout.count() == 0 || !reply.IsOpen()) return Answer(method, request, peer, caller, now);
  waiters_.emplace(id->get<int64_t>(), Waiter{request.id, caller, reply, now + timeout});
  return std::nullopt;
}

void LeaseService::AnswerWaiter(int64_t id, const Waiter& w, TimePoint now) {
  Result<json> state = Get(id, w.viewer, now);
  w.reply.Send(state.ok() ? ipc::EncodeResult(w.request_id, state.value())
                          : ipc::EncodeError(w.request_id, ipc::kErrorNotFound, state.status().message()));
}

void LeaseService::AnswerWaiters(TimePoint now) {
  for (int64_t id : touched_) {
    if (book_.FindPending(id) != nullptr) continue;
    auto [begin, end] = waiters_.equal_range(id);
    for (auto it = begin; it != end; ++it) AnswerWaiter(id, it->second, now);
    waiters_.erase(begin, end);
  }
  touched_.clear();
}

void LeaseService::ExpireWaiters(TimePoint now) {
  if (waiters_.empty()) return;
  // One pass over the queue, not one search per waiter.
  std::set<int64_t> queued;
  for (const sched::Pending& p : book_.queue()) queued.insert(p.id);
  for (auto it = waiters_.begin(); it != waiters_.end();) {
    if (!it->second.reply.IsOpen()) {
      it = waiters_.erase(it);  // The caller hung up.
    } else if (now >= it->second.deadline || (problem_.empty() && queued.count(it->first) == 0)) {
      AnswerWaiter(it->first, it->second, now);
      it = waiters_.erase(it);
    } else {
      ++it;
    }
  }
}

size_t LeaseService::waiter_count() const {
  MutexLock lock(&mu_);
  return waiters_.size();
}

}  // namespace tarmac::leases
