// SPDX-License-Identifier: Apache-2.0
#include "common/clock.h"

#include <condition_variable>
#include <mutex>

namespace tarmac {
namespace {

class RealClockImpl final : public Clock {
 public:
  std::chrono::steady_clock::time_point SteadyNow() override { return std::chrono::steady_clock::now(); }
  std::chrono::system_clock::time_point WallNow() override { return std::chrono::system_clock::now(); }
  bool SleepUntil(std::chrono::steady_clock::time_point deadline, std::stop_token stop) override {
    // A local mutex and condition variable keep this object stateless: the
    // stop_callback wakes exactly this sleeper.
    std::mutex mu;
    std::condition_variable_any cv;
    std::unique_lock<std::mutex> lock(mu);
    return !cv.wait_until(lock, stop, deadline, [] { return false; }) && !stop.stop_requested();
  }
};

}  // namespace

std::chrono::steady_clock::time_point RealSteadyNow() { return std::chrono::steady_clock::now(); }

std::chrono::system_clock::time_point RealWallNow() { return std::chrono::system_clock::now(); }

Clock* RealClock() {
  static RealClockImpl* const clock = new RealClockImpl();
  return clock;
}

}  // namespace tarmac
