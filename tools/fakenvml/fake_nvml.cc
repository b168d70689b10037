// SPDX-License-Identifier: Apache-2.0
//
// The fake libnvidia-ml.so.1: tarmac's simulated world (src/sim) served
// through the NVML C ABI, so tarmac's real NVML backend, and any NVML client
// written by someone else, can be run without a GPU. Select the world with
// TARMAC_SIM_SCENARIO / TARMAC_SIM_DIR (sim/world.h).
//
// It follows the driver's contracts (docs/nvml.md): refcounted init, every
// call before init returns UNINITIALIZED, versioned structs are checked and
// a wrong version returns ARGUMENT_VERSION_MISMATCH, variable-length lists
// follow the INSUFFICIENT_SIZE protocol, error strings are static, field
// values carry a per-entry return, and the scenario's faults come back as the
// codes a real driver returns (GPU_IS_LOST after Xid 79, DRIVER_NOT_LOADED,
// NO_PERMISSION, NOT_SUPPORTED for absent sensors and under MIG).
//
// Built twice: the default build exports the current versioned symbols; the
// legacy build (TARMAC_FAKE_LEGACY) lacks memory v2, the _v2/_v3 process
// lists, clock event reasons and TemperatureV, as an older driver does.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "common/cpu_list.h"
#include "fake_state.h"

#define NVML_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

using namespace tarmac;           // NOLINT: this file is one ABI shim.
using namespace tarmac::gpu::nvml;  // NOLINT
using tarmac::fakenvml::FakeState;

FakeState& Fake() { return FakeState::Get(); }

// One device call's view of the world.
struct Dev {
  Return r = kSuccess;
  int index = 0;
  std::shared_ptr<const sim::WorldState> state;
  const sim::GpuSpec* spec = nullptr;
  const sim::GpuState* g = nullptr;
};

Dev Open(nvmlDevice_st* device) {
  Dev d;
  d.r = Fake().Resolve(device, &d.index, &d.state);
  if (d.r != kSuccess) return d;
  sim::World* world = Fake().world();
  if (world == nullptr) {
    d.r = kErrorUninitialized;
    return d;
  }
  d.spec = &world->scenario().gpus[static_cast<size_t>(d.index)];
  d.g = &d.state->gpus[static_cast<size_t>(d.index)];
  return d;
}

Return CopyString(const std::string& value, char* out, unsigned length) {
  if (out == nullptr) return kErrorInvalidArgument;
  if (value.size() + 1 > length) return kErrorInsufficientSize;
  std::memcpy(out, value.c_str(), value.size() + 1);
  return kSuccess;
}

bool Unsupported(const Dev& d, const char* field) { return !d.spec->Supports(field); }

unsigned long long Micros(std::chrono::system_clock::time_point t) {
  return static_cast<unsigned long long>(
      std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count());
}

// Writes process entries at `stride` with the size protocol.
Return ProcessList(nvmlDevice_st* device, unsigned* count, void* infos, size_t stride,
                   bool is_graphics) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (count == nullptr) return kErrorInvalidArgument;
  // The simulated world runs compute contexts only.
  size_t n = is_graphics ? 0 : d.g->processes.size();
  if (n == 0) {
    *count = 0;
    return kSuccess;
  }
  if (infos == nullptr || *count < n) {
    *count = static_cast<unsigned>(n);
    return kErrorInsufficientSize;
  }
  auto* out = static_cast<unsigned char*>(infos);
  for (size_t i = 0; i < n; ++i) {
    const sim::ProcessState& p = d.g->processes[i];
    unsigned char* entry = out + i * stride;
    std::memset(entry, 0, stride);
    unsigned pid = static_cast<unsigned>(p.pid);
    unsigned long long used = static_cast<unsigned long long>(p.used_memory_bytes);
    std::memcpy(entry, &pid, sizeof pid);
    std::memcpy(entry + 8, &used, sizeof used);
    if (stride >= 24) {
      unsigned none = kValueNotAvailableUint;  // Not a MIG instance.
      std::memcpy(entry + 16, &none, sizeof none);
      std::memcpy(entry + 20, &none, sizeof none);
    }
  }
  *count = static_cast<unsigned>(n);
  return kSuccess;
}

}  // namespace

// ---- init and system --------------------------------------------------------

NVML_EXPORT Return nvmlInit_v2() { return Fake().Init(); }
NVML_EXPORT Return nvmlInit() { return Fake().Init(); }
NVML_EXPORT Return nvmlInitWithFlags(unsigned /*flags*/) { return Fake().Init(); }
NVML_EXPORT Return nvmlShutdown() { return Fake().Shutdown(); }
NVML_EXPORT const char* nvmlErrorString(Return code) { return fakenvml::ErrorString(code); }

NVML_EXPORT Return nvmlSystemGetDriverVersion(char* version, unsigned length) {
  sim::World* w = Fake().world();
  if (w == nullptr) return kErrorUninitialized;
  return CopyString(w->scenario().driver_version, version, length);
}

NVML_EXPORT Return nvmlSystemGetNVMLVersion(char* version, unsigned length) {
  sim::World* w = Fake().world();
  if (w == nullptr) return kErrorUninitialized;
  return CopyString(w->scenario().nvml_version, version, length);
}

