// SPDX-License-Identifier: Apache-2.0
//
// GPUs for scheduler tests: `n` healthy, unleased 80 GiB GPUs named
// GPU-0..GPU-<n-1>, without topology.
#pragma once

#include <string>
#include <vector>

#include "sched/placement.h"

namespace tarmac::testing {

inline std::vector<sched::GpuSlot> FreeGpus(int n) {
  std::vector<sched::GpuSlot> gpus;
  for (int i = 0; i < n; ++i) {
    sched::GpuSlot g;
    g.index = i;
    g.uuid = "GPU-" + std::to_string(i);
    g.memory_free_bytes = int64_t{80} << 30;
    gpus.push_back(g);
  }
  return gpus;
}

}  // namespace tarmac::testing
