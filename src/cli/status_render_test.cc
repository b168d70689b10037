// SPDX-License-Identifier: Apache-2.0
#include "cli/status_render.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

#include "common/text_wrap.h"
#include "testutil/mig_views.h"

namespace tarmac::cli {
namespace {

node::NodeView OneGpu() {
  node::NodeView f;
  f.hostname = "node";
  f.backend = "nvml";
  node::GpuView g;
  g.info.index = 0;
  g.info.uuid = "GPU-0";
  g.info.name = "Test GPU";
  g.sample.utilization_gpu_ratio = 0.5;
  g.sample.taken_at = std::chrono::system_clock::from_time_t(1800000000);
  f.gpus.push_back(g);
  return f;
}

TEST(StatusRenderTest, XidCodesAreListedOnceEachAndEccHealthIsShown) {
  node::NodeView f = OneGpu();
  node::GpuView& g = f.gpus[0];
  g.xid_count = 3;
  g.xid_count_by_code = {{13, 1}, {48, 2}};
  g.last_xid = node::GpuEvent{};
  g.last_xid->xid = 48;
  g.sample.ecc.volatile_uncorrected = 3;
  g.sample.remapped_rows = node::RemappedRows{0, 1, true, false};
  std::string out = RenderStatus(f, RenderOptions{});
  EXPECT_NE(out.find("Xid 13, 48"), std::string::npos) << out;
  EXPECT_EQ(out.find("(x"), std::string::npos) << out;
  EXPECT_NE(out.find("ECC 3 uncorrected, row remap pending"), std::string::npos) << out;
  EXPECT_NE(out.find("2 problems"), std::string::npos) << out;
  // Its verdict first: nothing hands it out.
  EXPECT_NE(out.find("DRAIN"), std::string::npos) << out;
  g.xid_count_by_code = {{13, 1}};
  g.last_xid->xid = 13;
  g.sample.ecc.volatile_uncorrected = 0;
  g.sample.remapped_rows.reset();
  EXPECT_EQ(RenderStatus(f, RenderOptions{}).find("DRAIN"), std::string::npos);
}

// Every line fits the width (100 by default) without losing a note: notes
// that do not fit go on a line of their own; --wide (width 0) is in full.
TEST(StatusRenderTest, EveryLineFitsTheWidthAndNoNoteIsLost) {
  node::NodeView f = OneGpu();
  node::GpuView& g = f.gpus[0];
  g.info.name = "NVIDIA H100 80GB HBM3";
  g.sample.clock_event_reasons = 0x20 | 0x40;  // sw and hw thermal slowdown
  g.xid_count = 1;
  g.xid_count_by_code = {{79, 1}};
  g.last_xid = node::GpuEvent{};
  g.sample.ecc.volatile_uncorrected = 3;
  node::ProcessView p;
  p.process.pid = 4242;
  p.process.used_memory_bytes = int64_t{20} << 30;
  p.process.sm_utilization_ratio = 0;
  p.details.user = "alice";
  p.details.command =
      "python train.py --config configs/a-very-long-experiment-name-that-goes-on.yaml --seed 1";
  g.processes.push_back(p);
  for (bool color : {false, true}) {
    RenderOptions narrow;
    narrow.use_color = color;
    std::string out = RenderStatus(f, narrow);
    std::istringstream lines(out);
    for (std::string line; std::getline(lines, line);) EXPECT_LE(TextColumns(line), 100u) << line;
    EXPECT_NE(out.find("H100 80GB HBM3"), std::string::npos) << out;
    EXPECT_EQ(out.find("NVIDIA H100"), std::string::npos) << out;
    for (const char* note : {"THROTTLED (thermal)", "Xid 79", "ECC 3 uncorrected"}) {
      EXPECT_NE(out.find(note), std::string::npos) << note << "\n" << out;
    }
    EXPECT_NE(out.find("python train.py --config"), std::string::npos) << out;
  }
  RenderOptions wide;
  wide.width = 0;
  std::string out = RenderStatus(f, wide);
  EXPECT_NE(out.find("NVIDIA H100 80GB HBM3"), std::string::npos) << out;
  EXPECT_NE(out.find("THROTTLED (sw_thermal_slowdown,hw_thermal_slowdown)"), std::string::npos) << out;
  EXPECT_NE(out.find(p.details.command), std::string::npos) << out;
  RenderOptions terminal;
  terminal.width = 200;
  EXPECT_NE(RenderStatus(f, terminal).find(p.details.command), std::string::npos);
}

// An 8-GPU lab as the demo runs it: busy, idle, an idle holder, a throttled
// GPU, each with a process.
node::NodeView Lab() {
  node::NodeView f;
  f.hostname = "gpu-node-7";
  f.backend = "nvml";
  f.system.driver_version = "580.65.06";
  for (int i = 0; i < 8; ++i) {
    node::GpuView g;
    g.info.index = i;
    g.info.uuid = "GPU-" + std::to_string(i);
    g.info.name = "NVIDIA H100 80GB HBM3";
    g.sample.utilization_gpu_ratio = i % 2 == 0 ? 0.9 : 0.0;
    g.sample.memory_total_bytes = int64_t{80} << 30;
    g.sample.memory_used_bytes = int64_t{62} << 30;
    g.sample.power_milliwatts = 637000;
    g.sample.power_limit_milliwatts = 700000;
    g.sample.temperature_celsius = 69;
    g.sample.sm_clock_hertz = int64_t{1980} * 1000000;
    g.sample.taken_at = std::chrono::system_clock::from_time_t(1800000000);
    node::ProcessView p;
    p.process.pid = 6600 + i;
    p.process.used_memory_bytes = int64_t{62} << 30;
    p.process.sm_utilization_ratio = i % 2 == 0 ? 0.9 : 0.0;
    p.details.user = "alice";
    p.details.command = "python train.py --config configs/big-experiment.yaml";
    g.processes.push_back(p);
    f.gpus.push_back(g);
  }
  return f;
}

// At 80 columns every reading keeps its digits and unit, every line fits,
// and an idle holder's command keeps most of its words.
TEST(StatusRenderTest, EightyColumnsKeepEveryReadingWhole) {
  RenderOptions options;
  options.width = 80;
  std::string out = RenderStatus(Lab(), options);
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) EXPECT_LE(TextColumns(line), 80u) << line;
  EXPECT_NE(out.find("1980 MHz"), std::string::npos) << out;
  EXPECT_NE(out.find("62.0 / 80.0 GiB"), std::string::npos) << out;
  EXPECT_NE(out.find("637 / 700 W"), std::string::npos) << out;
  EXPECT_NE(out.find("python train.py --config configs/"), std::string::npos) << out;  // The idle holder's.
  EXPECT_NE(out.find("<- idle holder"), std::string::npos) << out;
  EXPECT_EQ(out.find("MH..."), std::string::npos) << out;
}

// --watch on a terminal 24 rows high: when the processes do not fit they
// are counted on their GPU's line, so the header stays on screen; when even
// that is too tall, the screen says how many lines it leaves out.
TEST(StatusRenderTest, AScreenFitsItsHeight) {
  RenderOptions options;
  options.width = 80;
  options.is_watch = true;
  std::string full = RenderStatus(Lab(), options);
  options.height = 23;
  std::string fit = RenderStatus(Lab(), options);
  auto count = [](const std::string& text) { return std::count(text.begin(), text.end(), '\n'); };
  EXPECT_GT(count(full), 23) << full;
  EXPECT_LE(count(fit), 23) << fit;
  EXPECT_EQ(fit.rfind("gpu-node-7", 0), 0u) << fit;
  EXPECT_NE(fit.find("1 process"), std::string::npos) << fit;
  EXPECT_EQ(fit.find("PID  USER"), std::string::npos) << fit;
  EXPECT_NE(fit.find("of 8 GPUs idle"), std::string::npos) << fit;  // The summary too.
  options.height = 6;
  std::string cut = RenderStatus(Lab(), options);
  EXPECT_EQ(count(cut), 6) << cut;
  EXPECT_NE(cut.find("more lines: a taller terminal, or tarmac status, shows them"), std::string::npos)
      << cut;
  options.height = 0;
  EXPECT_EQ(RenderStatus(Lab(), options), full);
}

TEST(StatusRenderTest, WatchShowsPcieThroughputAndRecentUtilization) {
  node::NodeView now = OneGpu();
  now.gpus[0].pcie_tx_bytes_per_second = double(int64_t{2} << 30);
  now.gpus[0].pcie_rx_bytes_per_second = double(int64_t{512} << 20);
  now.gpus[0].recent_utilization_ratio = 0.25;
  RenderOptions options;
  options.is_watch = true;
  std::string out = RenderStatus(now, options);
  EXPECT_NE(out.find("PCIe tx 2.0 GiB/s rx 512 MiB/s"), std::string::npos) << out;
  EXPECT_NE(out.find("recent 25%"), std::string::npos) << out;
  // A first read has no rate yet, and one frame no recent utilization.
  now.gpus[0].pcie_tx_bytes_per_second.reset();
  std::string once = RenderStatus(now, RenderOptions{});
  EXPECT_EQ(once.find("PCIe tx"), std::string::npos) << once;
  EXPECT_EQ(once.find("recent"), std::string::npos) << once;
}

// A GPU in MIG mode: its instances under it, each with its memory, engine
// activity, lease or pod, and idle holders; processes under their instance.
TEST(StatusRenderTest, MigInstancesAreShownUnderTheirGpuWithTheirHolders) {
  node::NodeView f = OneGpu();
  node::GpuView& g = f.gpus[0];
  g.sample.utilization_gpu_ratio.reset();  // Not under MIG.
  g.sample.graphics_engine_active_ratio = 0.25;
  g.sample.has_mig_instances = true;
  g.sample.mig_instances = {testing::MigView(1, "3g.40gb", 0.6, 2), testing::MigView(2, "1g.10gb", 0.0, 2)};
  for (int gi : {1, 2}) {
    node::ProcessView p = testing::InMig(100 + gi, gi, 2);
    p.details.command = "python job.py";
    g.processes.push_back(p);
  }
  g.mig_leases["MIG-1"] = node::GpuLease{7, "alice", node::LeaseKind::kRun, false};
  g.mig_allocated_to["MIG-2"] = {"infer-0", "serve", "server"};
  std::string out = RenderStatus(f, RenderOptions{});
  EXPECT_NE(out.find("  25%  "), std::string::npos) << out;  // The GPU: its engine's activity (GPM).
  EXPECT_NE(out.find("MIG 3g.40gb   gi 1  ci 0  2.0 / 40.0 GiB      60%  lease 7 (alice)  MIG-1"),
            std::string::npos)
      << out;
  EXPECT_NE(
      out.find(
          "MIG 1g.10gb   gi 2  ci 0  2.0 / 10.0 GiB       0%  idle  pod serve/infer-0  1 idle holder  MIG-2"),
      std::string::npos)
      << out;
  size_t second = out.find("MIG 1g.10gb");
  size_t holder = out.find("     102  alice");
  ASSERT_NE(holder, std::string::npos) << out;
  EXPECT_GT(holder, second) << "a process is listed under its instance";
  EXPECT_NE(out.find("<- holds memory, instance idle"), std::string::npos) << out;
  EXPECT_EQ(out.find("PID"), std::string::npos) << "no whole-GPU process table on a split GPU";
}

}  // namespace
}  // namespace tarmac::cli
