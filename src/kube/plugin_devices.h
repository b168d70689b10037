// SPDX-License-Identifier: Apache-2.0
//
// What the device plugin tells the kubelet about the node's GPUs, and which
// GPUs it prefers for a container. Pure.
//
//  - A device is a GPU, by UUID, on its NUMA node (none when unknown).
//  - It is Unhealthy while the GPU is lost or unresponsive, while the
//    doctor has a critical finding on it, and while a lease that is not a
//    pod's holds it (a GPU handed out by tarmac is not offered to pods);
//    offered whole (DevicesByResource), also while any lease holds one of
//    its MIG instances: only what can be allocated is offered.
//  - Preferred allocations come from tarmac's own placement
//    (sched/placement.h): GPUs joined by NVLink, then under one PCIe
//    switch, then on one NUMA node; GPUs the kubelet must include are kept
//    and the rest are the ones closest to them.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "node/node_view.h"

namespace tarmac::kube {

struct PluginDevice {
  std::string id;  // The GPU's UUID.
  bool is_healthy = true;
  std::optional<int> numa_node;
  std::string why_unhealthy;  // For the log; empty when healthy.
  bool operator==(const PluginDevice& o) const {
    return id == o.id && is_healthy == o.is_healthy && numa_node == o.numa_node;
  }
};

// The devices of `node_view` (none while the driver cannot be read). `leases`:
// the agent's lease on each GPU index; `critical_gpus`: GPU indices with a
// critical doctor finding.
std::vector<PluginDevice> DevicesOf(const node::NodeView& node_view,
                                    const std::map<int, node::GpuLease>& leases,
                                    const std::set<int>& critical_gpus);

// The devices of each resource the plugin offers, under MIG `strategy`:
//  - "none": `resource_name` is every GPU, whole (MIG or not);
//  - "single": `resource_name` is every GPU not in MIG mode, whole, and
//    every MIG instance (by its MIG UUID);
//  - "mixed": `resource_name` is every GPU not in MIG mode; each MIG
//    profile is a resource of its own, <domain>/mig-<profile>
//    ("nvidia.com/mig-1g.10gb"), listing its instances.
// An instance is unhealthy when its GPU is, or when a lease that is not a
// pod's holds it. `resource_name` is always in the answer (maybe empty).
std::map<std::string, std::vector<PluginDevice>> DevicesByResource(
    const node::NodeView& node_view, const std::map<int, node::GpuLease>& leases,
    const std::map<std::string, node::GpuLease>& mig_leases, const std::set<int>& critical_gpus,
    const std::string& resource_name, const std::string& strategy);

// The resource name of MIG `profile` under the mixed strategy.
std::string MigResourceName(const std::string& resource_name, const std::string& profile);

// `size` device IDs from `available`, all of `must_include` among them, by
// topology. Fewer when `available` has fewer; IDs not in `node_view` come last.
std::vector<std::string> PreferredDevices(const node::NodeView& node_view,
                                          const std::vector<std::string>& available,
                                          const std::vector<std::string>& must_include, int size);

}  // namespace tarmac::kube
