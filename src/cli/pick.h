// SPDX-License-Identifier: Apache-2.0
//
// Choosing GPUs for a new job (`tarmac pick`). A GPU is a candidate when it
// is readable, in no lease, not in MIG mode, has at least the requested
// free memory, and its recent utilization (the device's own history, not
// one instant) is at most the limit. Candidates are ranked: least recently
// used first, then fewest processes, then most free memory, then lowest
// index. The GPUs chosen among them are placed as a lease's would be
// (sched/placement.h: several GPUs from one NVLink domain, PCIe switch or
// NUMA node; one GPU outside NVLink domains first), ties going to the
// better ranked. Pure function.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "node/node_view.h"

namespace tarmac::cli {

struct PickRequest {
  int count = 1;
  int64_t min_free_memory_bytes = 0;
  double max_utilization_ratio = 0.5;
};

struct PickResult {
  std::vector<const node::GpuView*> chosen;  // Best first; empty when not enough fit.
  std::vector<std::string> rejections;       // "gpu 3: 5.0 GiB free, need 20.0 GiB"
};

PickResult Pick(const node::NodeView& node_view, const PickRequest& request);

}  // namespace tarmac::cli