NVML_EXPORT Return nvmlSystemGetCudaDriverVersion(int* version) {
  sim::World* w = Fake().world();
  if (w == nullptr) return kErrorUninitialized;
  if (version == nullptr) return kErrorInvalidArgument;
  *version = w->scenario().cuda_driver_version;
  return kSuccess;
}

NVML_EXPORT Return nvmlSystemGetCudaDriverVersion_v2(int* version) {
  return nvmlSystemGetCudaDriverVersion(version);
}

NVML_EXPORT Return nvmlSystemGetProcessName(unsigned pid, char* name, unsigned length) {
  if (Fake().world() == nullptr) return kErrorUninitialized;
  std::ifstream in("/proc/" + std::to_string(pid) + "/comm");
  std::string comm;
  if (!std::getline(in, comm)) return kErrorNotFound;
  return CopyString(comm, name, length);
}

// ---- enumeration and identity -----------------------------------------------

NVML_EXPORT Return nvmlDeviceGetCount_v2(unsigned* count) {
  sim::World* w = Fake().world();
  if (w == nullptr) return kErrorUninitialized;
  if (count == nullptr) return kErrorInvalidArgument;
  *count = static_cast<unsigned>(w->scenario().gpus.size());
  return kSuccess;
}

// v1 skips devices the caller may not open, so its indices can differ.
NVML_EXPORT Return nvmlDeviceGetCount(unsigned* count) {
  sim::World* w = Fake().world();
  if (w == nullptr) return kErrorUninitialized;
  if (count == nullptr) return kErrorInvalidArgument;
  unsigned n = 0;
  for (const sim::GpuSpec& g : w->scenario().gpus) n += g.has_no_permission ? 0 : 1;
  *count = n;
  return kSuccess;
}

NVML_EXPORT Return nvmlDeviceGetHandleByIndex_v2(unsigned index, nvmlDevice_st** device) {
  sim::World* w = Fake().world();
  if (w == nullptr) return kErrorUninitialized;
  if (device == nullptr || index >= w->scenario().gpus.size()) return kErrorInvalidArgument;
  if (w->scenario().gpus[index].has_no_permission) return kErrorNoPermission;
  std::shared_ptr<const sim::WorldState> state = w->State();
  if (!state->is_driver_loaded) return kErrorDriverNotLoaded;
  if (state->gpus[index].is_lost) return kErrorGpuIsLost;
  *device = Fake().Handle(static_cast<int>(index));
  return kSuccess;
}

NVML_EXPORT Return nvmlDeviceGetHandleByIndex(unsigned index, nvmlDevice_st** device) {
  sim::World* w = Fake().world();
  if (w == nullptr) return kErrorUninitialized;
  unsigned visible = 0;
  for (const sim::GpuSpec& g : w->scenario().gpus) {
    if (g.has_no_permission) continue;
    if (visible++ == index) return nvmlDeviceGetHandleByIndex_v2(static_cast<unsigned>(g.index), device);
  }
  return kErrorInvalidArgument;
}

NVML_EXPORT Return nvmlDeviceGetHandleByUUID(const char* uuid, nvmlDevice_st** device) {
  sim::World* w = Fake().world();
  if (w == nullptr) return kErrorUninitialized;
  if (uuid == nullptr || device == nullptr) return kErrorInvalidArgument;
  for (const sim::GpuSpec& g : w->scenario().gpus) {
    if (g.uuid == uuid) return nvmlDeviceGetHandleByIndex_v2(static_cast<unsigned>(g.index), device);
  }
  return kErrorNotFound;
}

NVML_EXPORT Return nvmlDeviceGetHandleByPciBusId_v2(const char* bus_id, nvmlDevice_st** device) {
  sim::World* w = Fake().world();
  if (w == nullptr) return kErrorUninitialized;
  if (bus_id == nullptr || device == nullptr) return kErrorInvalidArgument;
  for (const sim::GpuSpec& g : w->scenario().gpus) {
    char full[32];
    char legacy[16];
    std::snprintf(full, sizeof full, "00000000:%02X:00.0", g.pci_bus);
    std::snprintf(legacy, sizeof legacy, "0000:%02X:00.0", g.pci_bus);
    if (strcasecmp(bus_id, full) == 0 || strcasecmp(bus_id, legacy) == 0) {
      return nvmlDeviceGetHandleByIndex_v2(static_cast<unsigned>(g.index), device);
    }
  }
  return kErrorNotFound;
}

NVML_EXPORT Return nvmlDeviceGetIndex(nvmlDevice_st* device, unsigned* index) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (index == nullptr) return kErrorInvalidArgument;
  *index = static_cast<unsigned>(d.index);
  return kSuccess;
}

NVML_EXPORT Return nvmlDeviceGetMinorNumber(nvmlDevice_st* device, unsigned* minor) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (minor == nullptr) return kErrorInvalidArgument;
  *minor = static_cast<unsigned>(d.index);
  return kSuccess;
}

NVML_EXPORT Return nvmlDeviceGetName(nvmlDevice_st* device, char* name, unsigned length) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  return CopyString(d.spec->model, name, length);
}

