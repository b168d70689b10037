// SPDX-License-Identifier: Apache-2.0
#include "leases/arrival_model.h"

#include <algorithm>
#include <cmath>
#include <ctime>

namespace tarmac::leases {

constexpr double kSecondsPerWeek = 7 * 24 * 3600.0;

int HourOfWeek(double unix_seconds) {
  std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm local{};
  localtime_r(&t, &local);
  return local.tm_wday * 24 + local.tm_hour;
}

bool IsRealArrival(const store::LeaseEvent& e) {
  return e.kind == "granted" && std::string_view(e.detail).find(kBackfillGrantMark) == std::string_view::npos;
}

void ArrivalModel::Note(int gpu, int hour_of_week, double at_unix) {
  if (hour_of_week < 0 || hour_of_week >= kHoursPerWeek) return;
  auto [it, is_new] = counts_.try_emplace(gpu);
  if (is_new) it->second.fill(0);
  ++it->second[static_cast<size_t>(hour_of_week)];
  since_unix_ = std::min(since_unix_, at_unix);
}

double ArrivalModel::RatePerHour(int gpu, int hour_of_week, double now_unix) const {
  auto it = counts_.find(gpu);
  if (it == counts_.end() || hour_of_week < 0 || hour_of_week >= kHoursPerWeek) return 0;
  double weeks = std::max(1.0, (now_unix - since_unix_) / kSecondsPerWeek);
  return it->second[static_cast<size_t>(hour_of_week)] / weeks;
}

double ArrivalModel::ChanceWithin(int gpu, int hour_of_week, double now_unix,
                                  std::chrono::milliseconds window) const {
  double hours = std::chrono::duration<double>(window).count() / 3600;
  return 1 - std::exp(-RatePerHour(gpu, hour_of_week, now_unix) * hours);
}

}  // namespace tarmac::leases
