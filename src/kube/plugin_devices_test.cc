// SPDX-License-Identifier: Apache-2.0
#include "kube/plugin_devices.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace tarmac::kube {
namespace {

// Eight GPUs: NVLink pairs (0,1) (2,3) (4,5) (6,7); 0-3 on NUMA node 0.
node::NodeView Machine() {
  node::NodeView f;
  for (int i = 0; i < 8; ++i) {
    node::GpuView g;
    g.info.index = i;
    g.info.uuid = "GPU-" + std::to_string(i);
    g.info.pci_bus_id = "0000:" + std::to_string(10 + i) + ":00.0";
    g.info.numa_node = i / 4;
    f.gpus.push_back(g);
  }
  for (int i = 0; i < 8; ++i)
    f.gpus[static_cast<size_t>(i)].info.nvlink_peer_bus_ids = {
        f.gpus[static_cast<size_t>(i ^ 1)].info.pci_bus_id};
  return f;
}

std::vector<std::string> Sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

TEST(PluginDevicesTest, UnhealthyWhenLostCriticalOrHeldByALeaseOtherThanAPodsOrBackfill) {
  node::NodeView f = Machine();
  f.gpus[1].sample.health = node::GpuHealth::kLost;
  f.gpus[2].sample.health = node::GpuHealth::kUnresponsive;
  // GPU 4 a reservation, 5 a pod's, 3 backfill (which gives way to a pod).
  std::map<int, node::GpuLease> leases = {{4, {7, "alice", node::LeaseKind::kRun, false}},
                                          {5, {8, "ml/p", node::LeaseKind::kPod, false}},
                                          {3, {9, "bob", node::LeaseKind::kBackfill, false}}};
  std::vector<PluginDevice> d = DevicesOf(f, leases, {6});
  ASSERT_EQ(d.size(), 8u);
  std::vector<bool> healthy;
  for (const PluginDevice& x : d) healthy.push_back(x.is_healthy);
  EXPECT_EQ(healthy, (std::vector<bool>{true, false, false, true, false, true, false, true}));
  EXPECT_NE(d[4].why_unhealthy.find("lease 7"), std::string::npos);
  // A GPU to drain (an Xid the device plugin treats as fatal) is
  // Unhealthy, saying why; an application Xid leaves it healthy.
  f.gpus[7].xid_count = 2;
  f.gpus[7].xid_count_by_code = {{13, 1}};
  EXPECT_TRUE(DevicesOf(f, leases, {6})[7].is_healthy);
  f.gpus[7].xid_count_by_code[48] = 1;
  PluginDevice drained = DevicesOf(f, leases, {6})[7];
  EXPECT_FALSE(drained.is_healthy);
  EXPECT_EQ(drained.why_unhealthy, "to drain: Xid 48");
  f.gpus[7].xid_count = 0;
  f.gpus[7].xid_count_by_code.clear();
  EXPECT_EQ(d[0].numa_node, 0);
  EXPECT_EQ(d[7].numa_node, 1);
  // The driver gone: no devices at all (the kubelet then offers none).
  f.backend_error = "driver not loaded";
  EXPECT_TRUE(DevicesOf(f, {}, {}).empty());
}

TEST(PluginDevicesTest, PrefersNvlinkPairsAndTheGpusClosestToThoseThatMustBeIncluded) {
  node::NodeView f = Machine();
  std::vector<std::string> all;
  for (int i = 0; i < 8; ++i) all.push_back("GPU-" + std::to_string(i));
  // A pair from a whole set, and a pair when one of it is taken elsewhere.
  std::vector<std::string> two = Sorted(PreferredDevices(f, all, {}, 2));
  ASSERT_EQ(two.size(), 2u);
  int a = std::stoi(two[0].substr(4)), b = std::stoi(two[1].substr(4));
  EXPECT_EQ(a ^ 1, b);
  EXPECT_EQ(Sorted(PreferredDevices(f, {"GPU-0", "GPU-2", "GPU-3", "GPU-4"}, {}, 2)),
            Sorted({"GPU-2", "GPU-3"}));
  // Must include GPU-5: its NVLink peer, then its NUMA node.
  EXPECT_EQ(Sorted(PreferredDevices(f, all, {"GPU-5"}, 2)), Sorted({"GPU-4", "GPU-5"}));
  std::vector<std::string> three = PreferredDevices(f, {"GPU-0", "GPU-5", "GPU-6", "GPU-7"}, {"GPU-5"}, 3);
  EXPECT_EQ(Sorted(three), Sorted({"GPU-5", "GPU-6", "GPU-7"}));
  // Four of one NUMA node before mixing nodes.
  std::vector<std::string> four = Sorted(PreferredDevices(f, all, {}, 4));
  EXPECT_TRUE(four == Sorted({"GPU-0", "GPU-1", "GPU-2", "GPU-3"}) ||
              four == Sorted({"GPU-4", "GPU-5", "GPU-6", "GPU-7"}));
  // Fewer offered than asked: all of them.
  EXPECT_EQ(Sorted(PreferredDevices(f, {"GPU-1"}, {}, 2)), Sorted({"GPU-1"}));
}

// MIG strategies: single offers every instance as nvidia.com/gpu; mixed a
// resource per profile; none the GPUs whole. An instance in a tarmac lease
// or on a lost GPU is unhealthy.
TEST(PluginDevicesTest, MigStrategiesOfferInstancesAsNvidiaDoes) {
  node::NodeView f = Machine();
  f.gpus.resize(3);
  for (int g : {0, 1}) {
    f.gpus[static_cast<size_t>(g)].info.is_mig_enabled = true;
    f.gpus[static_cast<size_t>(g)].sample.has_mig_instances = true;
    for (int gi : {1, 2}) {
      node::MigInstance m;
      m.uuid = "MIG-" + std::to_string(g) + "-" + std::to_string(gi);
      m.gpu_instance_id = gi;
      m.profile = gi == 1 ? "3g.40gb" : "1g.10gb";
      f.gpus[static_cast<size_t>(g)].sample.mig_instances.push_back(m);
    }
  }
  f.gpus[1].sample.health = node::GpuHealth::kLost;
  std::map<std::string, node::GpuLease> mig_leases = {{"MIG-0-2", {5, "alice", node::LeaseKind::kRun, false}},
                                                      {"MIG-0-1", {6, "ml/p", node::LeaseKind::kPod, false}}};
  auto ids = [](const std::vector<PluginDevice>& d) {
    std::vector<std::string> out;
    for (const PluginDevice& x : d) out.push_back(x.id + (x.is_healthy ? "" : "!"));
    return out;
  };
  auto none = DevicesByResource(f, {}, mig_leases, {}, "nvidia.com/gpu", "none");
  ASSERT_EQ(none.size(), 1u);
  // GPU 0 whole is not offered: its instances are held (a pod could not
  // have it; Allocate would refuse it).
  EXPECT_EQ(ids(none["nvidia.com/gpu"]), (std::vector<std::string>{"GPU-0!", "GPU-1!", "GPU-2"}));
  auto single = DevicesByResource(f, {}, mig_leases, {}, "nvidia.com/gpu", "single");
  ASSERT_EQ(single.size(), 1u);
  EXPECT_EQ(ids(single["nvidia.com/gpu"]),
            (std::vector<std::string>{"MIG-0-1", "MIG-0-2!", "MIG-1-1!", "MIG-1-2!", "GPU-2"}));
  auto mixed = DevicesByResource(f, {}, mig_leases, {}, "nvidia.com/gpu", "mixed");
  ASSERT_EQ(mixed.size(), 3u);
  EXPECT_EQ(ids(mixed["nvidia.com/gpu"]), (std::vector<std::string>{"GPU-2"}));
  EXPECT_EQ(ids(mixed["nvidia.com/mig-3g.40gb"]), (std::vector<std::string>{"MIG-0-1", "MIG-1-1!"}));
  EXPECT_EQ(ids(mixed["nvidia.com/mig-1g.10gb"]), (std::vector<std::string>{"MIG-0-2!", "MIG-1-2!"}));
  EXPECT_EQ(MigResourceName("example.com/accel", "2g.20gb"), "example.com/mig-2g.20gb");
}

}  // namespace
}  // namespace tarmac::kube