NVML_EXPORT Return nvmlDeviceGetUUID(nvmlDevice_st* device, char* uuid, unsigned length) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  return CopyString(d.spec->uuid, uuid, length);
}

NVML_EXPORT Return nvmlDeviceGetSerial(nvmlDevice_st* device, char* serial, unsigned length) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (Unsupported(d, "serial")) return kErrorNotSupported;
  return CopyString(d.spec->serial, serial, length);
}

NVML_EXPORT Return nvmlDeviceGetPciInfo_v3(nvmlDevice_st* device, PciInfo* pci) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (pci == nullptr) return kErrorInvalidArgument;
  std::memset(pci, 0, sizeof *pci);
  pci->domain = 0;
  pci->bus = static_cast<unsigned>(d.spec->pci_bus);
  pci->device = 0;
  pci->pciDeviceId = (0x2330u << 16) | 0x10DEu;  // NVIDIA vendor id in the low half.
  pci->pciSubSystemId = 0x16C110DEu;
  std::snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "0000:%02X:00.0", d.spec->pci_bus);
  std::snprintf(pci->busId, sizeof pci->busId, "00000000:%02X:00.0", d.spec->pci_bus);
  return kSuccess;
}
NVML_EXPORT Return nvmlDeviceGetPciInfo_v2(nvmlDevice_st* device, PciInfo* pci) {
  return nvmlDeviceGetPciInfo_v3(device, pci);
}
NVML_EXPORT Return nvmlDeviceGetPciInfo(nvmlDevice_st* device, PciInfo* pci) {
  return nvmlDeviceGetPciInfo_v3(device, pci);
}

NVML_EXPORT Return nvmlDeviceGetBrand(nvmlDevice_st* device, int* brand) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (brand == nullptr) return kErrorInvalidArgument;
  *brand = 2;  // NVML_BRAND_TESLA
  return kSuccess;
}

NVML_EXPORT Return nvmlDeviceGetArchitecture(nvmlDevice_st* device, unsigned* arch) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (arch == nullptr) return kErrorInvalidArgument;
  const std::string& m = d.spec->model;
  *arch = (m.find("H100") != std::string::npos || m.find("H200") != std::string::npos) ? 9 : 7;
  return kSuccess;
}

NVML_EXPORT Return nvmlDeviceGetCudaComputeCapability(nvmlDevice_st* device, int* major, int* minor) {
  unsigned arch = 0;
  Return r = nvmlDeviceGetArchitecture(device, &arch);
  if (r != kSuccess) return r;
  if (major == nullptr || minor == nullptr) return kErrorInvalidArgument;
  *major = arch == 9 ? 9 : 8;
  *minor = 0;
  return kSuccess;
}

// ---- utilization, memory, power, thermal, clocks ----------------------------

NVML_EXPORT Return nvmlDeviceGetUtilizationRates(nvmlDevice_st* device, Utilization* u) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (Unsupported(d, "utilization") || d.spec->is_mig_enabled) return kErrorNotSupported;
  if (u == nullptr) return kErrorInvalidArgument;
  u->gpu = static_cast<unsigned>(d.g->utilization_gpu_percent);
  u->memory = static_cast<unsigned>(d.g->utilization_memory_percent);
  return kSuccess;
}

NVML_EXPORT Return nvmlDeviceGetEncoderUtilization(nvmlDevice_st* device, unsigned* u, unsigned* period_us) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (u == nullptr || period_us == nullptr) return kErrorInvalidArgument;
  *u = 0;
  *period_us = 1000000;
  return kSuccess;
}
NVML_EXPORT Return nvmlDeviceGetDecoderUtilization(nvmlDevice_st* device, unsigned* u, unsigned* period_us) {
  return nvmlDeviceGetEncoderUtilization(device, u, period_us);
}

// v1: `used` includes the reserve, as on R510+ drivers.
NVML_EXPORT Return nvmlDeviceGetMemoryInfo(nvmlDevice_st* device, MemoryV1* memory) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (memory == nullptr) return kErrorInvalidArgument;
  memory->total = static_cast<unsigned long long>(d.g->memory_total_bytes);
  memory->used = static_cast<unsigned long long>(d.g->memory_used_bytes + d.g->memory_reserved_bytes);
  memory->free = static_cast<unsigned long long>(d.g->memory_free_bytes);
  return kSuccess;
}

#ifndef TARMAC_FAKE_LEGACY
NVML_EXPORT Return nvmlDeviceGetMemoryInfo_v2(nvmlDevice_st* device, MemoryV2* memory) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (memory == nullptr) return kErrorInvalidArgument;
  sim::World* w = Fake().world();
  if (memory->version != kMemoryV2Version ||
      (w != nullptr && w->scenario().rejected_struct_versions.count("memory_v2"))) {
    return kErrorArgumentVersionMismatch;
  }
  memory->total = static_cast<unsigned long long>(d.g->memory_total_bytes);
  memory->reserved = static_cast<unsigned long long>(d.g->memory_reserved_bytes);
  memory->used = static_cast<unsigned long long>(d.g->memory_used_bytes);
  memory->free = static_cast<unsigned long long>(d.g->memory_free_bytes);
  return kSuccess;
}
#endif

