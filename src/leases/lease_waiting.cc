// SPDX-License-Identifier: Apache-2.0
//
// Pushed grants: lease.wait holds a caller whose request is queued and
// answers it the moment the request is granted or ends, once that is saved
// (a waiter never hears of a grant that a failed commit takes back), or
// when its timeout passes, with where the request stands then. With
// `watch`, it holds the holder of a granted lease until the lease is
// revoked (backfill preempted) or ends.
#include <fmt/format.h>

#include "leases/callers.h"
#include "leases/lease_service.h"

namespace tarmac::leases {

using nlohmann::json;

std::optional<std::string> LeaseService::Wait(const MethodEntry& method, const ipc::Request& request,
                                              const ipc::PeerCredentials& peer, const ipc::Reply& reply) {
  sched::Caller caller = ResolveCaller(peer.uid, peer.gid, AdminGroup());
  MutexLock lock(&mu_);
  TimePoint now = clock_->SteadyNow();
  std::chrono::milliseconds timeout = kDefaultWaitTimeout;
  if (auto t = request.params.find("timeout_ms"); t != request.params.end()) {
    if (!t->is_number_integer() || t->get<int64_t>() < 0 || t->get<int64_t>() > kMaxWaitTimeout.count()) {
      return ipc::EncodeError(
          request.id, ipc::kErrorBadRequest,
          fmt::format("params.timeout_ms: expected an integer from 0 to {}", kMaxWaitTimeout.count()));
    }
    timeout = std::chrono::milliseconds(t->get<int64_t>());
  }
  bool watches = false;
  if (auto w = request.params.find("watch"); w != request.params.end()) {
    if (!w->is_boolean())
      return ipc::EncodeError(request.id, ipc::kErrorBadRequest, "params.watch: expected true or false");
    watches = w->get<bool>();
  }
  auto id = request.params.find("id");
  bool is_known = id != request.params.end() && id->is_number_integer();
  bool is_queued = is_known && book_.FindPending(id->get<int64_t>()) != nullptr;
  const sched::Lease* lease = is_known ? book_.FindLease(id->get<int64_t>()) : nullptr;
  bool is_watched = watches && lease != nullptr && !lease->revoking_since;
  // Nothing to wait for (ended, unknown, malformed; granted unless
  // watched), no time to wait, or nobody to answer later: answered now, as
  // lease.get.
  if ((!is_queued && !is_watched) || timeout.count() == 0 || !reply.IsOpen()) {
    return Answer(method, request, peer, caller, now);
  }
  waiters_.Add(id->get<int64_t>(),
               LeaseWaiters::Waiter{request.id, caller, reply, now + timeout, is_watched});
  return std::nullopt;
}

void LeaseService::AnswerWaiter(int64_t id, const LeaseWaiters::Waiter& w, TimePoint now) {
  Result<json> state = Get(id, w.viewer, now);
  w.reply.Send(state.ok() ? ipc::EncodeResult(w.request_id, state.value())
                          : ipc::EncodeError(w.request_id, ipc::kErrorNotFound, state.status().message()));
}

void LeaseService::AnswerWaiters(TimePoint now) {
  waiters_.AnswerTouched(
      book_, [&](int64_t id, const LeaseWaiters::Waiter& w) REQUIRES(mu_) { AnswerWaiter(id, w, now); });
}

void LeaseService::ExpireWaiters(TimePoint now) {
  waiters_.Expire(book_, now, journal_.problem().empty(),
                  [&](int64_t id, const LeaseWaiters::Waiter& w) REQUIRES(mu_) { AnswerWaiter(id, w, now); });
}

size_t LeaseService::waiter_count() const {
  MutexLock lock(&mu_);
  return waiters_.size();
}

}  // namespace tarmac::leases
