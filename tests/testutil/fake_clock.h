// SPDX-License-Identifier: Apache-2.0
//
// A Clock that tests move by hand. SleepUntil returns at once, advancing the
// clock to the deadline.
#pragma once

#include <mutex>

#include "common/clock.h"

namespace tarmac::testing {

class FakeClock : public Clock {
 public:
  explicit FakeClock(
      std::chrono::system_clock::time_point wall = std::chrono::system_clock::from_time_t(1800000000))
      : wall_(wall) {}

  std::chrono::steady_clock::time_point SteadyNow() override {
    std::lock_guard<std::mutex> lock(mu_);
    return steady_;
  }
  std::chrono::system_clock::time_point WallNow() override {
    std::lock_guard<std::mutex> lock(mu_);
    return wall_;
  }
  bool SleepUntil(std::chrono::steady_clock::time_point deadline, std::stop_token stop) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (deadline > steady_) {
      wall_ += deadline - steady_;
      steady_ = deadline;
    }
    return !stop.stop_requested();
  }
  // Moves both clocks forward.
  void Advance(std::chrono::nanoseconds d) {
    std::lock_guard<std::mutex> lock(mu_);
    steady_ += d;
    wall_ += std::chrono::duration_cast<std::chrono::system_clock::duration>(d);
  }
  // Sets the wall clock alone (it may jump back; the steady clock never does).
  void SetWall(std::chrono::system_clock::time_point wall) {
    std::lock_guard<std::mutex> lock(mu_);
    wall_ = wall;
  }

 private:
  std::mutex mu_;
  std::chrono::steady_clock::time_point steady_{std::chrono::hours(1000)};
  std::chrono::system_clock::time_point wall_;
};

}  // namespace tarmac::testing