NVML_EXPORT Return nvmlDeviceGetPowerUsage(nvmlDevice_st* device, unsigned* power) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (Unsupported(d, "power")) return kErrorNotSupported;
  if (power == nullptr) return kErrorInvalidArgument;
  *power = static_cast<unsigned>(d.g->power_milliwatts);
  return kSuccess;
}

NVML_EXPORT Return nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_st* device, unsigned* limit) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (Unsupported(d, "power")) return kErrorNotSupported;
  if (limit == nullptr) return kErrorInvalidArgument;
  *limit = static_cast<unsigned>(d.g->power_limit_milliwatts);
  return kSuccess;
}

NVML_EXPORT Return nvmlDeviceGetPowerManagementLimit(nvmlDevice_st* device, unsigned* limit) {
  return nvmlDeviceGetEnforcedPowerLimit(device, limit);
}

NVML_EXPORT Return nvmlDeviceGetPowerManagementDefaultLimit(nvmlDevice_st* device, unsigned* limit) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (Unsupported(d, "power")) return kErrorNotSupported;
  if (limit == nullptr) return kErrorInvalidArgument;
  *limit = static_cast<unsigned>(std::llround(d.spec->power_limit_watts * 1000));
  return kSuccess;
}

NVML_EXPORT Return nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_st* device, unsigned long long* energy) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (Unsupported(d, "energy")) return kErrorNotSupported;
  if (energy == nullptr) return kErrorInvalidArgument;
  *energy = static_cast<unsigned long long>(d.g->energy_millijoules);
  return kSuccess;
}

NVML_EXPORT Return nvmlDeviceGetTemperature(nvmlDevice_st* device, int sensor, unsigned* temp) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (Unsupported(d, "temperature")) return kErrorNotSupported;
  if (temp == nullptr || sensor != kTemperatureGpu) return kErrorInvalidArgument;
  *temp = static_cast<unsigned>(d.g->temperature_celsius);
  return kSuccess;
}

#ifndef TARMAC_FAKE_LEGACY
NVML_EXPORT Return nvmlDeviceGetTemperatureV(nvmlDevice_st* device, TemperatureV1* temp) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (temp == nullptr) return kErrorInvalidArgument;
  sim::World* w = Fake().world();
  if (temp->version != kTemperatureV1Version ||
      (w != nullptr && w->scenario().rejected_struct_versions.count("temperature_v1"))) {
    return kErrorArgumentVersionMismatch;
  }
  if (Unsupported(d, "temperature")) return kErrorNotSupported;
  if (temp->sensorType != kTemperatureGpu) return kErrorInvalidArgument;
  temp->temperature = d.g->temperature_celsius;
  return kSuccess;
}
#endif

NVML_EXPORT Return nvmlDeviceGetTemperatureThreshold(nvmlDevice_st* device, int type, unsigned* temp) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (temp == nullptr) return kErrorInvalidArgument;
  if (type == 0) *temp = static_cast<unsigned>(d.spec->shutdown_celsius);
  else if (type == 1) *temp = static_cast<unsigned>(d.spec->slowdown_celsius);
  else return kErrorNotSupported;
  return kSuccess;
}

NVML_EXPORT Return nvmlDeviceGetFanSpeed(nvmlDevice_st* device, unsigned* speed) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (Unsupported(d, "fan")) return kErrorNotSupported;
  if (speed == nullptr) return kErrorInvalidArgument;
  *speed = static_cast<unsigned>(d.g->fan_percent);
  return kSuccess;
}
NVML_EXPORT Return nvmlDeviceGetFanSpeed_v2(nvmlDevice_st* device, unsigned fan, unsigned* speed) {
  if (fan != 0) return kErrorInvalidArgument;
  return nvmlDeviceGetFanSpeed(device, speed);
}
NVML_EXPORT Return nvmlDeviceGetNumFans(nvmlDevice_st* device, unsigned* count) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (Unsupported(d, "fan")) return kErrorNotSupported;
  if (count == nullptr) return kErrorInvalidArgument;
  *count = 1;
  return kSuccess;
}

NVML_EXPORT Return nvmlDeviceGetPerformanceState(nvmlDevice_st* device, int* pstate) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (Unsupported(d, "performance_state")) return kErrorNotSupported;
  if (pstate == nullptr) return kErrorInvalidArgument;
  *pstate = d.g->performance_state;
  return kSuccess;
}
NVML_EXPORT Return nvmlDeviceGetPowerState(nvmlDevice_st* device, int* pstate) {
  return nvmlDeviceGetPerformanceState(device, pstate);
}

NVML_EXPORT Return nvmlDeviceGetClockInfo(nvmlDevice_st* device, int type, unsigned* mhz) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (mhz == nullptr) return kErrorInvalidArgument;
  if (type == kClockGraphics || type == kClockSm) *mhz = static_cast<unsigned>(d.g->sm_clock_mhz);
  else if (type == kClockMem) *mhz = static_cast<unsigned>(d.g->memory_clock_mhz);
  else return kErrorNotSupported;
  return kSuccess;
}

