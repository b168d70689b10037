// SPDX-License-Identifier: Apache-2.0
//
// UtilizationHistory keeps each GPU's utilization over the last few minutes
// of ticks, so the agent can answer "how busy was this GPU recently" (pick)
// from its own samples instead of one instant.
//
// Memory is bounded: at most kCapacity readings per GPU (ten minutes at the
// 1 s default), in a ring.
//
// Thread safety: all methods may be called from any thread.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <vector>

#include "common/mutex.h"

namespace tarmac::node {

class UtilizationHistory {
 public:
  static constexpr size_t kCapacity = 600;

  // Records GPU `index`'s utilization (0..1) read at `at`.
  void Record(int index, std::chrono::steady_clock::time_point at, double ratio);

  // Mean of the readings of GPU `index` taken in (now - window, now]; empty
  // when there are none.
  std::optional<double> Mean(int index, std::chrono::steady_clock::time_point now,
                             std::chrono::seconds window) const;

  // The readings of GPU `index` taken in (now - window, now], oldest first
  // (what `tarmac top` draws the moment it starts).
  std::vector<double> Series(int index, std::chrono::steady_clock::time_point now,
                             std::chrono::seconds window) const;
  // How long before `now` the oldest of those readings was taken (0 when
  // there are none): the span the series covers.
  double SeriesSpanSeconds(int index, std::chrono::steady_clock::time_point now,
                           std::chrono::seconds window) const;

 private:
  struct Reading {
    std::chrono::steady_clock::time_point at;
    double ratio = 0;
  };
  struct Ring {
    std::vector<Reading> readings;
    size_t next = 0;
  };
  mutable Mutex mu_;
  std::map<int, Ring> rings_ GUARDED_BY(mu_);
};

}  // namespace tarmac::node
