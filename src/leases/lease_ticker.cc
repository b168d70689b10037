// SPDX-License-Identifier: Apache-2.0
#include "leases/lease_ticker.h"

namespace tarmac::leases {

void LeaseTicker::Start() {
  thread_ = std::jthread([this](std::stop_token stop) { Loop(stop); });
}

void LeaseTicker::Stop() {
  if (!thread_.joinable()) return;
  thread_.request_stop();
  wake_.notify_all();
  thread_.join();
}

void LeaseTicker::Submit(std::shared_ptr<const fleet::Snapshot> snapshot) {
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
    std::shared_ptr<const fleet::Snapshot> snapshot;
    {
      MutexLock lock(&mu_);
      lock.Wait(wake_, stop, [this]() REQUIRES(mu_) { return next_ != nullptr; });
      if (stop.stop_requested()) return;
      snapshot = std::move(next_);
      next_.reset();
    }
    service_->OnTick(snapshot->fleet, snapshot->taken_at_steady);
    MutexLock lock(&mu_);
    ++ticks_;
  }
}

}  // namespace tarmac::leases
