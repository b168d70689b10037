// SPDX-License-Identifier: Apache-2.0
#include "cli/pick.h"

#include <gtest/gtest.h>

namespace tarmac::cli {
namespace {

constexpr int64_t kGib = int64_t{1} << 30;

// Eight idle 80 GiB GPUs; NVLink pairs {0,1}, {2,3}, {4,5}, {6,7} when
// `paired`.
node::NodeView Machine(bool paired) {
  node::NodeView f;
  for (int i = 0; i < 8; ++i) {
    node::GpuView g;
    g.info.index = i;
    g.info.uuid = "GPU-" + std::to_string(i);
    g.info.pci_bus_id = "00000000:0" + std::to_string(i) + ":00.0";
    g.info.memory_total_bytes = 80 * kGib;
    if (paired) g.info.nvlink_peer_bus_ids = {"00000000:0" + std::to_string(i ^ 1) + ":00.0"};
    g.sample.health = node::GpuHealth::kOk;
    g.sample.memory_free_bytes = 80 * kGib;
    g.sample.utilization_gpu_ratio = 0;
    f.gpus.push_back(g);
  }
  return f;
}

std::vector<int> Indices(const PickResult& r) {
  std::vector<int> out;
  for (const node::GpuView* g : r.chosen) out.push_back(g->info.index);
  return out;
}

TEST(PickTest, EachGpuLeftOutSaysWhy) {
  node::NodeView f = Machine(false);
  f.gpus[0].sample.health = node::GpuHealth::kLost;
  f.gpus[1].lease = node::GpuLease{4, "alice", node::LeaseKind::kRun, false};
  f.gpus[2].sample.memory_free_bytes = 5 * kGib;
  f.gpus[3].sample.utilization_gpu_ratio = 0.9;
  f.gpus[4].info.is_mig_enabled = true;
  PickResult r = Pick(f, PickRequest{.count = 5, .min_free_memory_bytes = 20 * kGib});
  EXPECT_TRUE(r.chosen.empty());  // Only three fit.
  ASSERT_EQ(r.rejections.size(), 5u);
  EXPECT_NE(r.rejections[0].find("gpu 0: to drain: unreadable (lost)"), std::string::npos) << r.rejections[0];
  EXPECT_NE(r.rejections[1].find("leased to alice (lease 4)"), std::string::npos) << r.rejections[1];
  EXPECT_NE(r.rejections[2].find("5.0 GiB free, need 20.0 GiB"), std::string::npos) << r.rejections[2];
  EXPECT_NE(r.rejections[3].find("busy (90% recently"), std::string::npos) << r.rejections[3];
  EXPECT_NE(r.rejections[4].find("in MIG mode"), std::string::npos) << r.rejections[4];
  EXPECT_EQ(Indices(Pick(f, PickRequest{.count = 3, .min_free_memory_bytes = 20 * kGib})),
            (std::vector<int>{5, 6, 7}));
}

// A GPU its own readings say to drain is never picked, whatever else it
// offers; a degraded one only when no ok GPU is free.
TEST(PickTest, AGpuToDrainIsNeverPickedAndADegradedOneLast) {
  node::NodeView f = Machine(false);
  for (int i = 0; i < 8; ++i) f.gpus[static_cast<size_t>(i)].recent_utilization_ratio = 0.6;
  f.gpus[2].recent_utilization_ratio = 0.0;  // The best on offer, but:
  f.gpus[2].sample.ecc.volatile_uncorrected = 1;
  f.gpus[3].recent_utilization_ratio = 0.01;
  f.gpus[3].xid_count = 1;
  f.gpus[3].xid_count_by_code = {{48, 1}};
  f.gpus[4].recent_utilization_ratio = 0.02;
  f.gpus[4].sample.pcie_width = 4;  // Degraded, still picked.
  f.gpus[4].info.pcie_width_max = 16;
  PickResult r = Pick(f, PickRequest{});
  EXPECT_EQ(Indices(r), std::vector<int>{4});
  ASSERT_GE(r.rejections.size(), 2u);
  EXPECT_EQ(r.rejections[0], "gpu 0: busy (60% recently, limit 50%)");
  EXPECT_EQ(r.rejections[2], "gpu 2: to drain: uncorrected ECC errors since the last reset: 1");
  EXPECT_EQ(r.rejections[3], "gpu 3: to drain: Xid 48");
  // An ok GPU, though busier, goes first; the degraded one says why not.
  f.gpus[5].recent_utilization_ratio = 0.3;
  r = Pick(f, PickRequest{});
  EXPECT_EQ(Indices(r), std::vector<int>{5});
  EXPECT_FALSE(r.gpus[4].is_chosen);
  EXPECT_TRUE(r.gpus[4].is_free);
  EXPECT_NE(r.gpus[4].why.find("not chosen: ok GPUs are taken before degraded ones"), std::string::npos)
      << r.gpus[4].why;
  EXPECT_EQ(Indices(Pick(f, PickRequest{.count = 2})), (std::vector<int>{4, 5}));
}

// Another user's job is not free, however idle: pick never puts a job
// beside it (as tarmac run would not).
TEST(PickTest, AGpuWithAProcessOutsideALeaseIsNotFree) {
  node::NodeView f = Machine(false);
  node::ProcessView p;
  p.process.pid = 4242;
  p.details.exists = true;
  p.details.user = "bob";
  f.gpus[0].processes.push_back(p);
  f.gpus[0].sample.memory_free_bytes = 60 * kGib;
  PickResult r = Pick(f, PickRequest{.count = 1});
  EXPECT_EQ(Indices(r), std::vector<int>{1});
  EXPECT_EQ(r.rejections.front(), "gpu 0: in use outside any lease (by bob)");
  EXPECT_FALSE(r.gpus[0].is_free);
  EXPECT_TRUE(r.gpus[1].is_chosen);
  EXPECT_NE(r.gpus[1].why.find("chosen; free: 0% recently, 80.0 GiB free"), std::string::npos)
      << r.gpus[1].why;
}

TEST(PickTest, OneGpuIsTheLeastUsedRecently) {
  node::NodeView f = Machine(false);
  for (int i = 0; i < 8; ++i) f.gpus[static_cast<size_t>(i)].recent_utilization_ratio = 0.3 - i * 0.01;
  f.gpus[7].processes.resize(1);
  EXPECT_EQ(Indices(Pick(f, PickRequest{})), std::vector<int>{6});
}

// Two GPUs come from one NVLink pair, as `tarmac run --gpus 2` would get
// them, even when the least used two are in different pairs; of equal
// pairs, the best ranked.
TEST(PickTest, SeveralGpusComeFromOneNvLinkDomain) {
  node::NodeView f = Machine(true);
  for (size_t i = 0; i < 8; ++i) f.gpus[i].recent_utilization_ratio = 0.3;
  f.gpus[7].recent_utilization_ratio = 0.0;  // The least used GPU is in pair {6,7}...
  f.gpus[2].recent_utilization_ratio = 0.1;  // ...the next in pair {2,3}.
  f.gpus[6].recent_utilization_ratio = 0.2;
  EXPECT_EQ(Indices(Pick(f, PickRequest{.count = 2})), (std::vector<int>{7, 6}));
  f.gpus[6].lease = node::GpuLease{4, "alice", node::LeaseKind::kRun, false};  // Pair {6,7} broken up.
  EXPECT_EQ(Indices(Pick(f, PickRequest{.count = 2})), (std::vector<int>{2, 3}));
  // One GPU: the least used, from the broken-up pair (whole pairs stay free).
  EXPECT_EQ(Indices(Pick(f, PickRequest{.count = 1})), std::vector<int>{7});
}

}  // namespace
}  // namespace tarmac::cli
