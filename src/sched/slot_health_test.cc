// SPDX-License-Identifier: Apache-2.0
// Allocation obeys the health verdict (node/health_verdict.h): a GPU to
// drain is no slot's to give; a degraded one still is.
#include <gtest/gtest.h>

#include "sched/node_slots.h"
#include "sched/placement.h"

namespace tarmac::sched {
namespace {

TEST(SlotHealthTest, AGpuToDrainIsNeverGivenAndADegradedOneIs) {
  node::NodeView view;
  view.gpus.resize(3);
  for (int i = 0; i < 3; ++i) {
    node::GpuView& g = view.gpus[static_cast<size_t>(i)];
    g.info.index = i;
    g.info.uuid = "GPU-" + std::to_string(i);
    g.info.memory_total_bytes = int64_t{80} << 30;
    g.sample.memory_free_bytes = int64_t{80} << 30;
  }
  view.gpus[1].xid_count = 1;
  view.gpus[1].xid_count_by_code = {{79, 1}};  // Fallen off the bus.
  view.gpus[2].info.pcie_width_max = 16;
  view.gpus[2].sample.pcie_width = 8;  // Degraded.
  std::vector<GpuSlot> slots = SlotsOf(view);
  ASSERT_EQ(slots.size(), 3u);
  EXPECT_TRUE(slots[0].is_healthy);
  EXPECT_FALSE(slots[1].is_healthy);
  EXPECT_TRUE(slots[2].is_healthy);
  EXPECT_TRUE(IsFree(slots[0], 0));
  EXPECT_FALSE(IsFree(slots[1], 0));
  EXPECT_TRUE(IsFree(slots[2], 0));
}

}  // namespace
}  // namespace tarmac::sched