NVML_EXPORT Return nvmlDeviceGetMaxClockInfo(nvmlDevice_st* device, int type, unsigned* mhz) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (mhz == nullptr) return kErrorInvalidArgument;
  if (type == kClockGraphics || type == kClockSm) *mhz = static_cast<unsigned>(d.spec->sm_clock_max_mhz);
  else if (type == kClockMem) *mhz = static_cast<unsigned>(d.spec->memory_clock_mhz);
  else return kErrorNotSupported;
  return kSuccess;
}

NVML_EXPORT Return nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_st* device,
                                                             unsigned long long* reasons) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (Unsupported(d, "clock_event_reasons")) return kErrorNotSupported;
  if (reasons == nullptr) return kErrorInvalidArgument;
  *reasons = d.g->clock_event_reasons;
  return kSuccess;
}
NVML_EXPORT Return nvmlDeviceGetSupportedClocksThrottleReasons(nvmlDevice_st* device,
                                                               unsigned long long* reasons) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (reasons == nullptr) return kErrorInvalidArgument;
  *reasons = 0x1FF;
  return kSuccess;
}
#ifndef TARMAC_FAKE_LEGACY
NVML_EXPORT Return nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_st* device,
                                                          unsigned long long* reasons) {
  return nvmlDeviceGetCurrentClocksThrottleReasons(device, reasons);
}
NVML_EXPORT Return nvmlDeviceGetSupportedClocksEventReasons(nvmlDevice_st* device,
                                                            unsigned long long* reasons) {
  return nvmlDeviceGetSupportedClocksThrottleReasons(device, reasons);
}
#endif

NVML_EXPORT Return nvmlDeviceGetPersistenceMode(nvmlDevice_st* device, int* mode) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (mode == nullptr) return kErrorInvalidArgument;
  *mode = d.spec->is_persistence_mode_enabled ? 1 : 0;
  return kSuccess;
}

NVML_EXPORT Return nvmlDeviceGetComputeMode(nvmlDevice_st* device, int* mode) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (mode == nullptr) return kErrorInvalidArgument;
  *mode = 0;  // NVML_COMPUTEMODE_DEFAULT
  return kSuccess;
}

NVML_EXPORT Return nvmlDeviceGetMigMode(nvmlDevice_st* device, unsigned* current, unsigned* pending) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (current == nullptr || pending == nullptr) return kErrorInvalidArgument;
  *current = *pending = d.spec->is_mig_enabled ? 1 : 0;
  return kSuccess;
}

// ---- ECC and RAS ------------------------------------------------------------

NVML_EXPORT Return nvmlDeviceGetEccMode(nvmlDevice_st* device, int* current, int* pending) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (!d.spec->has_ecc || Unsupported(d, "ecc")) return kErrorNotSupported;
  if (current == nullptr || pending == nullptr) return kErrorInvalidArgument;
  *current = *pending = 1;
  return kSuccess;
}

NVML_EXPORT Return nvmlDeviceGetTotalEccErrors(nvmlDevice_st* device, int type, int counter,
                                               unsigned long long* count) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (!d.spec->has_ecc || Unsupported(d, "ecc")) return kErrorNotSupported;
  if (count == nullptr || type < 0 || type > 1 || counter < 0 || counter > 1) {
    return kErrorInvalidArgument;
  }
  *count = static_cast<unsigned long long>(type == kMemoryErrorCorrected ? d.g->ecc_corrected
                                                                         : d.g->ecc_uncorrected);
  return kSuccess;
}

NVML_EXPORT Return nvmlDeviceGetRemappedRows(nvmlDevice_st* device, unsigned* corrected,
                                             unsigned* uncorrected, unsigned* pending,
                                             unsigned* failure) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (!d.spec->has_remapped_rows || Unsupported(d, "remapped_rows")) return kErrorNotSupported;
  if (corrected == nullptr || uncorrected == nullptr || pending == nullptr || failure == nullptr) {
    return kErrorInvalidArgument;
  }
  *corrected = static_cast<unsigned>(d.g->remapped_rows_corrected);
  *uncorrected = static_cast<unsigned>(d.g->remapped_rows_uncorrected);
  *pending = d.g->is_remap_pending ? 1 : 0;
  *failure = 0;
  return kSuccess;
}

// ---- PCIe, NVLink, topology -------------------------------------------------

NVML_EXPORT Return nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_st* device, unsigned* gen) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (gen == nullptr) return kErrorInvalidArgument;
  *gen = static_cast<unsigned>(d.g->pcie_generation);
  return kSuccess;
}
NVML_EXPORT Return nvmlDeviceGetCurrPcieLinkWidth(nvmlDevice_st* device, unsigned* width) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (width == nullptr) return kErrorInvalidArgument;
  *width = static_cast<unsigned>(d.g->pcie_width);
  return kSuccess;
}
NVML_EXPORT Return nvmlDeviceGetMaxPcieLinkGeneration(nvmlDevice_st* device, unsigned* gen) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (gen == nullptr) return kErrorInvalidArgument;
  *gen = static_cast<unsigned>(d.spec->pcie_generation);
  return kSuccess;
}
NVML_EXPORT Return nvmlDeviceGetGpuMaxPcieLinkGeneration(nvmlDevice_st* device, unsigned* gen) {
  return nvmlDeviceGetMaxPcieLinkGeneration(device, gen);
}
NVML_EXPORT Return nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_st* device, unsigned* width) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (width == nullptr) return kErrorInvalidArgument;
  *width = static_cast<unsigned>(d.spec->pcie_width);
  return kSuccess;
}

