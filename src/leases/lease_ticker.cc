// SPDX-License-Identifier: Apache-2.0
#include "leases/lease_ticker.h"

namespace tarmac::leases {

void LeaseTicker::Start() {
  service_->OnNextWakeSooner([this] { Nudge(); });
  thread_ = std::jthread([this](std::stop_token stop) { Loop(stop); });
}

void LeaseTicker::Nudge() {
  {
    MutexLock lock(&mu_);
    is_nudged_ = true;
  }
  wake_.notify_one();
}

void LeaseTicker::Stop() {
  if (!thread_.joinable()) return;
  thread_.request_stop();
  wake_.notify_all();
  thread_.join();
}

void LeaseTicker::Submit(std::shared_ptr<const node::Snapshot> snapshot) {
  {
    MutexLock lock(&mu_);
    if (next_) ++skipped_;
    next_ = std::move(snapshot);
  }
  wake_.notify_one();
}

int64_t LeaseTicker::ticks() const {
  MutexLock lock(&mu_);
  return ticks_;
}

int64_t LeaseTicker::skipped() const {
  MutexLock lock(&mu_);
  return skipped_;
}

void LeaseTicker::Loop(std::stop_token stop) {
  for (;;) {
    std::shared_ptr<const node::Snapshot> snapshot;
    // A revoked backfill lease ends when its grace passes, and a backfill
    // gate's opening asks for a reading, not at the next snapshot after that.
    std::optional<std::chrono::steady_clock::time_point> deadline = service_->NextWake();
    {
      MutexLock lock(&mu_);
      auto has_news = [this]() REQUIRES(mu_) { return next_ != nullptr || is_nudged_; };
      if (deadline) {
        lock.WaitUntil(wake_, stop, *deadline, has_news);
      } else {
        lock.Wait(wake_, stop, has_news);
      }
      if (stop.stop_requested()) return;
      if (is_nudged_ && next_ == nullptr) {
        is_nudged_ = false;
        continue;  // A new revocation or backfill request: wait for its deadline too.
      }
      is_nudged_ = false;
      snapshot = std::move(next_);
      next_.reset();
    }
    if (snapshot == nullptr) {
      service_->OnWake();
      continue;
    }
    service_->OnTick(snapshot->node_view, snapshot->taken_at_steady);
    MutexLock lock(&mu_);
    ++ticks_;
  }
}

}  // namespace tarmac::leases
