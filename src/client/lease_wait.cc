// SPDX-License-Identifier: Apache-2.0
#include "client/lease_wait.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "common/clock.h"

namespace tarmac::client {

using nlohmann::json;

Result<LeaseAnswer> WaitForGrant(const AgentClient& agent, const LeaseAnswer& queued, int interrupt_fd,
                                 const std::function<void(const LeaseAnswer&)>& on_update,
                                 std::chrono::milliseconds refresh) {
  for (;;) {
    Result<LeaseAnswer> now = agent.WaitLease(queued.id, refresh, interrupt_fd);
    if (!now.ok() || !now.value().is_queued()) return now;
    if (on_update) on_update(now.value());
  }
}

LeaseWatcher::News LeaseWatcher::Poll() {
  News news;
  auto now = RealSteadyNow();
  if (now < next_) return news;
  next_ = now + std::chrono::seconds(1);
  CallOptions once;
  once.patience = std::chrono::milliseconds(0);
  Result<LeaseAnswer> got = agent_->GetLease(id_, once);
  if (!got.ok()) return news;
  if (got.value().is_granted()) {
    const std::string& warning = got.value().lease.warning;
    if (!warning.empty() && warning != warned_) news.warning = warning;
    warned_ = warning;
  } else if (got.value().is_ended() && MarkEnded()) {
    news.ended = got.value().reason;
  }
  return news;
}

bool LeaseWatcher::MarkEnded() {
  if (has_told_end_) return false;
  has_told_end_ = true;
  return true;
}

bool IsRevoking(const sched::LeaseShown& lease) { return lease.revoke_by_unix.has_value(); }

RevocationWatch::RevocationWatch(const AgentClient* agent, int64_t id,
                                 std::function<void(const sched::LeaseShown& lease)> on_revoked)
    : stop_fd_(::eventfd(0, EFD_CLOEXEC)) {
  int stop_fd = stop_fd_;
  thread_ = std::thread([agent, id, stop_fd, on_revoked = std::move(on_revoked)] {
    for (;;) {
      Result<LeaseAnswer> got = agent->WatchLease(id, std::chrono::minutes(5), stop_fd);
      if (!got.ok()) {
        if (got.status().code() == StatusCode::kCancelled) return;
        // No agent for now: ask again in a while (or until told to stop).
        pollfd p{stop_fd, POLLIN, 0};
        if (::poll(&p, 1, 1000) > 0) return;
        continue;
      }
      if (got.value().is_ended()) return;
      if (got.value().is_granted() && IsRevoking(got.value().lease)) {
        on_revoked(got.value().lease);
        return;
      }
    }
  });
}

RevocationWatch::~RevocationWatch() {
  uint64_t one = 1;
  ssize_t ignored = ::write(stop_fd_, &one, sizeof(one));
  (void)ignored;
  if (thread_.joinable()) thread_.join();
  ::close(stop_fd_);
}

}  // namespace tarmac::client
