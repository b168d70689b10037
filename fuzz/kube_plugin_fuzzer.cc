// SPDX-License-Identifier: Apache-2.0
//
// What the device plugin takes from the kubelet: a pod-resources answer and
// a preferred-allocation request, as bytes off the wire. Neither may crash;
// a preferred allocation keeps every ID that must be included, never names
// an ID twice, names only IDs it was offered or told to include, and gives
// at most what was asked (or what must be included).
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>

#include "deviceplugin.pb.h"
#include "kube/plugin_devices.h"
#include "kube/pod_resources_proto.h"

namespace {

// Eight GPUs: NVLink pairs, two NUMA nodes.
const tarmac::node::NodeView& Fleet() {
  static const tarmac::node::NodeView node_view = [] {
    tarmac::node::NodeView f;
    for (int i = 0; i < 8; ++i) {
      tarmac::node::GpuView g;
      g.info.index = i;
      g.info.uuid = "GPU-" + std::to_string(i);
      g.info.pci_bus_id = "0000:1" + std::to_string(i) + ":00.0";
      g.info.numa_node = i / 4;
      f.gpus.push_back(g);
    }
    for (int i = 0; i < 8; ++i) f.gpus[i].info.nvlink_peer_bus_ids = {f.gpus[i ^ 1].info.pci_bus_id};
    return f;
  }();
  return node_view;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  v1::ListPodResourcesResponse pods;
  if (pods.ParseFromArray(data, static_cast<int>(size))) {
    // Every device of the resource, and only those, once each.
    std::set<std::string> listed;
    for (const v1::PodResources& p : pods.pod_resources()) {
      for (const v1::ContainerResources& c : p.containers()) {
        for (const v1::ContainerDevices& d : c.devices()) {
          if (d.resource_name() == "nvidia.com/gpu")
            listed.insert(d.device_ids().begin(), d.device_ids().end());
        }
      }
    }
    tarmac::kube::PodAllocations allocations = tarmac::kube::AllocationsOf(pods, "nvidia.com/gpu");
    if (allocations.size() != listed.size()) __builtin_trap();
    for (const auto& [id, names] : allocations) {
      if (listed.count(id) == 0) __builtin_trap();
    }
  }
  v1beta1::PreferredAllocationRequest request;
  if (!request.ParseFromArray(data, static_cast<int>(size))) return 0;
  for (const v1beta1::ContainerPreferredAllocationRequest& r : request.container_requests()) {
    if (r.allocation_size() > 64 || r.available_deviceids_size() > 256) continue;
    std::vector<std::string> available(r.available_deviceids().begin(), r.available_deviceids().end());
    std::vector<std::string> must(r.must_include_deviceids().begin(), r.must_include_deviceids().end());
    std::vector<std::string> chosen =
        tarmac::kube::PreferredDevices(Fleet(), available, must, r.allocation_size());
    std::set<std::string> unique(chosen.begin(), chosen.end());
    std::set<std::string> must_set(must.begin(), must.end());
    std::set<std::string> allowed(available.begin(), available.end());
    allowed.insert(must.begin(), must.end());
    if (unique.size() != chosen.size()) __builtin_trap();
    for (const std::string& id : must_set) {
      if (unique.count(id) == 0) __builtin_trap();
    }
    for (const std::string& id : chosen) {
      if (allowed.count(id) == 0) __builtin_trap();
    }
    if (chosen.size() >
        std::max<size_t>(must_set.size(), static_cast<size_t>(std::max(0, r.allocation_size())))) {
      __builtin_trap();
    }
  }
  return 0;
}
