// SPDX-License-Identifier: Apache-2.0
//
// The fake libnvidia-ml as an independent NVML client sees it: every
// function the public library exports (tools/fakenvml/public_exports.txt)
// resolves through dlsym, and each answers both a handle the library gave
// out and one it did not with an NVML return code, never a crash; the
// board facts, MIG instances, accounting and topology it models answer
// what the simulated world holds.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <map>
#include <tuple>
#include <vector>

#include "gpu/nvml_api.h"
#include "testutil/sim_fixture.h"

namespace tarmac::testing {
namespace {

using gpu::nvml::Return;

// Every call takes up to six words: a handle first, then the arena.
using Any = Return (*)(void*, void*, void*, void*, void*, void*);

constexpr const char* kScenario = R"(
[[gpu]]
model = "NVIDIA H100 80GB HBM3"
mig_layout = ["3g.40gb", "1g.10gb"]
[[gpu]]
count = 2
model = "NVIDIA H100 80GB HBM3"
nvlink = "all"
)";

class NvmlExportsTest : public SimWorldTest {
 public:
  void SetUp() override {
    UseScenarioText(kScenario);
    lib_ = dlopen(FakeNvmlPath().c_str(), RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(lib_, nullptr) << dlerror();
  }
  void TearDown() override {
    if (lib_ != nullptr) dlclose(lib_);
  }
  template <typename F>
  F Fn(const char* name) {
    return reinterpret_cast<F>(dlsym(lib_, name));
  }
  void* lib_ = nullptr;
};

bool IsNvmlCode(Return r) { return (r >= 0 && r <= 29) || r == 999; }

// Functions whose first argument is a handle the library hands out (a
// device, GPU or compute instance, event set), by name.
bool TakesHandleFirst(const std::string& name) {
  static const char* kNotHandles[] = {"nvmlDeviceGetCount",         "nvmlDeviceGetHandleBy",
                                      "nvmlDeviceDiscoverGpus",     "nvmlDeviceQueryDrainState",
                                      "nvmlDeviceModifyDrainState", "nvmlDeviceRemoveGpu",
                                      "nvmlEventSetCreate"};
  for (const char* n : kNotHandles) {
    if (name.rfind(n, 0) == 0) return false;
  }
  return name.rfind("nvmlDevice", 0) == 0 || name.rfind("nvmlGpuInstance", 0) == 0 ||
         name.rfind("nvmlComputeInstance", 0) == 0 || name.rfind("nvmlEventSet", 0) == 0 ||
         name.rfind("nvmlVgpuInstance", 0) == 0 || name.rfind("nvmlVgpuType", 0) == 0 ||
         (name.rfind("nvmlUnit", 0) == 0 && name != "nvmlUnitGetCount");
}

TEST_F(NvmlExportsTest, EveryPublicFunctionIsThereAndAnswersAValidAndAnInvalidHandle) {
  std::ifstream list(SourceDir() + "/tools/fakenvml/public_exports.txt");
  std::vector<std::string> names, missing;
  for (std::string line; std::getline(list, line);) {
    if (line.empty() || line[0] == '#') continue;
    names.push_back(line);
    if (dlsym(lib_, line.c_str()) == nullptr) missing.push_back(line);
  }
  EXPECT_EQ(names.size(), 286u);
  EXPECT_TRUE(missing.empty()) << missing.size() << " missing, first " << missing.front();

  ASSERT_EQ(Fn<Return (*)()>("nvmlInit_v2")(), gpu::nvml::kSuccess);
  auto handle = Fn<Return (*)(unsigned, void**)>("nvmlDeviceGetHandleByIndex_v2");
  void* mig_gpu = nullptr;
  void* plain_gpu = nullptr;
  ASSERT_EQ(handle(0, &mig_gpu), gpu::nvml::kSuccess);
  ASSERT_EQ(handle(1, &plain_gpu), gpu::nvml::kSuccess);
  void* gi = nullptr;
  void* ci = nullptr;
  ASSERT_EQ(Fn<Return (*)(void*, unsigned, void**)>("nvmlDeviceGetGpuInstanceById")(mig_gpu, 1, &gi),
            gpu::nvml::kSuccess);
  ASSERT_EQ(Fn<Return (*)(void*, unsigned, void**)>("nvmlGpuInstanceGetComputeInstanceById")(gi, 0, &ci),
            gpu::nvml::kSuccess);
  void* set = nullptr;
  ASSERT_EQ(Fn<Return (*)(void**)>("nvmlEventSetCreate")(&set), gpu::nvml::kSuccess);

  // One zeroed arena at a low address: the same word is a writable buffer
  // (for outputs) and a small integer (65536, for counts, ids and sizes,
  // which each call must refuse or bound).
  constexpr size_t kArena = size_t{4} << 20;
  void* arena = mmap(reinterpret_cast<void*>(0x10000), kArena, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
  ASSERT_EQ(arena, reinterpret_cast<void*>(0x10000)) << std::strerror(errno);
  int not_a_handle = 0;
  // Calls that end this test's own state are made last, or not at all.
  const std::set<std::string> kLater = {"nvmlShutdown",      "nvmlInit",         "nvmlInit_v2",
                                        "nvmlInitWithFlags", "nvmlEventSetFree", "nvmlGpmSampleFree",
                                        "nvmlErrorString"};
  std::map<std::string, int> calls;
  for (const std::string& name : names) {
    if (kLater.count(name) != 0) continue;
    Any f = reinterpret_cast<Any>(dlsym(lib_, name.c_str()));
    ASSERT_NE(f, nullptr) << name;
    std::vector<void*> valid = {arena};
    if (name.rfind("nvmlGpuInstance", 0) == 0)
      valid = {gi};
    else if (name.rfind("nvmlComputeInstance", 0) == 0)
      valid = {ci};
    else if (name.rfind("nvmlEventSet", 0) == 0 && name != "nvmlEventSetCreate")
      valid = {set};
    else if (TakesHandleFirst(name))
      valid = {mig_gpu, plain_gpu};
    // A wait is given no time (the arena's word would wait a minute).
    bool is_wait = name.rfind("nvmlEventSetWait", 0) == 0;
    for (void* h : valid) {
      std::memset(arena, 0, kArena);
      Return r = f(h, arena, is_wait ? nullptr : arena, arena, arena, arena);
      if (is_wait) r = f(h, arena, nullptr, nullptr, nullptr, nullptr);
      EXPECT_TRUE(IsNvmlCode(r)) << name << " answered " << r;
      ++calls[name];
    }
    if (TakesHandleFirst(name)) {
      std::memset(arena, 0, kArena);
      Return r = f(&not_a_handle, arena, arena, arena, arena, arena);
      EXPECT_EQ(r, gpu::nvml::kErrorInvalidArgument) << name << " took a handle it never gave out";
      ++calls[name];
    }
  }
  size_t later = 0;
  for (const std::string& name : names) later += kLater.count(name);
  EXPECT_EQ(calls.size() + later, names.size());
  // The frees refuse what they did not allocate, then free what they did.
  auto free_set = Fn<Return (*)(void*)>("nvmlEventSetFree");
  EXPECT_EQ(free_set(&not_a_handle), gpu::nvml::kErrorInvalidArgument);
  EXPECT_EQ(free_set(set), gpu::nvml::kSuccess);
  EXPECT_EQ(free_set(set), gpu::nvml::kErrorInvalidArgument);  // Once.
  void* sample = nullptr;
  ASSERT_EQ(Fn<Return (*)(void**)>("nvmlGpmSampleAlloc")(&sample), gpu::nvml::kSuccess);
  auto free_sample = Fn<Return (*)(void*)>("nvmlGpmSampleFree");
  EXPECT_EQ(free_sample(&not_a_handle), gpu::nvml::kErrorInvalidArgument);
  EXPECT_EQ(free_sample(sample), gpu::nvml::kSuccess);
  EXPECT_EQ(Fn<Return (*)()>("nvmlShutdown")(), gpu::nvml::kSuccess);
  munmap(arena, kArena);
}

struct Bar1 {
  unsigned long long total, free, used;
};
struct GpuInstanceInfo {
  void* device;
  unsigned id, profile_id, start, size;
};
struct ComputeInstanceInfo {
  void* device;
  void* gpu_instance;
  unsigned id, profile_id, start, size;
};
struct ProfileInfo {  // nvmlGpuInstanceProfileInfo_t
  unsigned id, is_p2p_supported, slice_count, instance_count, multiprocessor_count, copy_engine_count,
      decoder_count, encoder_count, jpeg_count, ofa_count;
  unsigned long long memory_size_mb;
};
struct Placement {
  unsigned start, size;
};
struct AccountingStats {
  unsigned gpu_utilization, memory_utilization;
  unsigned long long max_memory, time, start_time;
  unsigned is_running, reserved[5];
};

// What a monitor reads beyond the basics, from the simulated world: BAR1
// on a MIG GPU (a widely used monitor crashed without it), the MIG
// instances through the management API, accounting of a running process,
// clocks, P2P and the nearest GPUs.
TEST_F(NvmlExportsTest, ModelledFactsAnswerWhatTheWorldHolds) {
  Child* load = StartLoad("1", {"--memory", "3GiB", "--util", "40"});
  ASSERT_EQ(Fn<Return (*)()>("nvmlInit_v2")(), gpu::nvml::kSuccess);
  auto handle = Fn<Return (*)(unsigned, void**)>("nvmlDeviceGetHandleByIndex_v2");
  void* gpu0 = nullptr;
  void* gpu1 = nullptr;
  void* gpu2 = nullptr;
  ASSERT_EQ(handle(0, &gpu0), gpu::nvml::kSuccess);
  ASSERT_EQ(handle(1, &gpu1), gpu::nvml::kSuccess);
  ASSERT_EQ(handle(2, &gpu2), gpu::nvml::kSuccess);

  Bar1 bar1{};
  ASSERT_EQ(Fn<Return (*)(void*, Bar1*)>("nvmlDeviceGetBAR1MemoryInfo")(gpu0, &bar1), gpu::nvml::kSuccess);
  EXPECT_EQ(bar1.total, uint64_t{128} << 30);
  EXPECT_EQ(bar1.free + bar1.used, bar1.total);

  // A MIG device handle answers what NVML answers on one: its share of
  // BAR1, its attributes (a GPU's handle: NOT_SUPPORTED, "only MIG device
  // handles"), and its UUID finds it.
  void* mig3g = nullptr;
  ASSERT_EQ(Fn<Return (*)(void*, unsigned, void**)>("nvmlDeviceGetMigDeviceHandleByIndex")(gpu0, 0, &mig3g),
            gpu::nvml::kSuccess);
  ASSERT_EQ(Fn<Return (*)(void*, Bar1*)>("nvmlDeviceGetBAR1MemoryInfo")(mig3g, &bar1), gpu::nvml::kSuccess);
  EXPECT_EQ(bar1.total, uint64_t{64} << 30);  // 4 of the 8 memory slices.
  EXPECT_EQ(bar1.free + bar1.used, bar1.total);
  struct {
    unsigned sms, copy_engines, decoders, encoders, jpegs, ofas, gi_slices, ci_slices;
    unsigned long long memory_mb;
  } attributes{};
  auto attributes_of = Fn<Return (*)(void*, void*)>("nvmlDeviceGetAttributes_v2");
  ASSERT_EQ(attributes_of(mig3g, &attributes), gpu::nvml::kSuccess);
  EXPECT_EQ(attributes.gi_slices, 3u);
  EXPECT_EQ(attributes.ci_slices, 3u);
  EXPECT_EQ(attributes.sms, 48u);
  EXPECT_GT(attributes.memory_mb, 39000u);
  EXPECT_EQ(attributes_of(gpu0, &attributes), gpu::nvml::kErrorNotSupported);
  char mig_uuid[96] = {};
  ASSERT_EQ(Fn<Return (*)(void*, char*, unsigned)>("nvmlDeviceGetUUID")(mig3g, mig_uuid, sizeof mig_uuid),
            gpu::nvml::kSuccess);
  void* by_uuid = nullptr;
  ASSERT_EQ(Fn<Return (*)(const char*, void**)>("nvmlDeviceGetHandleByUUID")(mig_uuid, &by_uuid),
            gpu::nvml::kSuccess);
  EXPECT_EQ(by_uuid, mig3g);

  // GPU 0's instances: 3g.40gb (profile constant 2, id 9) and 1g.10gb
  // (constant 0, id 19), each with its compute instance 0. The calls after
  // the profile's info take its ID, as with the driver.
  auto instances = Fn<Return (*)(void*, unsigned, void**, unsigned*)>("nvmlDeviceGetGpuInstances");
  void* found[8] = {};
  unsigned count = 0;
  ASSERT_EQ(instances(gpu0, 9, found, &count), gpu::nvml::kSuccess);
  ASSERT_EQ(count, 1u);
  GpuInstanceInfo gi_info{};
  ASSERT_EQ(Fn<Return (*)(void*, GpuInstanceInfo*)>("nvmlGpuInstanceGetInfo")(found[0], &gi_info),
            gpu::nvml::kSuccess);
  EXPECT_EQ(gi_info.device, gpu0);
  EXPECT_EQ(gi_info.id, 1u);
  EXPECT_EQ(gi_info.profile_id, 9u);
  EXPECT_EQ(gi_info.size, 4u);  // Memory slices of 8.
  ASSERT_EQ(instances(gpu0, 19, found, &count), gpu::nvml::kSuccess);
  EXPECT_EQ(count, 1u);
  ASSERT_EQ(instances(gpu0, 0, found, &count), gpu::nvml::kSuccess);  // 7g.80gb: none.
  EXPECT_EQ(count, 0u);
  EXPECT_EQ(instances(gpu0, 2, found, &count), gpu::nvml::kErrorInvalidArgument);  // No profile has ID 2.
  EXPECT_EQ(instances(gpu1, 19, found, &count), gpu::nvml::kErrorNotSupported);    // Not in MIG mode.
  unsigned remaining = 0;
  ASSERT_EQ(Fn<Return (*)(void*, unsigned, unsigned*)>("nvmlDeviceGetGpuInstanceRemainingCapacity")(
                gpu0, 19, &remaining),
            gpu::nvml::kSuccess);
  // The 3g.40gb sits at memory slices 0-3 and the 1g.10gb at 4: a 1g.10gb
  // fits at 5 and 6 (7 is no placement of it: its compute slice would be
  // the eighth).
  EXPECT_EQ(remaining, 2u);
  void* ci = nullptr;
  ASSERT_EQ(
      Fn<Return (*)(void*, unsigned, void**)>("nvmlGpuInstanceGetComputeInstanceById")(found[0], 0, &ci),
      gpu::nvml::kSuccess);
  ComputeInstanceInfo ci_info{};
  ASSERT_EQ(Fn<Return (*)(void*, ComputeInstanceInfo*)>("nvmlComputeInstanceGetInfo_v2")(ci, &ci_info),
            gpu::nvml::kSuccess);
  EXPECT_EQ(ci_info.gpu_instance, found[0]);
  EXPECT_EQ(ci_info.id, 0u);

  // Accounting: the running load, its memory and SM share.
  unsigned pids[8] = {};
  count = 8;
  ASSERT_EQ(Fn<Return (*)(void*, unsigned*, unsigned*)>("nvmlDeviceGetAccountingPids")(gpu1, &count, pids),
            gpu::nvml::kSuccess);
  ASSERT_EQ(count, 1u);
  EXPECT_EQ(pids[0], static_cast<unsigned>(load->pid()));
  AccountingStats stats{};
  auto accounting = Fn<Return (*)(void*, unsigned, AccountingStats*)>("nvmlDeviceGetAccountingStats");
  ASSERT_EQ(accounting(gpu1, pids[0], &stats), gpu::nvml::kSuccess);
  EXPECT_EQ(stats.max_memory, uint64_t{3} << 30);
  EXPECT_EQ(stats.is_running, 1u);
  EXPECT_EQ(accounting(gpu0, pids[0], &stats), gpu::nvml::kErrorNotFound);

  // Clocks by the size protocol; P2P over NVLink between the NVLink pair,
  // not to the MIG GPU.
  auto memory_clocks = Fn<Return (*)(void*, unsigned*, unsigned*)>("nvmlDeviceGetSupportedMemoryClocks");
  unsigned clocks[256] = {};
  count = 0;
  EXPECT_EQ(memory_clocks(gpu1, &count, nullptr), gpu::nvml::kErrorInsufficientSize);
  ASSERT_EQ(count, 1u);
  ASSERT_EQ(memory_clocks(gpu1, &count, clocks), gpu::nvml::kSuccess);
  auto graphics_clocks =
      Fn<Return (*)(void*, unsigned, unsigned*, unsigned*)>("nvmlDeviceGetSupportedGraphicsClocks");
  count = 256;
  ASSERT_EQ(graphics_clocks(gpu1, clocks[0], &count, clocks), gpu::nvml::kSuccess);
  EXPECT_GT(count, 100u);
  EXPECT_EQ(clocks[0], 1980u);
  auto p2p = Fn<Return (*)(void*, void*, int, int*)>("nvmlDeviceGetP2PStatus");
  int status = -1;
  ASSERT_EQ(p2p(gpu1, gpu2, 2, &status), gpu::nvml::kSuccess);
  EXPECT_EQ(status, 0);
  ASSERT_EQ(p2p(gpu1, gpu0, 2, &status), gpu::nvml::kSuccess);
  EXPECT_NE(status, 0);
  char text[96] = {};
  EXPECT_EQ(Fn<Return (*)(void*, char*, unsigned)>("nvmlDeviceGetVbiosVersion")(gpu0, text, sizeof text),
            gpu::nvml::kSuccess);
  EXPECT_EQ(Fn<Return (*)(void*, char*, unsigned)>("nvmlDeviceGetBoardPartNumber")(gpu0, text, 4),
            gpu::nvml::kErrorInsufficientSize);
  // The topology lists' own size protocol: a count of 0 asks the size and
  // is SUCCESS (a binding that asks first raised on INSUFFICIENT_SIZE); a
  // smaller count gets that many.
  auto nearest = Fn<Return (*)(void*, int, unsigned*, void**)>("nvmlDeviceGetTopologyNearestGpus");
  unsigned near_count = 0;
  ASSERT_EQ(nearest(gpu1, 50, &near_count, nullptr), gpu::nvml::kSuccess);
  EXPECT_EQ(near_count, 2u);  // The other two GPUs of the world.
  void* near[4] = {};
  near_count = 1;
  ASSERT_EQ(nearest(gpu1, 50, &near_count, near), gpu::nvml::kSuccess);
  EXPECT_EQ(near_count, 1u);
  EXPECT_NE(near[0], nullptr);
  auto gpu_set = Fn<Return (*)(unsigned, unsigned*, void**)>("nvmlSystemGetTopologyGpuSet");
  unsigned set_count = 0;
  ASSERT_EQ(gpu_set(0, &set_count, nullptr), gpu::nvml::kSuccess);
  EXPECT_GE(set_count, 1u);
  // What two calls report, they report alike: the ECC mode and remapped
  // rows as fields and as calls; the current clock by ID and by type; the
  // P-state among the supported ones.
  gpu::nvml::FieldValue fields[6] = {};
  for (unsigned i = 0; i < 6; ++i) fields[i].fieldId = i < 2 ? 1 + i : 140 + i;  // 1, 2, 142-145.
  ASSERT_EQ(Fn<Return (*)(void*, int, gpu::nvml::FieldValue*)>("nvmlDeviceGetFieldValues")(gpu1, 6, fields),
            gpu::nvml::kSuccess);
  int ecc_current = -1, ecc_pending = -1;
  ASSERT_EQ(Fn<Return (*)(void*, int*, int*)>("nvmlDeviceGetEccMode")(gpu1, &ecc_current, &ecc_pending),
            gpu::nvml::kSuccess);
  ASSERT_EQ(fields[0].nvmlReturn, gpu::nvml::kSuccess);
  EXPECT_EQ(static_cast<int>(fields[0].value.uiVal), ecc_current);
  EXPECT_EQ(static_cast<int>(fields[1].value.uiVal), ecc_pending);
  unsigned rows[4] = {};
  ASSERT_EQ(Fn<Return (*)(void*, unsigned*, unsigned*, unsigned*, unsigned*)>("nvmlDeviceGetRemappedRows")(
                gpu1, &rows[0], &rows[1], &rows[2], &rows[3]),
            gpu::nvml::kSuccess);
  for (unsigned i = 0; i < 4; ++i) {
    ASSERT_EQ(fields[2 + i].nvmlReturn, gpu::nvml::kSuccess) << fields[2 + i].fieldId;
    EXPECT_EQ(fields[2 + i].value.uiVal, rows[i]) << fields[2 + i].fieldId;
  }
  unsigned by_id = 0, by_type = 0;
  ASSERT_EQ(Fn<Return (*)(void*, int, int, unsigned*)>("nvmlDeviceGetClock")(gpu1, 1, 0, &by_id),
            gpu::nvml::kSuccess);
  ASSERT_EQ(Fn<Return (*)(void*, int, unsigned*)>("nvmlDeviceGetClockInfo")(gpu1, 1, &by_type),
            gpu::nvml::kSuccess);
  EXPECT_EQ(by_id, by_type);
  int pstate = -1;
  int supported[16] = {};
  ASSERT_EQ(Fn<Return (*)(void*, int*)>("nvmlDeviceGetPerformanceState")(gpu1, &pstate), gpu::nvml::kSuccess);
  ASSERT_EQ(
      Fn<Return (*)(void*, int*, unsigned)>("nvmlDeviceGetSupportedPerformanceStates")(gpu1, supported, 16),
      gpu::nvml::kSuccess);
  EXPECT_NE(std::find(std::begin(supported), std::end(supported), pstate), std::end(supported)) << pstate;
  // Pages are retired by row remapping on Hopper.
  EXPECT_EQ(
      Fn<Return (*)(void*, int, unsigned*, void*)>("nvmlDeviceGetRetiredPages")(gpu1, 0, &count, nullptr),
      gpu::nvml::kErrorNotSupported);
  EXPECT_EQ(Fn<Return (*)()>("nvmlShutdown")(), gpu::nvml::kSuccess);
}

// MIG management as a root caller of the driver sees it: a created GPU
// instance takes the lowest free id, comes with its compute instance, is
// seen by every process of the world (a CUDA program runs in it), cannot be
// destroyed while a process runs in it, and its neighbours keep their ids
// and UUIDs throughout.
// NVML's pattern for MIG: the profile's info by its NVML_GPU_INSTANCE_PROFILE_*
// constant, then its ID to every other call (a client that passed the
// constant got another profile's answer). Placements are the profile's own:
// a 7g.80gb has one at 0, a 4g.40gb one, a 1g.10gb seven.
TEST_F(NvmlExportsTest, MigCallsTakeTheProfileIdFromTheProfilesInfo) {
  ASSERT_EQ(Fn<Return (*)()>("nvmlInit_v2")(), gpu::nvml::kSuccess);
  void* gpu0 = nullptr;
  ASSERT_EQ(Fn<Return (*)(unsigned, void**)>("nvmlDeviceGetHandleByIndex_v2")(0, &gpu0), gpu::nvml::kSuccess);
  auto info_of = Fn<Return (*)(void*, unsigned, ProfileInfo*)>("nvmlDeviceGetGpuInstanceProfileInfo");
  auto placements =
      Fn<Return (*)(void*, unsigned, Placement*, unsigned*)>("nvmlDeviceGetGpuInstancePossiblePlacements_v2");
  auto instances = Fn<Return (*)(void*, unsigned, void**, unsigned*)>("nvmlDeviceGetGpuInstances");
  // Constant: (ID, placements' starts, instances now on GPU 0).
  const std::map<unsigned, std::tuple<unsigned, std::vector<unsigned>, unsigned>> expected = {
      {0, {19, {0, 1, 2, 3, 4, 5, 6}, 1}},  // 1g.10gb
      {1, {14, {0, 2, 4}, 0}},              // 2g.20gb
      {2, {9, {0, 4}, 1}},                  // 3g.40gb
      {3, {5, {0}, 0}},                     // 4g.40gb
      {4, {0, {0}, 0}},                     // 7g.80gb
  };
  for (const auto& [constant, want] : expected) {
    const auto& [id, starts, now] = want;
    ProfileInfo info{};
    ASSERT_EQ(info_of(gpu0, constant, &info), gpu::nvml::kSuccess) << constant;
    EXPECT_EQ(info.id, id) << constant;
    unsigned count = 0;
    ASSERT_EQ(placements(gpu0, info.id, nullptr, &count), gpu::nvml::kSuccess);  // The size first.
    std::vector<Placement> got(count);
    ASSERT_EQ(placements(gpu0, info.id, got.data(), &count), gpu::nvml::kSuccess);
    std::vector<unsigned> got_starts;
    for (const Placement& p : got) got_starts.push_back(p.start);
    EXPECT_EQ(got_starts, starts) << "profile " << constant;
    void* found[8] = {};
    unsigned n = 8;
    ASSERT_EQ(instances(gpu0, info.id, found, &n), gpu::nvml::kSuccess);
    EXPECT_EQ(n, now) << "profile " << constant;
  }
  EXPECT_EQ(Fn<Return (*)()>("nvmlShutdown")(), gpu::nvml::kSuccess);
}

TEST_F(NvmlExportsTest, RootCreatesAndDestroysGpuInstancesThatEveryProcessSees) {
  if (geteuid() != 0) GTEST_SKIP() << "creating MIG instances needs root, as with the driver";
  ASSERT_EQ(Fn<Return (*)()>("nvmlInit_v2")(), gpu::nvml::kSuccess);
  void* gpu0 = nullptr;
  ASSERT_EQ(Fn<Return (*)(unsigned, void**)>("nvmlDeviceGetHandleByIndex_v2")(0, &gpu0), gpu::nvml::kSuccess);
  auto mig_handle = Fn<Return (*)(void*, unsigned, void**)>("nvmlDeviceGetMigDeviceHandleByIndex");
  auto uuid_of = [&](void* device) {
    char uuid[96] = {};
    EXPECT_EQ(Fn<Return (*)(void*, char*, unsigned)>("nvmlDeviceGetUUID")(device, uuid, sizeof uuid),
              gpu::nvml::kSuccess);
    return std::string(uuid);
  };
  auto mig_uuids = [&] {
    std::vector<std::string> out;
    for (unsigned i = 0; i < 7; ++i) {
      void* mig = nullptr;
      if (mig_handle(gpu0, i, &mig) == gpu::nvml::kSuccess) out.push_back(uuid_of(mig));
    }
    return out;
  };
  std::vector<std::string> before = mig_uuids();
  ASSERT_EQ(before.size(), 2u);  // 3g.40gb (id 1) and 1g.10gb (id 2).
  auto remaining = [&](unsigned profile) {
    unsigned n = 0;
    EXPECT_EQ(Fn<Return (*)(void*, unsigned, unsigned*)>("nvmlDeviceGetGpuInstanceRemainingCapacity")(
                  gpu0, profile, &n),
              gpu::nvml::kSuccess);
    return n;
  };
  // The 3g.40gb at 0-3 and the 1g.10gb at 4 leave no 2g.20gb placement
  // (0, 2, 4); two 1g.10gb fit, at 5 and 6.
  ASSERT_EQ(remaining(14), 0u);
  ASSERT_EQ(remaining(19), 2u);

  auto create = Fn<Return (*)(void*, unsigned, void**)>("nvmlDeviceCreateGpuInstance");
  void* made = nullptr;
  EXPECT_EQ(create(gpu0, 14, &made), gpu::nvml::kErrorInsufficientResources);
  ASSERT_EQ(create(gpu0, 19, &made), gpu::nvml::kSuccess);
  GpuInstanceInfo info{};
  ASSERT_EQ(Fn<Return (*)(void*, GpuInstanceInfo*)>("nvmlGpuInstanceGetInfo")(made, &info),
            gpu::nvml::kSuccess);
  EXPECT_EQ(info.id, 3u);
  EXPECT_EQ(info.profile_id, 19u);
  EXPECT_EQ(info.start, 5u);  // Its lowest free placement.
  std::vector<std::string> after = mig_uuids();
  ASSERT_EQ(after.size(), 3u);
  EXPECT_EQ(std::vector<std::string>(after.begin(), after.begin() + 2), before);
  EXPECT_EQ(remaining(19), 1u);
  void* ci = nullptr;
  EXPECT_EQ(Fn<Return (*)(void*, unsigned, void**)>("nvmlGpuInstanceGetComputeInstanceById")(made, 0, &ci),
            gpu::nvml::kSuccess);
  EXPECT_EQ(create(gpu0, 19, &made), gpu::nvml::kSuccess);  // A 1g.10gb still fits, at 6.
  ASSERT_EQ(Fn<Return (*)(void*, GpuInstanceInfo*)>("nvmlGpuInstanceGetInfo")(made, &info),
            gpu::nvml::kSuccess);
  EXPECT_EQ(info.id, 4u);
  EXPECT_EQ(info.start, 6u);
  EXPECT_EQ(create(gpu0, 19, &made), gpu::nvml::kErrorInsufficientResources);
  std::string one_g = mig_uuids().back();

  // Another process of the world runs a CUDA program in the first new one.
  Child* load = StartLoad(after[2], {"--memory", "5GiB", "--util", "30"});
  auto processes = Fn<Return (*)(void*, unsigned*, void*)>("nvmlDeviceGetComputeRunningProcesses_v3");
  void* mig_new = nullptr;
  ASSERT_EQ(mig_handle(gpu0, 2, &mig_new), gpu::nvml::kSuccess);
  ASSERT_TRUE(WaitFor([&] {
    unsigned n = 0;
    return processes(mig_new, &n, nullptr) == gpu::nvml::kErrorInsufficientSize && n == 1;
  }));
  void* gi_new = nullptr;
  ASSERT_EQ(Fn<Return (*)(void*, unsigned, void**)>("nvmlDeviceGetGpuInstanceById")(gpu0, 3, &gi_new),
            gpu::nvml::kSuccess);
  auto destroy = Fn<Return (*)(void*)>("nvmlGpuInstanceDestroy");
  EXPECT_EQ(destroy(gi_new), gpu::nvml::kErrorInUse);
  EXPECT_EQ(Fn<Return (*)(void*)>("nvmlComputeInstanceDestroy")(ci), gpu::nvml::kErrorInUse);
  load->KillAndWait(SIGKILL);
  ASSERT_TRUE(WaitFor([&] { return destroy(gi_new) == gpu::nvml::kSuccess; }));
  void* found[8] = {};
  unsigned count = 8;
  // The others, the 1g.10gb made after it included, keep their UUIDs.
  EXPECT_EQ(mig_uuids(), (std::vector<std::string>{before[0], before[1], one_g}));
  ASSERT_EQ(Fn<Return (*)(void*, unsigned, void**, unsigned*)>("nvmlDeviceGetGpuInstances")(gpu0, 19, found,
                                                                                            &count),
            gpu::nvml::kSuccess);
  ASSERT_EQ(count, 2u);
  ASSERT_EQ(Fn<Return (*)(void*, GpuInstanceInfo*)>("nvmlGpuInstanceGetInfo")(found[1], &info),
            gpu::nvml::kSuccess);
  EXPECT_EQ(info.id, 4u);
  EXPECT_EQ(info.start, 6u);     // It stays where it was made.
  EXPECT_EQ(remaining(19), 1u);  // Slice 5 is free again.
  EXPECT_EQ(Fn<Return (*)()>("nvmlShutdown")(), gpu::nvml::kSuccess);
}

}  // namespace
}  // namespace tarmac::testing
