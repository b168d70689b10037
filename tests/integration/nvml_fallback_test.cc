// SPDX-License-Identifier: Apache-2.0
//
// The NVML backend on drivers that lack the newer symbols or refuse struct
// versions: it must fall back as a real binding does, and get the numbers
// right (v1 process entries are 16 bytes; v1 memory includes the reserve).
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstring>

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
  std::vector<node::GpuInfo> gpus;
  auto nvml = OpenNvml(LegacyFakeNvmlPath(), &gpus);
  Result<node::GpuSample> s = nvml->Sample(0, node::kAllTiers);
  ASSERT_TRUE(s.ok());
  // With a wrong stride every entry after the first is garbage (PID = the
  // memory of the previous entry); with 16 bytes all three are right.
  ASSERT_EQ(s.value().processes.size(), 3u);
  std::map<int64_t, int64_t> memory_by_pid;
  for (const node::GpuProcess& p : s.value().processes)
    memory_by_pid[p.pid] = p.used_memory_bytes.value_or(-1);
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
  std::vector<node::GpuInfo> gpus;
  auto nvml = OpenNvml(FakeNvmlPath(), &gpus);
  Result<node::GpuSample> s = nvml->Sample(0, node::kAllTiers);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s.value().health, node::GpuHealth::kOk);
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
  auto list =
      reinterpret_cast<gpu::nvml::Return (*)(gpu::nvml::Device, unsigned*, gpu::nvml::ProcessInfoV2*)>(
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

// What widely used NVML clients call beyond tarmac's backend: answered as
// a Linux driver answers, and the legacy build says it is an old driver.
TEST_F(SimWorldTest, TheFakeAnswersWhatOtherClientsCallAsALinuxDriverDoes) {
  UseScenario("lab-8gpu.toml");
  StartLoad("0", {"--memory", "2GiB", "--util", "30"});
  void* lib = dlopen(FakeNvmlPath().c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr);
  using gpu::nvml::Device;
  using gpu::nvml::Return;
  auto sym = [&](const char* name) {
    void* f = dlsym(lib, name);
    EXPECT_NE(f, nullptr) << name;
    return f;
  };
  auto init = reinterpret_cast<Return (*)()>(sym("nvmlInit_v2"));
  auto handle = reinterpret_cast<Return (*)(unsigned, Device*)>(sym("nvmlDeviceGetHandleByIndex_v2"));
  auto display_active = reinterpret_cast<Return (*)(Device, int*)>(sym("nvmlDeviceGetDisplayActive"));
  auto display_mode = reinterpret_cast<Return (*)(Device, int*)>(sym("nvmlDeviceGetDisplayMode"));
  auto driver_model = reinterpret_cast<Return (*)(Device, int*, int*)>(sym("nvmlDeviceGetDriverModel"));
  auto driver_model2 = reinterpret_cast<Return (*)(Device, int*, int*)>(sym("nvmlDeviceGetDriverModel_v2"));
  auto is_mig = reinterpret_cast<Return (*)(Device, unsigned*)>(sym("nvmlDeviceIsMigDeviceHandle"));
  auto max_mig = reinterpret_cast<Return (*)(Device, unsigned*)>(sym("nvmlDeviceGetMaxMigDeviceCount"));
  auto cc = reinterpret_cast<Return (*)(Device, void*)>(sym("nvmlDeviceGetConfComputeMemSizeInfo"));
  auto fields =
      reinterpret_cast<Return (*)(Device, int, gpu::nvml::FieldValue*)>(sym("nvmlDeviceGetFieldValues"));
  auto clock = reinterpret_cast<Return (*)(Device, int, unsigned*)>(sym("nvmlDeviceGetClockInfo"));
  auto max_clock = reinterpret_cast<Return (*)(Device, int, unsigned*)>(sym("nvmlDeviceGetMaxClockInfo"));
  auto link_state = reinterpret_cast<Return (*)(Device, unsigned, int*)>(sym("nvmlDeviceGetNvLinkState"));
  struct DetailList {
    unsigned version, mode, count;
    void* array;
  };
  auto details =
      reinterpret_cast<Return (*)(Device, DetailList*)>(sym("nvmlDeviceGetRunningProcessDetailList"));
  ASSERT_TRUE(init && handle && display_active && display_mode && driver_model && driver_model2 && is_mig &&
              max_mig && cc && fields && clock && max_clock && link_state && details);
  ASSERT_EQ(init(), gpu::nvml::kSuccess);
  Device d = nullptr;
  ASSERT_EQ(handle(0, &d), gpu::nvml::kSuccess);
  int value = -1, pending = -1;
  EXPECT_EQ(display_active(d, &value), gpu::nvml::kSuccess);
  EXPECT_EQ(value, 0);
  EXPECT_EQ(display_mode(d, &value), gpu::nvml::kSuccess);
  EXPECT_EQ(value, 0);
  EXPECT_EQ(driver_model(d, &value, &pending), gpu::nvml::kErrorNotSupported);  // Windows only.
  EXPECT_EQ(driver_model2(d, &value, &pending), gpu::nvml::kErrorNotSupported);
  unsigned u = 99;
  EXPECT_EQ(is_mig(d, &u), gpu::nvml::kSuccess);
  EXPECT_EQ(u, 0u);
  EXPECT_EQ(max_mig(d, &u), gpu::nvml::kSuccess);
  EXPECT_EQ(u, 7u);
  char cc_info[16];
  EXPECT_EQ(cc(d, cc_info), gpu::nvml::kErrorNotSupported);
  // An H100 SXM has 18 NVLinks, as field 91 and the link states say.
  gpu::nvml::FieldValue f[2] = {};
  f[0].fieldId = gpu::nvml::kFieldNvlinkLinkCount;
  f[1].fieldId = 12345;
  ASSERT_EQ(fields(d, 2, f), gpu::nvml::kSuccess);
  EXPECT_EQ(f[0].nvmlReturn, gpu::nvml::kSuccess);
  EXPECT_EQ(f[0].value.ullVal, 18u);
  EXPECT_EQ(f[1].nvmlReturn, gpu::nvml::kErrorNotSupported);
  EXPECT_EQ(link_state(d, 17, &value), gpu::nvml::kSuccess);
  EXPECT_EQ(value, 1);
  EXPECT_EQ(link_state(d, 18, &value), gpu::nvml::kErrorInvalidArgument);
  EXPECT_EQ(max_clock(d, gpu::nvml::kClockVideo, &u), gpu::nvml::kSuccess);
  EXPECT_EQ(u, 1755u);
  EXPECT_EQ(clock(d, gpu::nvml::kClockVideo, &u), gpu::nvml::kSuccess);
  EXPECT_GT(u, 0u);
  // The process detail list: versioned, 32-byte entries, the size protocol.
  DetailList list{2, 0, 0, nullptr};
  EXPECT_EQ(details(d, &list), gpu::nvml::kErrorArgumentVersionMismatch);
  list.version = 0x01000018;
  EXPECT_EQ(details(d, &list), gpu::nvml::kErrorInsufficientSize);
  ASSERT_EQ(list.count, 1u);
  std::vector<unsigned char> entries(32 * list.count);
  list.array = entries.data();
  ASSERT_EQ(details(d, &list), gpu::nvml::kSuccess);
  unsigned long long used = 0;
  std::memcpy(&used, entries.data() + 8, sizeof used);
  EXPECT_EQ(used, uint64_t{2} << 30);
  dlclose(lib);
  // The legacy build is an old driver: old enough to lack what it leaves out.
  std::vector<node::GpuInfo> gpus;
  auto legacy = OpenNvml(LegacyFakeNvmlPath(), &gpus);
  EXPECT_EQ(legacy->system_info().driver_version, "470.256.02");
  void* old = dlopen(LegacyFakeNvmlPath().c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(old, nullptr);
  EXPECT_EQ(dlsym(old, "nvmlDeviceGetRunningProcessDetailList"), nullptr);
  EXPECT_EQ(dlsym(old, "nvmlDeviceGetConfComputeMemSizeInfo"), nullptr);
  EXPECT_EQ(dlsym(old, "nvmlDeviceGetMemoryInfo_v2"), nullptr);
  dlclose(old);
}

// Only the NVML C API is exported: nothing of the C++ library inside.
TEST_F(SimWorldTest, TheFakeExportsOnlyNvmlSymbols) {
  for (const std::string& path : {FakeNvmlPath(), LegacyFakeNvmlPath()}) {
    RunResult nm =
        RunCommand({"sh", "-c", "nm -D --defined-only " + path + " | grep -v ' nvml' || true"}, {});
    EXPECT_EQ(nm.out, "") << path;
    RunResult count = RunCommand({"sh", "-c", "nm -D --defined-only " + path + " | grep -c ' nvml'"}, {});
    EXPECT_GT(std::stoi(count.out), 50) << path;
  }
}

}  // namespace
}  // namespace tarmac::testing
