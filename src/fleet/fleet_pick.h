// SPDX-License-Identifier: Apache-2.0
//
// `tarmac fleet pick`: the node and GPUs that fit a job best now, for labs
// without a cluster scheduler. A hint, not a lease: nothing is held until
// the job leases them on that node. A GPU is a candidate when it is free as
// for `tarmac pick` (cli/pick.h, sched/placement.h): its node up, its
// health verdict not drain, in no lease, no process on it, not lost,
// utilization read (a GPU in MIG mode reports none) and at most the limit
// over the last minute, with the free memory asked; ranked ok before
// degraded, then by that utilization in 5 % steps, then most free memory,
// then lowest index. The node is the one whose chosen GPUs include the
// fewest degraded ones, then the one that fits with the fewest candidates
// to spare (so emptier nodes stay whole for bigger jobs), then the least
// busy, then by name. Pure.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fleet/fleet_view.h"

namespace tarmac::fleet {

struct FleetPickRequest {
  int count = 1;
  int64_t min_free_memory_bytes = 0;
  double max_utilization_ratio = 0.5;
  std::string model;  // A part of the model name, any case; empty: any.
};

struct FleetPick {
  const FleetNode* node = nullptr;    // Null when no node fits.
  std::vector<const FleetGpu*> gpus;  // Best first.
  std::string why_none;               // When none fits: the nearest node and what it lacks.
};

FleetPick PickInFleet(const FleetView& view, const FleetPickRequest& request);

}  // namespace tarmac::fleet
