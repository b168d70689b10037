// SPDX-License-Identifier: Apache-2.0
#include "node/utilization_history.h"

#include <algorithm>

namespace tarmac::node {

void UtilizationHistory::Record(int index, std::chrono::steady_clock::time_point at, double ratio) {
  MutexLock lock(&mu_);
  Ring& ring = rings_[index];
  // The whole ring at its first reading: what the agent holds does not grow
  // (by doublings) over its first kCapacity ticks.
  if (ring.readings.empty()) ring.readings.reserve(kCapacity);
  if (ring.readings.size() < kCapacity) {
    ring.readings.push_back(Reading{at, ratio});
    return;
  }
  ring.readings[ring.next] = Reading{at, ratio};
  ring.next = (ring.next + 1) % kCapacity;
}

std::optional<double> UtilizationHistory::Mean(int index, std::chrono::steady_clock::time_point now,
                                               std::chrono::seconds window) const {
  MutexLock lock(&mu_);
  auto it = rings_.find(index);
  if (it == rings_.end()) return std::nullopt;
  double sum = 0;
  int n = 0;
  for (const Reading& r : it->second.readings) {
    if (r.at > now || now - r.at >= window) continue;
    sum += r.ratio;
    ++n;
  }
  if (n == 0) return std::nullopt;
  return sum / n;
}

std::vector<double> UtilizationHistory::Series(int index, std::chrono::steady_clock::time_point now,
                                               std::chrono::seconds window) const {
  MutexLock lock(&mu_);
  std::vector<double> out;
  auto it = rings_.find(index);
  if (it == rings_.end()) return out;
  const std::vector<Reading>& readings = it->second.readings;
  // The ring's oldest reading is at `next` once it is full.
  size_t start = readings.size() < kCapacity ? 0 : it->second.next;
  for (size_t i = 0; i < readings.size(); ++i) {
    const Reading& r = readings[(start + i) % readings.size()];
    if (r.at > now || now - r.at >= window) continue;
    out.push_back(r.ratio);
  }
  return out;
}

double UtilizationHistory::SeriesSpanSeconds(int index, std::chrono::steady_clock::time_point now,
                                             std::chrono::seconds window) const {
  MutexLock lock(&mu_);
  auto it = rings_.find(index);
  if (it == rings_.end()) return 0;
  std::chrono::steady_clock::duration oldest{0};
  for (const Reading& r : it->second.readings) {
    if (r.at > now || now - r.at >= window) continue;
    oldest = std::max(oldest, now - r.at);
  }
  return std::chrono::duration<double>(oldest).count();
}

}  // namespace tarmac::node
