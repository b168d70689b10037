// SPDX-License-Identifier: Apache-2.0
#include "checks.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace tarmac::nvmlsweep {
namespace {

using namespace gpu::nvml;  // NOLINT: the ABI's names.

constexpr unsigned long long kReasonGpuIdle = 0x1;
constexpr unsigned long long kReasonSwPowerCap = 0x4;
constexpr unsigned long long kReasonThermal = 0x8 | 0x20 | 0x40;  // Hw slowdown, Sw and Hw thermal.
constexpr int kPolicyPower = 0;                                   // NVML_PERF_POLICY_POWER
constexpr int kPolicyThermal = 1;                                 // NVML_PERF_POLICY_THERMAL

class Checker {
 public:
  Checker(Library& lib, const SweptWorld& world, const SweptDevice& d) : lib_(lib), world_(world), d_(d) {}

  void Report(const std::string& name, bool ok, const std::string& detail) {
    lib_.Line({"check", name, d_.Label(), d_.Tags(world_.caller), ok ? "ok" : "disagree", detail});
  }
  int Call(const char* name, std::vector<Word> rest) {
    rest.insert(rest.begin(), W(d_.handle));
    return lib_.Call(name, rest);
  }

  void Memory() {
    MemoryV1 v1{};
    MemoryV2 v2{};
    v2.version = kMemoryV2Version;
    if (Call("nvmlDeviceGetMemoryInfo", {W(&v1)}) != kSuccess ||
        Call("nvmlDeviceGetMemoryInfo_v2", {W(&v2)}) != kSuccess)
      return;
    // v1's used is v2's used and reserved together (R510+; nvml-abi.md B.6).
    bool ok = v1.total == v2.total && v1.free == v2.free && v1.used == v2.used + v2.reserved &&
              v1.total == v1.free + v1.used;
    Report("memory-v1-v2", ok,
           "v1 total/free/used " + std::to_string(v1.total) + "/" + std::to_string(v1.free) + "/" +
               std::to_string(v1.used) + ", v2 total/free/used/reserved " + std::to_string(v2.total) + "/" +
               std::to_string(v2.free) + "/" + std::to_string(v2.used) + "/" + std::to_string(v2.reserved));
  }

  // Field `id` against the direct call's `direct` (answered `code`).
  void Field(unsigned id, int code, unsigned long long direct, const char* call) {
    FieldValue f{};
    f.fieldId = id;
    if (Call("nvmlDeviceGetFieldValues", {1, W(&f)}) != kSuccess) return;
    if (f.nvmlReturn != kSuccess && code != kSuccess) return;
    unsigned long long value = f.valueType == kValueTypeUnsignedInt ? f.value.uiVal : f.value.ullVal;
    Report("field-" + std::to_string(id), f.nvmlReturn == code && value == direct,
           std::string("field ") + CodeName(f.nvmlReturn) + " " + std::to_string(value) + ", " + call + " " +
               CodeName(code) + " " + std::to_string(direct));
  }

  void Fields() {
    int current = 0, pending = 0;
    int r = Call("nvmlDeviceGetEccMode", {W(&current), W(&pending)});
    Field(1, r, static_cast<unsigned>(current), "nvmlDeviceGetEccMode current");
    Field(2, r, static_cast<unsigned>(pending), "nvmlDeviceGetEccMode pending");
    unsigned rows[4] = {};
    r = Call("nvmlDeviceGetRemappedRows", {W(&rows[0]), W(&rows[1]), W(&rows[2]), W(&rows[3])});
    for (unsigned i = 0; i < 4; ++i) Field(142 + i, r, rows[i], "nvmlDeviceGetRemappedRows");
    unsigned replays = 0;
    r = Call("nvmlDeviceGetPcieReplayCounter", {W(&replays)});
    Field(94, r, replays, "nvmlDeviceGetPcieReplayCounter");
    unsigned links = 0;
    int active = 0;
    for (unsigned link = 0; link < kNvLinkMaxLinks; ++link)
      if (Call("nvmlDeviceGetNvLinkState", {link, W(&active)}) == kSuccess) ++links;
    Field(91, links > 0 ? kSuccess : kErrorNotSupported, links, "nvmlDeviceGetNvLinkState links");
  }

