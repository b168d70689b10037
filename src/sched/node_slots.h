// SPDX-License-Identifier: Apache-2.0
//
// The GPUs of a machine as placement sees them (placement.h): health, memory,
// NUMA node and NVLink domain (SlotsOf), and what uses them (MarkUse). One place for the lease service and
// the kubelet's preferred allocations to agree on topology. Pure.
#pragma once

#include <set>
#include <vector>

#include "node/node_view.h"
#include "sched/placement.h"

namespace tarmac::sched {

// GPUs joined by NVLink, directly or through each other, share a domain
// (the connected components of the link graph); a GPU without links is -1.
std::vector<int> NvLinkDomains(const node::NodeView& node_view);

// One slot per GPU, slots[i].index == i, with its MIG instances and its
// health verdict (drain: not healthy; degraded).
std::vector<GpuSlot> SlotsOf(const node::NodeView& node_view);

// Above this recent utilization a GPU outside any lease is busy.
inline constexpr double kBusyUtilizationRatio = 0.5;

// Marks on `slots` (SlotsOf(node_view)) the use outside leases, by the one
// meaning of free (placement.h): on each GPU not in `leased`, compute
// processes (foreign use) and a utilization above `busy_above_ratio` (the
// GPU's recent utilization when the view has it, else the last sample's).
// GPUs in `leased` get neither mark: their use is their lease's. Marking
// the leases themselves (GpuSlot::is_leased) is the caller's.
void MarkUse(const node::NodeView& node_view, const std::set<int>& leased, double busy_above_ratio,
             std::vector<GpuSlot>* slots);

}  // namespace tarmac::sched
