// SPDX-License-Identifier: Apache-2.0
#include "client/lease_wait.h"

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
  auto now = std::chrono::steady_clock::now();
  if (now < next_) return news;
  next_ = now + std::chrono::seconds(1);
  CallOptions once;
  once.patience = std::chrono::milliseconds(0);
  Result<LeaseAnswer> got = agent_->GetLease(id_, once);
  if (!got.ok()) return news;
  if (got.value().is_granted()) {
    const json& lease = got.value().lease;
    std::string warning = lease.contains("warning") && lease["warning"].is_string() ? lease["warning"].get<std::string>()
                                                                                     : std::string();
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

}  // namespace tarmac::client