// The driver samples this over 20 ms; the fake answers at once.
NVML_EXPORT Return nvmlDeviceGetPcieThroughput(nvmlDevice_st* device, int counter, unsigned* kbps) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (Unsupported(d, "pcie_counters")) return kErrorNotSupported;
  if (kbps == nullptr) return kErrorInvalidArgument;
  if (counter == kPcieUtilTxBytes) *kbps = static_cast<unsigned>(d.g->pcie_tx_kilobytes_per_second);
  else if (counter == kPcieUtilRxBytes) *kbps = static_cast<unsigned>(d.g->pcie_rx_kilobytes_per_second);
  else return kErrorInvalidArgument;
  return kSuccess;
}

NVML_EXPORT Return nvmlDeviceGetFieldValues(nvmlDevice_st* device, int count, FieldValue* values) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (values == nullptr || count < 0) return kErrorInvalidArgument;
  long long now_us = static_cast<long long>(Micros(d.state->evaluated_at));
  for (int i = 0; i < count; ++i) {
    FieldValue& v = values[i];
    v.timestamp = now_us;
    v.latencyUsec = 0;
    v.valueType = kValueTypeUnsignedLongLong;
    v.nvmlReturn = kSuccess;
    switch (v.fieldId) {
      case kFieldPcieCountTxBytes:
        if (Unsupported(d, "pcie_counters")) v.nvmlReturn = kErrorNotSupported;
        else v.value.ullVal = static_cast<unsigned long long>(d.g->pcie_tx_bytes);
        break;
      case kFieldPcieCountRxBytes:
        if (Unsupported(d, "pcie_counters")) v.nvmlReturn = kErrorNotSupported;
        else v.value.ullVal = static_cast<unsigned long long>(d.g->pcie_rx_bytes);
        break;
      case kFieldTotalEnergyConsumption:
        if (Unsupported(d, "energy")) v.nvmlReturn = kErrorNotSupported;
        else v.value.ullVal = static_cast<unsigned long long>(d.g->energy_millijoules);
        break;
      default: v.nvmlReturn = kErrorNotSupported; break;
    }
  }
  return kSuccess;
}

NVML_EXPORT Return nvmlDeviceGetNvLinkState(nvmlDevice_st* device, unsigned link, int* active) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (active == nullptr) return kErrorInvalidArgument;
  if (d.spec->nvlink_peers.empty()) return kErrorNotSupported;
  if (link >= d.spec->nvlink_peers.size()) return kErrorInvalidArgument;
  *active = 1;
  return kSuccess;
}

NVML_EXPORT Return nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_st* device, unsigned link, PciInfo* pci) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (pci == nullptr) return kErrorInvalidArgument;
  if (link >= d.spec->nvlink_peers.size()) return kErrorInvalidArgument;
  return nvmlDeviceGetPciInfo_v3(Fake().Handle(d.spec->nvlink_peers[link]), pci);
}

NVML_EXPORT Return nvmlDeviceGetNumaNodeId(nvmlDevice_st* device, unsigned* node) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (Unsupported(d, "numa_node") || d.spec->numa_node < 0) return kErrorNotSupported;
  if (node == nullptr) return kErrorInvalidArgument;
  *node = static_cast<unsigned>(d.spec->numa_node);
  return kSuccess;
}

NVML_EXPORT Return nvmlDeviceGetCpuAffinity(nvmlDevice_st* device, unsigned size, unsigned long* set) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (set == nullptr || size == 0) return kErrorInvalidArgument;
  Result<std::vector<uint64_t>> mask = ParseCpuList(d.spec->cpus);
  if (!mask.ok()) return kErrorNotSupported;
  for (unsigned i = 0; i < size; ++i) set[i] = i < mask.value().size() ? mask.value()[i] : 0;
  return kSuccess;
}

NVML_EXPORT Return nvmlDeviceGetTopologyCommonAncestor(nvmlDevice_st* a, nvmlDevice_st* b, int* level) {
  Dev da = Open(a);
  if (da.r != kSuccess) return da.r;
  Dev db = Open(b);
  if (db.r != kSuccess) return db.r;
  if (level == nullptr) return kErrorInvalidArgument;
  if (da.index == db.index) *level = 0;                                // INTERNAL
  else if (da.spec->numa_node == db.spec->numa_node) *level = 40;      // NODE
  else *level = 50;                                                    // SYSTEM
  return kSuccess;
}

// ---- processes --------------------------------------------------------------

