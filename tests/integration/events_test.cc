// SPDX-License-Identifier: Apache-2.0
//
// Xid events from the scenario's timeline reach the backends through the
// NVML event API (and directly for the sim backend).
#include <gtest/gtest.h>

#include "testutil/sim_fixture.h"

namespace tarmac::testing {
namespace {

std::vector<node::GpuEvent> Collect(gpu::GpuBackend* backend, size_t want) {
  std::vector<node::GpuEvent> events;
  // faults.toml raises its Xids 2 s and 3 s after the world starts; give
  // them a generous bound on a loaded machine.
  for (int i = 0; i < 30 && events.size() < want; ++i) {
    Result<std::vector<node::GpuEvent>> got = backend->WaitEvents(std::chrono::milliseconds(500));
    EXPECT_TRUE(got.ok()) << got.status().ToString();
    if (!got.ok()) break;
    events.insert(events.end(), got.value().begin(), got.value().end());
  }
  return events;
}

TEST_F(SimWorldTest, XidEventsArriveThroughNvmlEvents) {
  UseScenario("faults.toml");
  std::vector<node::GpuInfo> gpus;
  auto nvml = OpenNvml(FakeNvmlPath(), &gpus);
  std::vector<node::GpuEvent> events = Collect(nvml.get(), 2);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].gpu_index, 3);
  EXPECT_EQ(events[0].xid, 13);
  EXPECT_EQ(events[0].event_type, 0x8u);
  EXPECT_EQ(events[1].xid, 48);
}

TEST_F(SimWorldTest, XidEventsArriveThroughTheSimBackend) {
  UseScenario("faults.toml");
  std::vector<node::GpuInfo> gpus;
  auto sim = OpenSim(&gpus);
  std::vector<node::GpuEvent> events = Collect(sim.get(), 2);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].gpu_index, 3);
  EXPECT_EQ(events[0].xid, 13);
  EXPECT_EQ(events[1].xid, 48);
}

}  // namespace
}  // namespace tarmac::testing
