// SPDX-License-Identifier: Apache-2.0
//
// Choosing GPUs for a new job (`tarmac pick`). A GPU is a candidate when it
// is free by the one meaning `tarmac run` and the lease service use
// (sched/placement.h, sched/node_slots.h): health not drain, no lease, no
// process outside a lease, its recent utilization (the device's own
// history, not one instant) at most the limit, not in MIG mode, and at
// least the requested free memory. Candidates are ranked: least recently
// used first, then most free memory, then lowest index. The GPUs chosen
// among them are placed as a lease's would be (sched/placement.h: ok GPUs
// before degraded ones; several GPUs from one NVLink domain, PCIe switch or
// NUMA node; one GPU outside NVLink domains first), ties going to the
// better ranked. Pure function.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "node/health_verdict.h"
#include "node/node_view.h"

namespace tarmac::cli {

struct PickRequest {
  int count = 1;
  int64_t min_free_memory_bytes = 0;
  double max_utilization_ratio = 0.5;
};

// What pick made of one GPU.
struct PickJudgement {
  const node::GpuView* gpu = nullptr;
  bool is_free = false;
  bool is_chosen = false;
  node::HealthVerdict health;  // Judged once, for the reasons and --json.
  std::string why;             // "leased to alice (lease 4); tarmac run queues for it"
};

struct PickResult {
  std::vector<const node::GpuView*> chosen;  // Best first; empty when not enough fit.
  std::vector<std::string> rejections;       // "gpu 3: 5.0 GiB free, need 20.0 GiB"
  std::vector<PickJudgement> gpus;           // Every GPU, in index order.
};

PickResult Pick(const node::NodeView& node_view, const PickRequest& request);

}  // namespace tarmac::cli
