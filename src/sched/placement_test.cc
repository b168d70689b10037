// SPDX-License-Identifier: Apache-2.0
#include "sched/placement.h"

#include <gtest/gtest.h>

#include "testutil/sched_constants.h"

namespace tarmac::sched {
namespace {

constexpr int64_t kGiB = testing::kBytesPerGiB;

// Two HGX-style halves: GPUs 0-3 on NVLink domain 0 and NUMA 0, GPUs 4-7 on
// domain 1 and NUMA 1; PCIe switches pair them up.
std::vector<GpuSlot> Node() {
  std::vector<GpuSlot> gpus;
  for (int i = 0; i < 8; ++i) {
    GpuSlot g;
    g.index = i;
    g.uuid = "GPU-" + std::to_string(i);
    g.memory_free_bytes = 80 * kGiB;
    g.nvlink_domain = i / 4;
    g.pcie_switch = i / 2;
    g.numa_node = i / 4;
    gpus.push_back(g);
  }
  return gpus;
}

TEST(PlacementTest, LeasedForeignUnhealthyOrFullGpusAreNotFree) {
  std::vector<GpuSlot> gpus = Node();
  gpus[0].is_leased = true;
  gpus[1].has_foreign_processes = true;
  gpus[2].is_healthy = false;
  gpus[3].memory_free_bytes = 10 * kGiB;
  EXPECT_FALSE(IsFree(gpus[0], 0));
  EXPECT_FALSE(IsFree(gpus[1], 0));
  EXPECT_FALSE(IsFree(gpus[2], 0));
  EXPECT_FALSE(IsFree(gpus[3], 20 * kGiB));
  EXPECT_TRUE(IsFree(gpus[3], 10 * kGiB));
}

TEST(PlacementTest, MultiGpuRequestsStayInsideOneNvlinkDomain) {
  std::vector<GpuSlot> gpus = Node();
  gpus[1].is_leased = true;  // Domain 0 has three free GPUs, domain 1 four.
  GpuWants wants;
  wants.gpu_count = 3;
  EXPECT_EQ(PickGpus(gpus, wants), (std::vector<int>{0, 2, 3}));  // Tightest fit.
  wants.gpu_count = 4;
  EXPECT_EQ(PickGpus(gpus, wants), (std::vector<int>{4, 5, 6, 7}));
  wants.gpu_count = 7;
  EXPECT_EQ(PickGpus(gpus, wants), (std::vector<int>{0, 2, 3, 4, 5, 6, 7}));  // Spans when it must.
  wants.gpu_count = 8;
  EXPECT_FALSE(PickGpus(gpus, wants).has_value());
}

TEST(PlacementTest, WithoutNvlinkAPcieSwitchThenANumaNodeIsPreferred) {
  std::vector<GpuSlot> gpus = Node();
  for (GpuSlot& g : gpus) g.nvlink_domain = -1;
  gpus[0].is_leased = true;
  gpus[4].is_leased = true;
  GpuWants wants;
  wants.gpu_count = 2;
  EXPECT_EQ(PickGpus(gpus, wants), (std::vector<int>{2, 3}));  // Switch 1, whole.
  for (GpuSlot& g : gpus) g.pcie_switch = -1;
  wants.gpu_count = 3;
  EXPECT_EQ(PickGpus(gpus, wants), (std::vector<int>{1, 2, 3}));  // NUMA node 0.
}

TEST(PlacementTest, InsideOneNvlinkDomainAPcieSwitchThenANumaNodeIsPreferred) {
  // NVSwitch: all eight GPUs in one domain; switches and NUMA nodes as Node().
  std::vector<GpuSlot> gpus = Node();
  for (GpuSlot& g : gpus) g.nvlink_domain = 0;
  for (int i : {0, 1, 2}) gpus[static_cast<size_t>(i)].is_leased = true;  // Free: 3, then 4-7.
  GpuWants wants;
  wants.gpu_count = 2;
  EXPECT_EQ(PickGpus(gpus, wants), (std::vector<int>{4, 5}));  // Not 3 and 4: another switch, another node.
  wants.gpu_count = 3;
  EXPECT_EQ(PickGpus(gpus, wants), (std::vector<int>{4, 5, 6}));  // NUMA node 1.
  wants.gpu_count = 5;
  EXPECT_EQ(PickGpus(gpus, wants), (std::vector<int>{3, 4, 5, 6, 7}));
}

TEST(PlacementTest, OneGpuComesFromTheMostBrokenUpDomain) {
  std::vector<GpuSlot> gpus = Node();
  gpus[4].is_leased = true;
  GpuWants wants;
  EXPECT_EQ(PickGpus(gpus, wants), (std::vector<int>{5}));  // Domain 0 stays whole.
}

TEST(PlacementTest, NamedGpusAreAllOrNothing) {
  std::vector<GpuSlot> gpus = Node();
  GpuWants wants;
  wants.uuids = {"GPU-6", "GPU-2"};
  EXPECT_EQ(PickGpus(gpus, wants), (std::vector<int>{6, 2}));
  gpus[2].is_leased = true;
  EXPECT_FALSE(PickGpus(gpus, wants).has_value());
  wants.uuids = {"GPU-9"};
  EXPECT_FALSE(PickGpus(gpus, wants).has_value());
}

TEST(PlacementTest, MemoryAskedForIsRespected) {
  std::vector<GpuSlot> gpus = Node();
  for (GpuSlot& g : gpus) g.memory_free_bytes = 10 * kGiB;
  gpus[7].memory_free_bytes = 40 * kGiB;
  GpuWants wants;
  wants.min_free_memory_bytes = 20 * kGiB;
  EXPECT_EQ(PickGpus(gpus, wants), (std::vector<int>{7}));
  wants.gpu_count = 2;
  EXPECT_FALSE(PickGpus(gpus, wants).has_value());
}

}  // namespace
}  // namespace tarmac::sched
