// SPDX-License-Identifier: Apache-2.0
//
// The NVML backend on drivers that lack the newer symbols or refuse struct
// versions: it must fall back as a real binding does, and get the numbers
// right (v1 process entries are 16 bytes; v1 memory includes the reserve).
#include <dlfcn.h>
#include <gtest/gtest.h>

#include "gpu/nvml_api.h"
#include "testutil/sim_fixture.h"

namespace tarmac::testing {
namespace {

TEST_F(SimWorldTest, LegacyDriverFallsBackToV1ProcessListsAndMemory) {
  UseScenario("lab-8gpu.toml");
  Child* a = StartLoad("0", {"--memory", "3GiB", "--util", "40"});
  Child* b = StartLoad("0", {"--memory", "5GiB", "--util", "20"});
  Child* c = StartLoad("0", {"--memory", "7GiB", "--pattern", "idle"});
  Freeze();
  std::vector<fleet::GpuInfo> gpus;
  auto nvml = OpenNvml(LegacyFakeNvmlPath(), &gpus);
  Result<fleet::GpuSample> s = nvml->Sample(0, fleet::kAllTiers);
  ASSERT_TRUE(s.ok());
  // With a wrong stride every entry after the first is garbage (PID = the
  // memory of the previous entry); with 16 bytes all three are right.
  ASSERT_EQ(s.value().processes.size(), 3u);
  std::map<int64_t, int64_t> memory_by_pid;
  for (const fleet::GpuProcess& p : s.value().processes) memory_by_pid[p.pid] = p.used_memory_bytes.value_or(-1);
  EXPECT_EQ(memory_by_pid[a->pid()], int64_t{3} << 30);
  EXPECT_EQ(memory_by_pid[b->pid()], int64_t{5} << 30);
  EXPECT_EQ(memory_by_pid[c->pid()], int64_t{7} << 30);
  // v1 memory: used includes the 512 MiB reserve, and the reserve is unknown.
  EXPECT_EQ(s.value().memory_used_bytes, (int64_t{15} << 30) + (int64_t{512} << 20));
  EXPECT_FALSE(s.value().memory_reserved_bytes.has_value());
  // Throttle reasons come from the old symbol name.
  EXPECT_TRUE(s.value().clock_event_reasons.has_value());
  EXPECT_TRUE(s.value().temperature_celsius.has_value());
}

TEST_F(SimWorldTest, RefusedMemoryV2StructFallsBackToV1) {
  UseScenarioText(R"(
[driver]
reject_struct_versions = ["memory_v2", "temperature_v1"]
[[gpu]]
memory = "80GiB"
memory_reserved = "1GiB"
)");
  StartLoad("0", {"--memory", "2GiB"});
  std::vector<fleet::GpuInfo> gpus;
  auto nvml = OpenNvml(FakeNvmlPath(), &gpus);
  Result<fleet::GpuSample> s = nvml->Sample(0, fleet::kAllTiers);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s.value().health, fleet::GpuHealth::kOk);
  EXPECT_EQ(s.value().memory_used_bytes, int64_t{3} << 30);
  EXPECT_EQ(s.value().memory_total_bytes, int64_t{80} << 30);
  EXPECT_TRUE(s.value().temperature_celsius.has_value());
}

// The fake itself checks versioned structs as the driver does.
TEST_F(SimWorldTest, FakeReturnsArgumentVersionMismatchForAWrongStructVersion) {
  UseScenario("small.toml");
  void* lib = dlopen(FakeNvmlPath().c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr);
  auto init = reinterpret_cast<gpu::nvml::Return (*)()>(dlsym(lib, "nvmlInit_v2"));
  auto shutdown = reinterpret_cast<gpu::nvml::Return (*)()>(dlsym(lib, "nvmlShutdown"));
  auto handle = reinterpret_cast<gpu::nvml::Return (*)(unsigned, gpu::nvml::Device*)>(
      dlsym(lib, "nvmlDeviceGetHandleByIndex_v2"));
  auto memory = reinterpret_cast<gpu::nvml::Return (*)(gpu::nvml::Device, gpu::nvml::MemoryV2*)>(
      dlsym(lib, "nvmlDeviceGetMemoryInfo_v2"));
  ASSERT_TRUE(init && shutdown && handle && memory);
  gpu::nvml::Device device = nullptr;
  EXPECT_EQ(handle(0, &device), gpu::nvml::kErrorUninitialized);  // Before init.
  ASSERT_EQ(init(), gpu::nvml::kSuccess);
  ASSERT_EQ(init(), gpu::nvml::kSuccess);  // Refcounted.
  ASSERT_EQ(handle(0, &device), gpu::nvml::kSuccess);
  gpu::nvml::MemoryV2 m{};
  m.version = 2;  // The mistake nvtop makes: the bare number, not the macro.
  EXPECT_EQ(memory(device, &m), gpu::nvml::kErrorArgumentVersionMismatch);
  m.version = gpu::nvml::kMemoryV2Version;
  EXPECT_EQ(memory(device, &m), gpu::nvml::kSuccess);
  EXPECT_EQ(m.total, uint64_t{80} << 30);
  EXPECT_EQ(shutdown(), gpu::nvml::kSuccess);
  EXPECT_EQ(handle(0, &device), gpu::nvml::kSuccess);  // One init still holds.
  EXPECT_EQ(shutdown(), gpu::nvml::kSuccess);
  EXPECT_EQ(handle(0, &device), gpu::nvml::kErrorUninitialized);
  dlclose(lib);
}

TEST_F(SimWorldTest, ProcessListFollowsTheInsufficientSizeProtocol) {
  UseScenario("small.toml");
  StartLoad("0", {"--memory", "1GiB"});
  StartLoad("0", {"--memory", "1GiB"});
  void* lib = dlopen(FakeNvmlPath().c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr);
  auto init = reinterpret_cast<gpu::nvml::Return (*)()>(dlsym(lib, "nvmlInit_v2"));
  auto handle = reinterpret_cast<gpu::nvml::Return (*)(unsigned, gpu::nvml::Device*)>(
      dlsym(lib, "nvmlDeviceGetHandleByIndex_v2"));
  auto list = reinterpret_cast<gpu::nvml::Return (*)(gpu::nvml::Device, unsigned*, gpu::nvml::ProcessInfoV2*)>(
      dlsym(lib, "nvmlDeviceGetComputeRunningProcesses_v3"));
  ASSERT_EQ(init(), gpu::nvml::kSuccess);
  gpu::nvml::Device device = nullptr;
  ASSERT_EQ(handle(0, &device), gpu::nvml::kSuccess);
  unsigned count = 0;
  EXPECT_EQ(list(device, &count, nullptr), gpu::nvml::kErrorInsufficientSize);
  EXPECT_EQ(count, 2u);
  std::vector<gpu::nvml::ProcessInfoV2> infos(1);
  count = 1;
  EXPECT_EQ(list(device, &count, infos.data()), gpu::nvml::kErrorInsufficientSize);
  infos.resize(4);
  count = 4;
  EXPECT_EQ(list(device, &count, infos.data()), gpu::nvml::kSuccess);
  EXPECT_EQ(count, 2u);
  EXPECT_EQ(infos[0].gpuInstanceId, 0xFFFFFFFFu);
  // GPU 1 has no processes: success with a count of 0.
  ASSERT_EQ(handle(1, &device), gpu::nvml::kSuccess);
  count = 0;
  EXPECT_EQ(list(device, &count, nullptr), gpu::nvml::kSuccess);
  EXPECT_EQ(count, 0u);
}

}  // namespace
}  // namespace tarmac::testing
