// SPDX-License-Identifier: Apache-2.0
//
// fleet pick: only GPUs a job could take now, ranked as tarmac pick ranks
// them, on the node that fits with the fewest to spare; and a clear reason
// when none fits.
#include "fleet/fleet_pick.h"

#include <gtest/gtest.h>

namespace tarmac::fleet {
namespace {

FleetGpu Free(int index, double busy = 0, int processes = 0, double free_gib = 80) {
  FleetGpu g;
  g.index = index;
  g.uuid = "GPU-" + std::to_string(index);
  g.model = "NVIDIA H100 80GB HBM3";
  g.utilization_ratio = busy;
  g.recent_utilization_ratio = busy;
  g.processes = processes;
  g.memory_free_bytes = free_gib * (1 << 30);
  g.memory_total_bytes = 80.0 * (1 << 30);
  return g;
}

FleetNode Node(const std::string& name, std::vector<FleetGpu> gpus, bool up = true) {
  FleetNode n;
  n.name = name;
  n.instance = name + ":9477";
  n.source = "tarmac";
  n.is_up = up;
  n.gpus = std::move(gpus);
  return n;
}

std::vector<int> Indices(const FleetPick& p) {
  std::vector<int> out;
  for (const FleetGpu* g : p.gpus) out.push_back(g->index);
  return out;
}

TEST(FleetPickTest, OnlyGpusAJobCouldTakeNowRankedAsPickRanksThem) {
  FleetGpu leased = Free(0);
  leased.holders.push_back(GpuHolder{7, "alice", "run", "", ""});
  FleetGpu mig = Free(5);
  mig.utilization_ratio.reset();  // A GPU in MIG mode reports no utilization.
  mig.recent_utilization_ratio.reset();
  FleetGpu lost = Free(6);
  lost.is_lost = true;
  FleetView v;
  v.nodes = {
      Node("a", {leased, Free(1, 0.9), Free(2, 0.0, 2), Free(3, 0.0, 0, 10), Free(4, 0.02), mig, lost})};
  FleetPickRequest r;
  r.count = 2;
  FleetPick p = PickInFleet(v, r);
  ASSERT_NE(p.node, nullptr) << p.why_none;
  // 3 and 4: idle (4 is within the same 5 % step); 2 runs processes, so is
  // not free, however idle.
  EXPECT_EQ(Indices(p), (std::vector<int>{4, 3}));
  r.min_free_memory_bytes = int64_t{20} << 30;  // 3 has 10 GiB free.
  FleetPick none = PickInFleet(v, r);
  EXPECT_EQ(none.node, nullptr);
  EXPECT_EQ(none.why_none, "no node has 2 free GPUs with 20.0 GiB free now; the most: a with 1");
}

TEST(FleetPickTest, TheNodeThatFitsWithFewestToSpareThenTheLeastBusy) {
  FleetView v;
  v.nodes = {Node("big", {Free(0), Free(1), Free(2), Free(3)}), Node("down", {Free(0), Free(1)}, false),
             Node("small", {Free(0, 0.03), Free(1, 0.03), Free(2, 0.9)}),
             Node("twin", {Free(0), Free(1), Free(2, 0.9)})};
  FleetPickRequest r;
  r.count = 2;
  FleetPick p = PickInFleet(v, r);
  ASSERT_NE(p.node, nullptr);
  EXPECT_EQ(p.node->name, "twin");  // small and twin leave none spare; twin's are idler.
  r.model = "a100";
  EXPECT_EQ(PickInFleet(v, r).node, nullptr);
  r.model = "H100";
  r.count = 4;
  EXPECT_EQ(PickInFleet(v, r).node->name, "big");
}

// faults.toml's node (GPU 0 degraded, 1-3 to drain) beside a healthy
// 8-GPU node: no GPU to drain is ever chosen, and the healthy node wins
// though the broken one would leave fewer to spare.
TEST(FleetPickTest, NoGpuToDrainAndTheHealthyNodeWins) {
  std::vector<FleetGpu> broken = {Free(0), Free(1), Free(2), Free(3)};
  broken[0].verdict = "degraded";
  for (int i = 1; i < 4; ++i) broken[static_cast<size_t>(i)].verdict = "drain";
  std::vector<FleetGpu> healthy;
  for (int i = 0; i < 8; ++i) {
    healthy.push_back(Free(i));
    healthy.back().verdict = "ok";
  }
  FleetView v;
  v.nodes = {Node("faults", broken), Node("lab", healthy)};
  FleetPickRequest r;
  r.count = 1;
  FleetPick p = PickInFleet(v, r);
  ASSERT_NE(p.node, nullptr);
  EXPECT_EQ(p.node->name, "lab");
  r.count = 2;
  EXPECT_EQ(PickInFleet(v, r).node->name, "lab");
  // The broken node alone: only its degraded GPU, never one to drain.
  v.nodes = {Node("faults", broken)};
  r.count = 1;
  p = PickInFleet(v, r);
  ASSERT_NE(p.node, nullptr);
  EXPECT_EQ(Indices(p), std::vector<int>{0});
  r.count = 2;
  EXPECT_EQ(PickInFleet(v, r).why_none, "no node has 2 free GPUs now; the most: faults with 1");
}

}  // namespace
}  // namespace tarmac::fleet
