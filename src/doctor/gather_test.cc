// SPDX-License-Identifier: Apache-2.0
// The doctor's inputs filled one way for `tarmac doctor` and the agent's
// scheduled run: the GPUs and who asks, the window's CPU time, the host.
#include "doctor/gather.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include "testutil/testutil.h"

namespace tarmac::doctor {
namespace {

constexpr const char* kStatBefore = "cpu  100 0 100 800 0 0 0 0 0 0\ncpu0 100 0 100 800 0 0 0 0 0 0\n";
constexpr const char* kStatAfter = "cpu  200 0 100 900 0 0 0 0 0 0\ncpu0 200 0 100 900 0 0 0 0 0 0\n";

TEST(GatherTest, FillInputsTakesTheGpusWhoAsksTheWindowAndTheHost) {
  testing::TempDir dir;
  dir.Write("proc/meminfo", "MemTotal:       1024000 kB\nMemAvailable:    512000 kB\n");
  HostFiles host(dir.path());
  InputSources sources;
  sources.node_view.hostname = "gpu-7";
  sources.node_view.gpus.resize(2);
  sources.through_agent = true;
  sources.stat_before = kStatBefore;
  sources.stat_after = kStatAfter;
  DoctorInputs in;
  FillInputs(host, sources, &in);
  EXPECT_EQ(in.hostname, "gpu-7");
  EXPECT_EQ(in.node_view.gpus.size(), 2u);
  EXPECT_TRUE(in.through_agent);
  EXPECT_EQ(in.is_root, ::geteuid() == 0);
  EXPECT_TRUE(in.gpu_error.empty());
  ASSERT_TRUE(in.cpu.has_value());
  EXPECT_NEAR(in.cpu->busy_ratio, 0.5, 1e-9);
  EXPECT_TRUE(in.memory.has_value());  // GatherHost read the planted host.
}

// A view whose backend could not read the GPUs (an agent waiting for the
// driver) is a GPU error, unless the caller names its own; one reading of
// /proc/stat is no window.
TEST(GatherTest, TheViewsBackendErrorIsTheGpuErrorAndOneStatIsNoWindow) {
  testing::TempDir dir;
  HostFiles host(dir.path());
  InputSources sources;
  sources.node_view.backend_error = "nvml: driver not loaded";
  sources.stat_after = kStatAfter;
  DoctorInputs in;
  FillInputs(host, sources, &in);
  EXPECT_EQ(in.gpu_error, "nvml: driver not loaded");
  EXPECT_FALSE(in.cpu.has_value());
  EXPECT_FALSE(in.hostname.empty());  // This host's name when the view has none.
  sources.gpu_error = "cannot reach the agent";
  FillInputs(host, sources, &in);
  EXPECT_EQ(in.gpu_error, "cannot reach the agent");
}

}  // namespace
}  // namespace tarmac::doctor
