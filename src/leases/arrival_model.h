// SPDX-License-Identifier: Apache-2.0
//
// When real requests tend to arrive on each GPU: the number of grants of
// leases other than backfill, per GPU index and local hour of the week
// (0 = Sunday 00:00-00:59 ... 167 = Saturday 23:00-23:59), over the weeks
// the history covers. Backfill's automatic gate (backfill_gate.h) asks it
// how likely a real arrival is before a backfill start would pay off.
//
// The rate of a GPU at an hour of the week is its count there divided by
// the weeks covered: from the oldest grant noted (or the moment the model
// was made, if earlier) to now, at least one week, so a young history
// never claims more than it saw. Arrivals are taken as Poisson at that
// rate: the chance of at least one within `window` is 1 - exp(-rate * window).
//
// Thread safety: none; the lease service calls it under its lock.
#pragma once

#include <array>
#include <chrono>
#include <map>
#include <string_view>

#include "store/lease_state.h"

namespace tarmac::leases {

inline constexpr int kHoursPerWeek = 7 * 24;

// The local hour of the week of a Unix time (0-167, Sunday first).
int HourOfWeek(double unix_seconds);

// What a backfill lease's "granted" event carries at the end of its detail,
// so the history tells its grants from real arrivals.
inline constexpr std::string_view kBackfillGrantMark = ", priority backfill";

// Whether a lease event is a real request's arrival: a "granted" event of a
// lease of another priority than backfill.
bool IsRealArrival(const store::LeaseEvent& e);

class ArrivalModel {
 public:
  // `since_unix`: when observing began (the agent's start).
  explicit ArrivalModel(double since_unix = 0) : since_unix_(since_unix) {}

  // A real request was granted GPU `gpu` at `at_unix`, in local hour of the
  // week `hour_of_week`.
  void Note(int gpu, int hour_of_week, double at_unix);

  // Arrivals per hour on `gpu` at `hour_of_week`, as of `now_unix`.
  double RatePerHour(int gpu, int hour_of_week, double now_unix) const;

  // The chance (0-1) of at least one arrival on `gpu` within `window`, at
  // its rate for `hour_of_week` as of `now_unix`.
  double ChanceWithin(int gpu, int hour_of_week, double now_unix, std::chrono::milliseconds window) const;

 private:
  double since_unix_;
  std::map<int, std::array<int, kHoursPerWeek>> counts_;  // By GPU index.
};

}  // namespace tarmac::leases