#ifndef TARMAC_FAKE_LEGACY
NVML_EXPORT Return nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_st* device, unsigned* count, void* infos) {
  return ProcessList(device, count, infos, sizeof(ProcessInfoV2), false);
}
NVML_EXPORT Return nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_st* device, unsigned* count, void* infos) {
  return ProcessList(device, count, infos, sizeof(ProcessInfoV2), true);
}
NVML_EXPORT Return nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_st* device, unsigned* count, void* infos) {
  return ProcessList(device, count, infos, sizeof(ProcessInfoV2), false);
}
NVML_EXPORT Return nvmlDeviceGetGraphicsRunningProcesses_v2(nvmlDevice_st* device, unsigned* count, void* infos) {
  return ProcessList(device, count, infos, sizeof(ProcessInfoV2), true);
}
#endif
NVML_EXPORT Return nvmlDeviceGetComputeRunningProcesses(nvmlDevice_st* device, unsigned* count, void* infos) {
  return ProcessList(device, count, infos, sizeof(ProcessInfoV1), false);
}
NVML_EXPORT Return nvmlDeviceGetGraphicsRunningProcesses(nvmlDevice_st* device, unsigned* count, void* infos) {
  return ProcessList(device, count, infos, sizeof(ProcessInfoV1), true);
}

// Samples newer than `last_seen` (µs), one per computing process; NOT_FOUND
// when there are none, as the driver answers for an idle GPU.
NVML_EXPORT Return nvmlDeviceGetProcessUtilization(nvmlDevice_st* device, ProcessUtilizationSample* samples,
                                                   unsigned* count, unsigned long long last_seen) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (Unsupported(d, "process_utilization") || d.spec->is_mig_enabled) return kErrorNotSupported;
  if (count == nullptr) return kErrorInvalidArgument;
  unsigned long long now_us = Micros(d.state->evaluated_at);
  std::vector<ProcessUtilizationSample> out;
  if (now_us > last_seen) {
    for (const sim::ProcessState& p : d.g->processes) {
      if (p.sm_utilization_percent <= 0) continue;
      ProcessUtilizationSample s{};
      s.pid = static_cast<unsigned>(p.pid);
      s.timeStamp = now_us;
      s.smUtil = static_cast<unsigned>(p.sm_utilization_percent);
      s.memUtil = static_cast<unsigned>(p.sm_utilization_percent * 55 / 100);
      out.push_back(s);
    }
  }
  if (out.empty()) {
    *count = 0;
    return kErrorNotFound;
  }
  if (samples == nullptr || *count < out.size()) {
    *count = static_cast<unsigned>(out.size());
    return kErrorInsufficientSize;
  }
  std::memcpy(samples, out.data(), out.size() * sizeof(ProcessUtilizationSample));
  *count = static_cast<unsigned>(out.size());
  return kSuccess;
}

// GPU utilization history: one sample per second for the last minute.
NVML_EXPORT Return nvmlDeviceGetSamples(nvmlDevice_st* device, int type, unsigned long long last_seen,
                                        int* value_type, unsigned* count, Sample* samples) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (type != kSamplingGpuUtilization) return kErrorNotSupported;
  if (Unsupported(d, "utilization") || d.spec->is_mig_enabled) return kErrorNotSupported;
  if (count == nullptr || value_type == nullptr) return kErrorInvalidArgument;
  sim::World* w = Fake().world();
  if (w == nullptr) return kErrorUninitialized;
  auto history = w->UtilizationHistory(d.index, std::chrono::seconds(60));
  std::vector<Sample> out;
  for (const auto& [at, percent] : history) {
    if (Micros(at) <= last_seen) continue;
    Sample s{};
    s.timeStamp = Micros(at);
    s.sampleValue.uiVal = static_cast<unsigned>(percent);
    out.push_back(s);
  }
  *value_type = kValueTypeUnsignedInt;
  if (out.empty()) return kErrorNotFound;
  if (samples == nullptr) {
    *count = static_cast<unsigned>(out.size());
    return kSuccess;
  }
  size_t n = std::min<size_t>(*count, out.size());
  // Keep the newest when the buffer is short.
  std::memcpy(samples, out.data() + (out.size() - n), n * sizeof(Sample));
  *count = static_cast<unsigned>(n);
  return kSuccess;
}

// ---- GPM (Hopper and newer; not in the legacy build) ---------------------------
#ifndef TARMAC_FAKE_LEGACY

NVML_EXPORT Return nvmlGpmQueryDeviceSupport(nvmlDevice_st* device, GpmSupport* support) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (support == nullptr) return kErrorInvalidArgument;
  if (support->version != kGpmSupportVersion) return kErrorArgumentVersionMismatch;
  support->isSupportedDevice = Unsupported(d, "gpm") || d.spec->is_mig_enabled ? 0 : 1;
  return kSuccess;
}

NVML_EXPORT Return nvmlGpmSampleAlloc(nvmlGpmSample_st** sample) {
  if (Fake().world() == nullptr) return kErrorUninitialized;
  if (sample == nullptr) return kErrorInvalidArgument;
  *sample = new nvmlGpmSample_st();
  return kSuccess;
}

NVML_EXPORT Return nvmlGpmSampleFree(nvmlGpmSample_st* sample) {
  if (sample == nullptr) return kErrorInvalidArgument;
  delete sample;
  return kSuccess;
}

NVML_EXPORT Return nvmlGpmSampleGet(nvmlDevice_st* device, nvmlGpmSample_st* sample) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (sample == nullptr) return kErrorInvalidArgument;
  if (Unsupported(d, "gpm") || d.spec->is_mig_enabled) return kErrorNotSupported;
  sample->index = d.index;
  sample->taken_at = d.state->evaluated_at;
  return kSuccess;
}