  void Clocks() {
    for (int type = kClockGraphics; type <= kClockVideo; ++type) {
      // A live clock may move between two calls: the one by ID is read
      // between two of GetClockInfo and must equal one of them.
      unsigned info = 0, by_id = 0, after = 0, max = 0;
      int a = Call("nvmlDeviceGetClockInfo", {static_cast<Word>(type), W(&info)});
      int b = Call("nvmlDeviceGetClock", {static_cast<Word>(type), 0, W(&by_id)});  // NVML_CLOCK_ID_CURRENT
      Call("nvmlDeviceGetClockInfo", {static_cast<Word>(type), W(&after)});
      int c = Call("nvmlDeviceGetMaxClockInfo", {static_cast<Word>(type), W(&max)});
      if (a != kSuccess && b != kSuccess) continue;
      std::string t = std::to_string(type);
      Report("clock-by-id", a == b && (info == by_id || after == by_id),
             "type " + t + ": GetClockInfo " + CodeName(a) + " " + std::to_string(info) + " MHz, GetClock " +
                 CodeName(b) + " " + std::to_string(by_id) + " MHz");
      if (c == kSuccess)
        Report("clock-under-max", info <= max,
               "type " + t + ": " + std::to_string(info) + " of at most " + std::to_string(max) + " MHz");
    }
  }

  void PerformanceState() {
    int pstate = 0;
    int states[16];
    std::fill(std::begin(states), std::end(states), kPstateUnknown);
    if (Call("nvmlDeviceGetPerformanceState", {W(&pstate)}) != kSuccess ||
        Call("nvmlDeviceGetSupportedPerformanceStates", {W(states), 16}) != kSuccess)
      return;
    int lowest = -1;
    bool listed = false;
    for (int s : states) {
      if (s == kPstateUnknown) continue;
      lowest = std::max(lowest, s);
      listed = listed || s == pstate;
    }
    Report("pstate-supported", listed, "P" + std::to_string(pstate) + " among the supported P-states");
    ProcessInfoV2 procs[64];
    unsigned count = 64;
    if (Call("nvmlDeviceGetComputeRunningProcesses_v3", {W(&count), W(procs)}) == kSuccess && count > 0)
      Report("pstate-context", pstate != lowest,
             std::to_string(count) + " processes hold a context; P" + std::to_string(pstate) + ", lowest P" +
                 std::to_string(lowest));
  }

  void Reasons() {
    unsigned long long reasons = 0;
    if (Call("nvmlDeviceGetCurrentClocksThrottleReasons", {W(&reasons)}) != kSuccess) return;
    unsigned sm = 0, max = 0;
    if ((reasons & kReasonGpuIdle) != 0 && Call("nvmlDeviceGetClockInfo", {kClockSm, W(&sm)}) == kSuccess &&
        Call("nvmlDeviceGetMaxClockInfo", {kClockSm, W(&max)}) == kSuccess)
      Report("idle-clocks", sm < max,
             "GPU_IDLE set: the SM clock " + std::to_string(sm) + " MHz is under its " + std::to_string(max));
    Violation(reasons & kReasonThermal, kPolicyThermal, "thermal");
    Violation(reasons & kReasonSwPowerCap, kPolicyPower, "power");
  }

  // While a reason is active, its violation time is not 0.
  void Violation(unsigned long long active, int policy, const std::string& what) {
    unsigned long long times[2] = {};  // nvmlViolationTime_t: reference (us), violation (ns).
    if (active == 0 ||
        Call("nvmlDeviceGetViolationStatus", {static_cast<Word>(policy), W(times)}) != kSuccess)
      return;
    Report("violation-" + what, times[1] > 0,
           what + " reason active; violation time " + std::to_string(times[1]) + " ns");
  }

