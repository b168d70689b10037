// SPDX-License-Identifier: Apache-2.0
#include "node/gpu_marks.h"

#include <gtest/gtest.h>

#include "testutil/mig_views.h"

namespace tarmac::node {
namespace {

// A GPU in MIG mode read once: no utilization (NVML gives none under MIG)
// and no engine activity yet (GPM needs two samples).
GpuView OneShotMigGpu() {
  GpuView g;
  g.sample.has_processes = true;
  g.sample.has_mig_instances = true;
  g.sample.mig_instances = {testing::MigView(1, "3g.40gb"), testing::MigView(2, "1g.10gb")};
  for (MigInstance& m : g.sample.mig_instances) m.graphics_engine_active_ratio.reset();
  return g;
}

// An empty MIG GPU read once is idle, not busy (the agent, with GPM, said
// idle and a one-shot status said busy); a process makes its GPU and its
// instance not idle, the other instance still is.
TEST(GpuMarksTest, AnEmptyMigGpuReadOnceIsIdle) {
  GpuView g = OneShotMigGpu();
  EXPECT_TRUE(MarkGpu(g).is_idle);
  EXPECT_TRUE(IsMigInstanceIdle(g.sample.mig_instances[0], g));
  node::ProcessView p = testing::InMig(42, 1);
  g.processes.push_back(p);
  g.sample.processes.push_back(p.process);
  EXPECT_FALSE(MarkGpu(g).is_idle);
  EXPECT_FALSE(IsMigInstanceIdle(g.sample.mig_instances[0], g));
  EXPECT_TRUE(IsMigInstanceIdle(g.sample.mig_instances[1], g));
  EXPECT_FALSE(IsMigInstanceIdle(g.sample.mig_instances[1]));  // Without the GPU: no reading, not idle.
  // An unreadable process list proves nothing.
  GpuView unknown = OneShotMigGpu();
  unknown.sample.has_processes = false;
  EXPECT_FALSE(MarkGpu(unknown).is_idle);
  EXPECT_FALSE(IsMigInstanceIdle(unknown.sample.mig_instances[0], unknown));
  // With GPM, the engine decides, processes or not.
  GpuView gpm = OneShotMigGpu();
  gpm.sample.graphics_engine_active_ratio = 0.5;
  gpm.sample.mig_instances[0].graphics_engine_active_ratio = 0.5;
  EXPECT_FALSE(MarkGpu(gpm).is_idle);
  EXPECT_FALSE(IsMigInstanceIdle(gpm.sample.mig_instances[0], gpm));
}

}  // namespace
}  // namespace tarmac::node