// Percent over the interval between the two samples, as the driver's GPM
// metrics are; unknown metric ids get NOT_SUPPORTED in their own slot.
NVML_EXPORT Return nvmlGpmMetricsGet(GpmMetricsGet* get) {
  sim::World* w = Fake().world();
  if (w == nullptr) return kErrorUninitialized;
  if (get == nullptr) return kErrorInvalidArgument;
  if (get->version != kGpmMetricsGetVersion) return kErrorArgumentVersionMismatch;
  if (get->numMetrics > kGpmMetricMax || get->sample1 == nullptr || get->sample2 == nullptr) {
    return kErrorInvalidArgument;
  }
  const nvmlGpmSample_st& a = *get->sample1;
  const nvmlGpmSample_st& b = *get->sample2;
  if (a.index < 0 || a.index != b.index || b.taken_at <= a.taken_at) return kErrorInvalidArgument;
  sim::EngineActivity mean = w->MeanEngineActivity(a.index, a.taken_at, b.taken_at);
  for (unsigned i = 0; i < get->numMetrics; ++i) {
    GpmMetric& m = get->metrics[i];
    m.nvmlReturn = kSuccess;
    switch (m.metricId) {
      case kGpmMetricGraphicsUtil: m.value = mean.graphics * 100; break;
      case kGpmMetricAnyTensorUtil:
      case kGpmMetricHmmaTensorUtil: m.value = mean.tensor * 100; break;
      case kGpmMetricDramBwUtil: m.value = mean.dram * 100; break;
      default: m.nvmlReturn = kErrorNotSupported; m.value = 0; break;
    }
  }
  return kSuccess;
}

#endif  // TARMAC_FAKE_LEGACY

// ---- events -----------------------------------------------------------------

NVML_EXPORT Return nvmlEventSetCreate(nvmlEventSet_st** set) {
  sim::World* w = Fake().world();
  if (w == nullptr) return kErrorUninitialized;
  if (set == nullptr) return kErrorInvalidArgument;
  auto* s = new nvmlEventSet_st();
  s->mask_by_gpu.assign(w->scenario().gpus.size(), 0);
  s->seen_until = w->Now();
  *set = s;
  return kSuccess;
}

NVML_EXPORT Return nvmlDeviceGetSupportedEventTypes(nvmlDevice_st* device, unsigned long long* types) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (types == nullptr) return kErrorInvalidArgument;
  *types = kEventXidCriticalError | 0x4 /* PState */;
  if (d.spec->has_ecc) *types |= kEventSingleBitEccError | kEventDoubleBitEccError;
  return kSuccess;
}

// Registers all of `types` or, if any is unsupported, none of them.
NVML_EXPORT Return nvmlDeviceRegisterEvents(nvmlDevice_st* device, unsigned long long types,
                                            nvmlEventSet_st* set) {
  unsigned long long supported = 0;
  Return r = nvmlDeviceGetSupportedEventTypes(device, &supported);
  if (r != kSuccess) return r;
  if (set == nullptr) return kErrorInvalidArgument;
  if ((types & ~supported) != 0) return kErrorNotSupported;
  set->mask_by_gpu[static_cast<size_t>(device->index)] |= types;
  return kSuccess;
}

NVML_EXPORT Return nvmlEventSetWait_v2(nvmlEventSet_st* set, EventData* data, unsigned timeout_ms) {
  if (set == nullptr || data == nullptr) return kErrorInvalidArgument;
  Clock* clock = RealClock();
  auto deadline = clock->SteadyNow() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    sim::World* w = Fake().world();
    if (w == nullptr) return kErrorUninitialized;
    std::chrono::system_clock::time_point now = w->Now();
    for (const sim::WorldEvent& e : sim::EventsBetween(w->scenario(), w->epoch(), set->seen_until, now)) {
      if (e.gpu >= 0 && static_cast<size_t>(e.gpu) < set->mask_by_gpu.size() &&
          (set->mask_by_gpu[static_cast<size_t>(e.gpu)] & e.event_type) != 0) {
        set->pending.push_back(e);
      }
    }
    if (now > set->seen_until) set->seen_until = now;
    if (!set->pending.empty()) {
      sim::WorldEvent e = set->pending.front();
      set->pending.pop_front();
      data->device = Fake().Handle(e.gpu);
      data->eventType = e.event_type;
      data->eventData = static_cast<unsigned long long>(e.xid);
      data->gpuInstanceId = kValueNotAvailableUint;
      data->computeInstanceId = kValueNotAvailableUint;
      return kSuccess;
    }
    auto step = clock->SteadyNow() + std::chrono::milliseconds(20);
    if (step >= deadline) {
      if (clock->SteadyNow() >= deadline) return kErrorTimeout;
      step = deadline;
    }
    clock->SleepUntil(step, std::stop_token());
  }
}

NVML_EXPORT Return nvmlEventSetWait(nvmlEventSet_st* set, EventData* data, unsigned timeout_ms) {
  return nvmlEventSetWait_v2(set, data, timeout_ms);
}

NVML_EXPORT Return nvmlEventSetFree(nvmlEventSet_st* set) {
  delete set;
  return kSuccess;
}