  void Processes() {
    ProcessInfoV2 v3[64], v2[64];
    ProcessInfoV1 v1[64];
    unsigned n3 = 64, n2 = 64, n1 = 64;
    if (Call("nvmlDeviceGetComputeRunningProcesses_v3", {W(&n3), W(v3)}) != kSuccess ||
        Call("nvmlDeviceGetComputeRunningProcesses_v2", {W(&n2), W(v2)}) != kSuccess ||
        Call("nvmlDeviceGetComputeRunningProcesses", {W(&n1), W(v1)}) != kSuccess)
      return;
    bool same = n3 == n2 && n2 == n1;
    for (unsigned i = 0; same && i < n3; ++i) same = v3[i].pid == v2[i].pid && v2[i].pid == v1[i].pid;
    Report("process-versions", same,
           "v1 " + std::to_string(n1) + ", v2 " + std::to_string(n2) + ", v3 " + std::to_string(n3) +
               " processes");
  }

  void Bar1() {
    unsigned long long bar1[3] = {};  // total, free, used
    if (Call("nvmlDeviceGetBAR1MemoryInfo", {W(bar1)}) != kSuccess) return;
    Report("bar1", bar1[2] <= bar1[0] && bar1[1] == bar1[0] - bar1[2],
           "total " + std::to_string(bar1[0]) + ", free " + std::to_string(bar1[1]) + ", used " +
               std::to_string(bar1[2]));
  }

  // A MIG device: found again by its UUID, its parent, its instance.
  void MigDevice() {
    void* by_uuid = nullptr;
    void* parent = nullptr;
    unsigned is_mig = 0, gi = 0;
    int r = lib_.Call("nvmlDeviceGetHandleByUUID", {W(d_.uuid.c_str()), W(&by_uuid)});
    Report("mig-uuid", r == kSuccess && by_uuid == d_.handle, d_.uuid + ": " + CodeName(r));
    r = Call("nvmlDeviceGetDeviceHandleFromMigDeviceHandle", {W(&parent)});
    Report("mig-parent", r == kSuccess && parent == world_.Gpu(d_.gpu), CodeName(r));
    r = Call("nvmlDeviceIsMigDeviceHandle", {W(&is_mig)});
    Report("mig-handle", r == kSuccess && is_mig == 1, CodeName(r) + " " + std::to_string(is_mig));
    r = Call("nvmlDeviceGetGpuInstanceId", {W(&gi)});
    bool known = false;
    for (const SweptInstance& g : world_.gpu_instances) known = known || (g.gpu == d_.gpu && g.id == gi);
    Report("mig-instance", r == kSuccess && known, CodeName(r) + ": GPU instance " + std::to_string(gi));
  }

  // A MIG-enabled GPU: as many MIG devices as GPU instances, and their
  // memory within the GPU's.
  void MigGpu() {
    size_t instances = 0;
    for (const SweptInstance& g : world_.gpu_instances) instances += g.gpu == d_.gpu ? 1 : 0;
    size_t devices = 0;
    unsigned long long memory = 0;
    for (const SweptDevice& m : world_.devices) {
      if (m.mig < 0 || m.gpu != d_.gpu) continue;
      ++devices;
      MemoryV1 v1{};
      lib_.Call("nvmlDeviceGetMemoryInfo", {W(m.handle), W(&v1)});
      memory += v1.total;
    }
    MemoryV1 total{};
    Call("nvmlDeviceGetMemoryInfo", {W(&total)});
    Report("mig-devices", devices == instances && memory <= total.total,
           std::to_string(devices) + " MIG devices, " + std::to_string(instances) + " GPU instances, " +
               std::to_string(memory) + " of " + std::to_string(total.total) + " bytes");
  }

 private:
  Library& lib_;
  const SweptWorld& world_;
  const SweptDevice& d_;
};

}  // namespace

void CheckAgreement(Library& lib, const SweptWorld& world) {
  for (const SweptDevice& d : world.devices) {
    if (d.lost) continue;
    Checker c(lib, world, d);
    if (d.mig >= 0) {
      c.MigDevice();
      c.Memory();
      c.Bar1();
      continue;
    }
    c.Memory();
    c.Fields();
    c.Clocks();
    c.PerformanceState();
    c.Reasons();
    c.Processes();
    c.Bar1();
    if (d.mig_on) c.MigGpu();
  }
}

}  // namespace tarmac::nvmlsweep
