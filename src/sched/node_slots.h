// SPDX-License-Identifier: Apache-2.0
//
// The GPUs of a machine as placement sees them (placement.h): health, memory,
// NUMA node and NVLink domain, with no lease or foreign use marked (their
// users add those). One place for the lease service and the kubelet's
// preferred allocations to agree on topology. Pure.
#pragma once

#include <vector>

#include "node/node_view.h"
#include "sched/placement.h"

namespace tarmac::sched {

// GPUs joined by NVLink, directly or through each other, share a domain
// (the connected components of the link graph); a GPU without links is -1.
std::vector<int> NvLinkDomains(const node::NodeView& node_view);

// One slot per GPU, slots[i].index == i, with its MIG instances.
std::vector<GpuSlot> SlotsOf(const node::NodeView& node_view);

}  // namespace tarmac::sched
