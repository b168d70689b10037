// SPDX-License-Identifier: Apache-2.0
//
// The NVML backend, reading the simulated world through the fake
// libnvidia-ml, must report exactly what the sim backend reads directly.
#include <gtest/gtest.h>

#include "testutil/sim_fixture.h"

namespace tarmac::testing {
namespace {

void ExpectSameInfo(const node::GpuInfo& a, const node::GpuInfo& b) {
  SCOPED_TRACE("gpu " + std::to_string(a.index));
  EXPECT_EQ(a.index, b.index);
  EXPECT_EQ(a.uuid, b.uuid);
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.pci_bus_id, b.pci_bus_id);
  EXPECT_EQ(a.serial, b.serial);
  EXPECT_EQ(a.minor_number, b.minor_number);
  EXPECT_EQ(a.memory_total_bytes, b.memory_total_bytes);
  EXPECT_EQ(a.power_limit_default_milliwatts, b.power_limit_default_milliwatts);
  EXPECT_EQ(a.sm_clock_max_hertz, b.sm_clock_max_hertz);
  EXPECT_EQ(a.memory_clock_max_hertz, b.memory_clock_max_hertz);
  EXPECT_EQ(a.pcie_generation_max, b.pcie_generation_max);
  EXPECT_EQ(a.pcie_width_max, b.pcie_width_max);
  EXPECT_EQ(a.numa_node, b.numa_node);
  EXPECT_EQ(a.nvlink_peer_bus_ids, b.nvlink_peer_bus_ids);
  EXPECT_EQ(a.cpu_affinity, b.cpu_affinity);
  EXPECT_EQ(a.is_persistence_mode_enabled, b.is_persistence_mode_enabled);
  EXPECT_EQ(a.is_mig_enabled, b.is_mig_enabled);
  EXPECT_EQ(a.is_mig_pending, b.is_mig_pending);
  EXPECT_EQ(a.temperature_slowdown_celsius, b.temperature_slowdown_celsius);
  EXPECT_EQ(a.health, b.health);
}

void ExpectSameSample(const node::GpuSample& a, const node::GpuSample& b) {
  SCOPED_TRACE("gpu " + std::to_string(a.index));
  EXPECT_EQ(a.health, b.health);
  EXPECT_EQ(a.utilization_gpu_ratio, b.utilization_gpu_ratio);
  EXPECT_EQ(a.utilization_memory_ratio, b.utilization_memory_ratio);
  EXPECT_EQ(a.memory_total_bytes, b.memory_total_bytes);
  EXPECT_EQ(a.memory_used_bytes, b.memory_used_bytes);
  EXPECT_EQ(a.memory_reserved_bytes, b.memory_reserved_bytes);
  EXPECT_EQ(a.memory_free_bytes, b.memory_free_bytes);
  EXPECT_EQ(a.power_milliwatts, b.power_milliwatts);
  EXPECT_EQ(a.power_limit_milliwatts, b.power_limit_milliwatts);
  EXPECT_EQ(a.energy_millijoules, b.energy_millijoules);
  EXPECT_EQ(a.temperature_celsius, b.temperature_celsius);
  EXPECT_EQ(a.sm_clock_hertz, b.sm_clock_hertz);
  EXPECT_EQ(a.memory_clock_hertz, b.memory_clock_hertz);
  EXPECT_EQ(a.clock_event_reasons, b.clock_event_reasons);
  EXPECT_EQ(a.performance_state, b.performance_state);
  EXPECT_EQ(a.fan_speed_ratio, b.fan_speed_ratio);
  EXPECT_EQ(a.pcie_generation, b.pcie_generation);
  EXPECT_EQ(a.pcie_width, b.pcie_width);
  EXPECT_EQ(a.pcie_tx_bytes, b.pcie_tx_bytes);
  EXPECT_EQ(a.pcie_rx_bytes, b.pcie_rx_bytes);
  EXPECT_EQ(a.ecc.volatile_corrected, b.ecc.volatile_corrected);
  EXPECT_EQ(a.ecc.volatile_uncorrected, b.ecc.volatile_uncorrected);
  EXPECT_EQ(a.ecc.aggregate_corrected, b.ecc.aggregate_corrected);
  EXPECT_EQ(a.ecc.aggregate_uncorrected, b.ecc.aggregate_uncorrected);
  EXPECT_EQ(a.remapped_rows.has_value(), b.remapped_rows.has_value());
  if (a.remapped_rows && b.remapped_rows) {
    EXPECT_EQ(a.remapped_rows->corrected, b.remapped_rows->corrected);
    EXPECT_EQ(a.remapped_rows->uncorrected, b.remapped_rows->uncorrected);
    EXPECT_EQ(a.remapped_rows->is_pending, b.remapped_rows->is_pending);
  }
  EXPECT_EQ(a.nvlink_active, b.nvlink_active);
  EXPECT_EQ(a.nvlink_crc_errors, b.nvlink_crc_errors);
  EXPECT_EQ(a.nvlink_replay_errors, b.nvlink_replay_errors);
  EXPECT_EQ(a.nvlink_recovery_errors, b.nvlink_recovery_errors);
  EXPECT_EQ(a.pcie_replays, b.pcie_replays);
  EXPECT_EQ(a.retired_pages.has_value(), b.retired_pages.has_value());
  if (a.retired_pages && b.retired_pages) {
    EXPECT_EQ(a.retired_pages->single_bit, b.retired_pages->single_bit);
    EXPECT_EQ(a.retired_pages->double_bit, b.retired_pages->double_bit);
    EXPECT_EQ(a.retired_pages->is_pending, b.retired_pages->is_pending);
  }
  EXPECT_EQ(a.graphics_engine_active_ratio, b.graphics_engine_active_ratio);
  EXPECT_EQ(a.tensor_active_ratio, b.tensor_active_ratio);
  EXPECT_EQ(a.dram_active_ratio, b.dram_active_ratio);
  ASSERT_EQ(a.processes.size(), b.processes.size());
  for (size_t i = 0; i < a.processes.size(); ++i) {
    EXPECT_EQ(a.processes[i].pid, b.processes[i].pid);
    EXPECT_EQ(a.processes[i].used_memory_bytes, b.processes[i].used_memory_bytes);
    EXPECT_EQ(a.processes[i].sm_utilization_ratio, b.processes[i].sm_utilization_ratio);
    EXPECT_EQ(a.processes[i].type, b.processes[i].type);
    EXPECT_EQ(a.processes[i].gpu_instance_id, b.processes[i].gpu_instance_id);
    EXPECT_EQ(a.processes[i].compute_instance_id, b.processes[i].compute_instance_id);
  }
  EXPECT_EQ(a.has_mig_instances, b.has_mig_instances);
  ASSERT_EQ(a.mig_instances.size(), b.mig_instances.size());
  for (size_t i = 0; i < a.mig_instances.size(); ++i) {
    const node::MigInstance& x = a.mig_instances[i];
    const node::MigInstance& y = b.mig_instances[i];
    EXPECT_EQ(x.uuid, y.uuid);
    EXPECT_EQ(x.gpu_instance_id, y.gpu_instance_id);
    EXPECT_EQ(x.compute_instance_id, y.compute_instance_id);
    EXPECT_EQ(x.profile, y.profile);
    EXPECT_EQ(x.memory_total_bytes, y.memory_total_bytes);
    EXPECT_EQ(x.memory_used_bytes, y.memory_used_bytes);
    EXPECT_EQ(x.graphics_engine_active_ratio, y.graphics_engine_active_ratio);
  }
}

void ExpectBackendsAgree(SimWorldTest* t, const std::string& library) {
  std::vector<node::GpuInfo> sim_gpus;
  std::vector<node::GpuInfo> nvml_gpus;
  auto sim = t->OpenSim(&sim_gpus);
  auto nvml = t->OpenNvml(library, &nvml_gpus);
  ASSERT_EQ(sim_gpus.size(), nvml_gpus.size());
  EXPECT_EQ(sim->system_info().driver_version, nvml->system_info().driver_version);
  EXPECT_EQ(sim->system_info().nvml_version, nvml->system_info().nvml_version);
  EXPECT_EQ(sim->system_info().cuda_driver_version, nvml->system_info().cuda_driver_version);
  for (size_t i = 0; i < sim_gpus.size(); ++i) {
    ExpectSameInfo(sim_gpus[i], nvml_gpus[i]);
    Result<node::GpuSample> a = sim->Sample(static_cast<int>(i), node::kAllTiers);
    Result<node::GpuSample> b = nvml->Sample(static_cast<int>(i), node::kAllTiers);
    ASSERT_TRUE(a.ok() && b.ok());
    ExpectSameSample(a.value(), b.value());
    EXPECT_EQ(sim->RecentUtilization(static_cast<int>(i), std::chrono::seconds(10)),
              nvml->RecentUtilization(static_cast<int>(i), std::chrono::seconds(10)));
  }
}

TEST_F(SimWorldTest, NvmlOverFakeAgreesWithSimOnABusyLab) {
  UseScenario("lab-8gpu.toml");
  StartLoad("0", {"--memory", "20GiB", "--util", "90"});
  StartLoad("1,2", {"--memory", "8GiB", "--util", "60", "--pattern", "bursty"});
  StartLoad("3", {"--memory", "20GiB", "--pattern", "idle"});
  StartLoad("3", {"--memory", "1GiB", "--util", "30"});
  StartLoad("7", {"--memory", "4GiB", "--util", "100"});
  StartLoad("7", {"--memory", "4GiB", "--util", "100"});
  Freeze();
  ExpectBackendsAgree(this, FakeNvmlPath());
}

TEST_F(SimWorldTest, NvmlOverFakeAgreesWithSimUnderFaults) {
  UseScenario("faults.toml");
  StartLoad("3", {"--memory", "10GiB", "--util", "95"});
  StartLoad("2", {"--memory", "1GiB", "--util", "20"});
  Freeze();
  ExpectBackendsAgree(this, FakeNvmlPath());
}

// Links and memory pages: NVLinks down and erring, PCIe replays, a MIG
// change pending, pages retired on a board without row remapping.
TEST_F(SimWorldTest, NvmlOverFakeAgreesWithSimOnLinkAndPageFaults) {
  UseScenarioText(R"(
[[gpu]]
count = 2
nvlink = "all"
nvlink_links = 12
remapped_rows = false
mig_pending = true
[[fault]]
kind = "nvlink_down"
gpu = 0
link = 11
[[fault]]
kind = "nvlink_errors"
gpu = 1
link = 2
count = 7
nvlink_error = "replay"
[[fault]]
kind = "pcie_replay"
gpu = 0
count = 150
[[fault]]
kind = "ecc_error"
gpu = 1
type = "uncorrected"
count = 2
)");
  Freeze();
  ExpectBackendsAgree(this, FakeNvmlPath());
  std::vector<node::GpuInfo> gpus;
  auto nvml = OpenNvml(FakeNvmlPath(), &gpus);
  node::GpuSample zero = nvml->Sample(0, node::kAllTiers).value();
  node::GpuSample one = nvml->Sample(1, node::kAllTiers).value();
  ASSERT_EQ(zero.nvlink_active.size(), 12u);
  EXPECT_FALSE(zero.nvlink_active[11]);
  EXPECT_EQ(zero.pcie_replays, 150);
  EXPECT_EQ(one.nvlink_replay_errors, 7);
  ASSERT_TRUE(one.retired_pages.has_value());
  EXPECT_EQ(one.retired_pages->double_bit, 2);
  EXPECT_TRUE(one.retired_pages->is_pending);
  EXPECT_FALSE(one.remapped_rows.has_value());
  EXPECT_EQ(gpus[0].is_mig_pending, true);
}

TEST_F(SimWorldTest, NvmlOverFakeAgreesWithSimWhenSensorsAreMissing) {
  UseScenario("small.toml");
  StartLoad("<unset>", {"--memory", "2GiB", "--util", "40"});
  Freeze();
  ExpectBackendsAgree(this, FakeNvmlPath());
}

// GPM engine activity comes from two samples: absent on the first, then
// the mean over the interval: 60 % busy with half of it in tensor pipes is
// 30 % tensor activity. Boards without GPM (and libraries without its
// symbols) give none.
TEST_F(SimWorldTest, GpmActivityOverTheIntervalBetweenTwoSamples) {
  UseScenarioText("[[gpu]]\ncount = 1\n[[gpu]]\ncount = 1\nunsupported = [\"gpm\"]\n");
  StartLoad("0", {"--memory", "1GiB", "--util", "60", "--tensor", "50"});
  StartLoad("1", {"--memory", "1GiB", "--util", "60", "--tensor", "50"});
  std::vector<node::GpuInfo> gpus;
  auto check = [&](gpu::GpuBackend* backend, const char* name) {
    SCOPED_TRACE(name);
    for (int i = 0; i < 2; ++i) {
      Result<node::GpuSample> first = backend->Sample(i, node::kFastTier);
      ASSERT_TRUE(first.ok());
      EXPECT_FALSE(first.value().tensor_active_ratio.has_value());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    Result<node::GpuSample> second = backend->Sample(0, node::kFastTier);
    ASSERT_TRUE(second.ok());
    const node::GpuSample& s = second.value();
    ASSERT_TRUE(s.graphics_engine_active_ratio && s.tensor_active_ratio && s.dram_active_ratio);
    EXPECT_NEAR(*s.graphics_engine_active_ratio, 0.60, 0.60 * 0.021);  // The load's +-2 % wobble.
    EXPECT_NEAR(*s.tensor_active_ratio, 0.30, 0.30 * 0.021);
    EXPECT_NEAR(*s.dram_active_ratio, *s.graphics_engine_active_ratio * 0.55, 1e-9);
    Result<node::GpuSample> without = backend->Sample(1, node::kFastTier);
    ASSERT_TRUE(without.ok());
    EXPECT_FALSE(without.value().tensor_active_ratio.has_value());
    EXPECT_FALSE(without.value().graphics_engine_active_ratio.has_value());
  };
  auto sim = OpenSim(&gpus);
  check(sim.get(), "sim");
  auto nvml = OpenNvml(FakeNvmlPath(), &gpus);
  check(nvml.get(), "nvml");
  auto legacy = OpenNvml(LegacyFakeNvmlPath(), &gpus);
  ASSERT_TRUE(legacy->Sample(0, node::kFastTier).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(legacy->Sample(0, node::kFastTier).value().tensor_active_ratio.has_value());
}

// MIG: instances, their memory and processes (with their instance ids) read
// through the fake's MIG device handles equal the sim's; under MIG the GPU
// has no utilization rates and no per-process utilization (absent, not 0),
// and no remapped rows with instances.
TEST_F(SimWorldTest, NvmlOverFakeAgreesWithSimOnMigInstances) {
  UseScenario("mig-lab.toml");
  std::vector<node::GpuInfo> gpus;
  auto sim = OpenSim(&gpus);
  node::GpuSample g0 = sim->Sample(0, node::kFastTier).value();
  node::GpuSample g1 = sim->Sample(1, node::kFastTier).value();
  ASSERT_EQ(g0.mig_instances.size(), 7u);
  ASSERT_EQ(g1.mig_instances.size(), 4u);
  StartLoad(g0.mig_instances[2].uuid, {"--memory", "6GiB", "--util", "80"});
  StartLoad(g1.mig_instances[0].uuid, {"--memory", "30GiB", "--util", "50"});
  StartLoad(g1.mig_instances[3].uuid, {"--memory", "2GiB", "--pattern", "idle"});
  StartLoad("3", {"--memory", "10GiB", "--util", "70"});
  Freeze();
  ExpectBackendsAgree(this, FakeNvmlPath());
  auto nvml = OpenNvml(FakeNvmlPath(), &gpus);
  node::GpuSample zero = nvml->Sample(0, node::kAllTiers).value();
  node::GpuSample one = nvml->Sample(1, node::kAllTiers).value();
  EXPECT_TRUE(gpus[0].is_mig_enabled.value_or(false));
  EXPECT_FALSE(zero.utilization_gpu_ratio.has_value());
  EXPECT_FALSE(zero.remapped_rows.has_value());
  EXPECT_TRUE(zero.has_mig_instances);
  EXPECT_EQ(zero.mig_instances[2].profile, "1g.10gb");
  EXPECT_EQ(zero.mig_instances[2].memory_used_bytes, int64_t{6} << 30);
  ASSERT_EQ(zero.processes.size(), 1u);
  EXPECT_EQ(zero.processes[0].gpu_instance_id, zero.mig_instances[2].gpu_instance_id);
  EXPECT_EQ(zero.processes[0].compute_instance_id, 0);
  EXPECT_FALSE(zero.processes[0].sm_utilization_ratio.has_value());
  EXPECT_EQ(one.mig_instances[0].profile, "3g.40gb");
  ASSERT_EQ(one.processes.size(), 2u);
  node::GpuSample whole = nvml->Sample(3, node::kAllTiers).value();
  EXPECT_TRUE(whole.mig_instances.empty());
  EXPECT_FALSE(whole.has_mig_instances);
  ASSERT_EQ(whole.processes.size(), 1u);
  EXPECT_FALSE(whole.processes[0].gpu_instance_id.has_value());
}

// A program sees MIG devices as CUDA does: a GPU in MIG mode named by index
// is no device; its instances are, by MIG UUID.
TEST_F(SimWorldTest, SimloadRunsOnMigInstancesOnly) {
  UseScenario("mig-lab.toml");
  auto simload = [&](const std::string& visible, const std::string& memory) {
    std::map<std::string, std::string> env = Env();
    env["CUDA_VISIBLE_DEVICES"] = visible;
    return RunCommand({BinDir() + "/tarmac-simload", "--memory", memory, "--seconds", "0.1"}, env);
  };
  RunResult refused = simload("0", "1GiB");
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE(refused.err.find("no CUDA-capable device"), std::string::npos) << refused.err;
  std::vector<node::GpuInfo> gpus;
  auto sim = OpenSim(&gpus);
  node::GpuSample g0 = sim->Sample(0, node::kFastTier).value();
  RunResult too_big = simload(g0.mig_instances[0].uuid, "12GiB");
  EXPECT_NE(too_big.exit_code, 0);  // More than a 1g.10gb instance has.
  EXPECT_NE(too_big.err.find("out of memory on " + g0.mig_instances[0].uuid), std::string::npos)
      << too_big.err;
  EXPECT_EQ(simload(g0.mig_instances[0].uuid, "8GiB").exit_code, 0);
  EXPECT_EQ(simload("3", "8GiB").exit_code, 0);  // The GPU without MIG, whole.
}

// GPM per MIG instance (nvmlGpmMigSampleGet): each instance's own engine.
TEST_F(SimWorldTest, GpmActivityPerMigInstance) {
  UseScenario("mig-lab.toml");
  std::vector<node::GpuInfo> gpus;
  auto sim = OpenSim(&gpus);
  node::GpuSample g1 = sim->Sample(1, node::kFastTier).value();
  StartLoad(g1.mig_instances[1].uuid, {"--memory", "1GiB", "--util", "60"});
  auto check = [&](gpu::GpuBackend* backend, const char* name) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(backend->Sample(1, node::kFastTier).ok());
    // GPM reports the mean activity over the window between the two
    // samples; over a second it stays within the tolerance, over 300 ms on
    // a busy machine it strayed to 0.627.
    std::this_thread::sleep_for(std::chrono::milliseconds(1000));
    node::GpuSample s = backend->Sample(1, node::kFastTier).value();
    ASSERT_EQ(s.mig_instances.size(), 4u);
    ASSERT_TRUE(s.mig_instances[1].graphics_engine_active_ratio.has_value());
    EXPECT_NEAR(*s.mig_instances[1].graphics_engine_active_ratio, 0.60, 0.60 * 0.021);
    EXPECT_EQ(s.mig_instances[0].graphics_engine_active_ratio, 0.0);
    ASSERT_TRUE(s.graphics_engine_active_ratio.has_value());  // The GPU: 2 of its 7 slices at 60 %.
    EXPECT_NEAR(*s.graphics_engine_active_ratio, 0.60 * 2 / 7, 0.02);
  };
  check(sim.get(), "sim");
  auto nvml = OpenNvml(FakeNvmlPath(), &gpus);
  check(nvml.get(), "nvml");
}

}  // namespace
}  // namespace tarmac::testing
