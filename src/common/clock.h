// SPDX-License-Identifier: Apache-2.0
//
// Clock is tarmac's only source of time. Production code receives a Clock*
// and never calls std::chrono::*::now() or sleeps directly, so tests can drive
// time with FakeClock (tests/testutil/fake_clock.h).
#pragma once

#include <chrono>
#include <cstdint>
#include <stop_token>

namespace tarmac {

class Clock {
 public:
  virtual ~Clock() = default;

  // Monotonic time for intervals and deadlines. Never jumps.
  virtual std::chrono::steady_clock::time_point SteadyNow() = 0;

  // Calendar time for data that leaves the process. May jump; never use it
  // to measure intervals.
  virtual std::chrono::system_clock::time_point WallNow() = 0;

  // Blocks until `deadline` or until `stop` is requested. Returns false if
  // stopped early.
  virtual bool SleepUntil(std::chrono::steady_clock::time_point deadline, std::stop_token stop) = 0;
};

// The process-wide real clock. Stateless; never deleted.
Clock* RealClock();

// The real clocks, for waits the kernel or a library times in real time
// whatever Clock the caller was given: a condition variable's timeout, a
// socket's, a gRPC deadline, a driver call that may hang. Their deadlines
// and the intervals they measure come from here; everything else takes a
// Clock*.
std::chrono::steady_clock::time_point RealSteadyNow();
std::chrono::system_clock::time_point RealWallNow();

// Whole seconds since the Unix epoch.
inline int64_t UnixSeconds(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
}

}  // namespace tarmac
