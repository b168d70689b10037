// SPDX-License-Identifier: Apache-2.0
//
// The order in which `tarmac pick` and `tarmac fleet pick` rank candidate
// GPUs, in one place so the two never disagree: recent utilization in 5 %
// steps (so noise does not outrank free memory), then fewest processes,
// then most free memory, then lowest index. Pure.
#pragma once

#include <cmath>
#include <optional>

namespace tarmac::node {

struct PickRank {
  int busy_step = 0;  // BusyStep of its recent utilization.
  int processes = 0;
  double memory_free_bytes = 0;
  int index = 0;
};

// The 5 % step of `utilization` (0 when unknown).
inline int BusyStep(const std::optional<double>& utilization) {
  return utilization ? static_cast<int>(std::floor(*utilization * 20)) : 0;
}

// Whether `a` is the better pick.
inline bool IsBetterPick(const PickRank& a, const PickRank& b) {
  if (a.busy_step != b.busy_step) return a.busy_step < b.busy_step;
  if (a.processes != b.processes) return a.processes < b.processes;
  if (a.memory_free_bytes != b.memory_free_bytes) return a.memory_free_bytes > b.memory_free_bytes;
  return a.index < b.index;
}

}  // namespace tarmac::node
