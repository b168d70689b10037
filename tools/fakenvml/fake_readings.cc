// SPDX-License-Identifier: Apache-2.0
//
// The fake libnvidia-ml (README.md here says what it is): utilization, memory, power, thermal, clocks.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "common/cpu_list.h"
#include "fake_device.h"

namespace {
using namespace tarmac;            // NOLINT: one ABI shim.
using namespace tarmac::fakenvml;  // NOLINT
}  // namespace

NVML_EXPORT Return nvmlDeviceGetUtilizationRates(nvmlDevice_st* device, Utilization* u) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (Unsupported(d, "utilization") || d.spec->is_mig_enabled) return kErrorNotSupported;
  if (u == nullptr) return kErrorInvalidArgument;
  u->gpu = static_cast<unsigned>(d.g->utilization_gpu_percent);
  u->memory = static_cast<unsigned>(d.g->utilization_memory_percent);
  return kSuccess;
}

// The world's loads are compute only: the video engines idle (and, as on
// real boards, are not reported under MIG).
NVML_EXPORT Return nvmlDeviceGetEncoderUtilization(nvmlDevice_st* device, unsigned* u, unsigned* period_us) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (d.spec->is_mig_enabled) return kErrorNotSupported;
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
  if (Fake().IsMigHandle(device)) {  // An instance's own memory.
    MigDev md = OpenMig(device);
    if (md.d.r != kSuccess) return md.d.r;
    if (memory == nullptr) return kErrorInvalidArgument;
    memory->total = static_cast<unsigned long long>(md.m->spec->memory_total_bytes);
    memory->used = static_cast<unsigned long long>(md.m->memory_used_bytes);
    memory->free = memory->total - memory->used;
    return kSuccess;
  }
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
  if (Fake().IsMigHandle(device)) {
    MigDev md = OpenMig(device);
    if (md.d.r != kSuccess) return md.d.r;
    if (memory == nullptr) return kErrorInvalidArgument;
    if (memory->version != kMemoryV2Version) return kErrorArgumentVersionMismatch;
    memory->total = static_cast<unsigned long long>(md.m->spec->memory_total_bytes);
    memory->reserved = 0;
    memory->used = static_cast<unsigned long long>(md.m->memory_used_bytes);
    memory->free = memory->total - memory->used;
    return kSuccess;
  }
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
  if (type == 0)
    *temp = static_cast<unsigned>(d.spec->shutdown_celsius);
  else if (type == 1)
    *temp = static_cast<unsigned>(d.spec->slowdown_celsius);
  else
    return kErrorNotSupported;
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
  if (type == kClockGraphics || type == kClockSm)
    *mhz = static_cast<unsigned>(d.g->sm_clock_mhz);
  else if (type == kClockMem)
    *mhz = static_cast<unsigned>(d.g->memory_clock_mhz);
  else if (type == kClockVideo)
    *mhz = static_cast<unsigned>(VideoClockMhz(*d.spec, d.g->sm_clock_mhz));
  else
    return kErrorNotSupported;
  return kSuccess;
}

NVML_EXPORT Return nvmlDeviceGetMaxClockInfo(nvmlDevice_st* device, int type, unsigned* mhz) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (mhz == nullptr) return kErrorInvalidArgument;
  if (type == kClockGraphics || type == kClockSm)
    *mhz = static_cast<unsigned>(d.spec->sm_clock_max_mhz);
  else if (type == kClockMem)
    *mhz = static_cast<unsigned>(d.spec->memory_clock_mhz);
  else if (type == kClockVideo)
    *mhz = static_cast<unsigned>(VideoClockMhz(*d.spec, d.spec->sm_clock_max_mhz));
  else
    return kErrorNotSupported;
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
  *current = d.spec->is_mig_enabled ? 1 : 0;
  *pending = d.spec->is_mig_pending ? 1 - *current : *current;
  return kSuccess;
}

// A vGPU guest (scenario `vgpu`) or bare metal.
NVML_EXPORT Return nvmlDeviceGetVirtualizationMode(nvmlDevice_st* device, unsigned* mode) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (mode == nullptr) return kErrorInvalidArgument;
  *mode = d.spec->is_vgpu ? kGpuVirtualizationModeVgpu : 0;  // NVML_GPU_VIRTUALIZATION_MODE_NONE
  return kSuccess;
}

// The vGPU license of a guest: one feature, the vGPU's, held or not
// (scenario `vgpu_licensed`); bare metal has none to license.
NVML_EXPORT Return nvmlDeviceGetGridLicensableFeatures_v3(nvmlDevice_st* device,
                                                          GridLicensableFeaturesV3* out) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (out == nullptr) return kErrorInvalidArgument;
  if (!d.spec->is_vgpu) return kErrorNotSupported;
  *out = GridLicensableFeaturesV3{};
  out->isGridLicenseSupported = 1;
  out->licensableFeaturesCount = 1;
  GridLicensableFeatureV3& f = out->gridLicensableFeatures[0];
  f.featureCode = kGridLicenseFeatureCodeVgpu;
  f.featureState = d.spec->is_vgpu_licensed ? 1 : 0;
  f.featureEnabled = 1;
  std::snprintf(f.productName, sizeof f.productName, "NVIDIA Virtual Compute Server");
  std::snprintf(f.licenseInfo, sizeof f.licenseInfo, "%s",
                d.spec->is_vgpu_licensed ? "Licensed" : "Unlicensed");
  return kSuccess;
}

// Data-center GPUs drive no display.
NVML_EXPORT Return nvmlDeviceGetDisplayActive(nvmlDevice_st* device, int* active) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (active == nullptr) return kErrorInvalidArgument;
  *active = 0;
  return kSuccess;
}
NVML_EXPORT Return nvmlDeviceGetDisplayMode(nvmlDevice_st* device, int* mode) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (mode == nullptr) return kErrorInvalidArgument;
  *mode = 0;
  return kSuccess;
}

// Driver models (WDDM, TCC) are a Windows notion: NOT_SUPPORTED on Linux,
// as real drivers answer.
NVML_EXPORT Return nvmlDeviceGetDriverModel(nvmlDevice_st* device, int* current, int* pending) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (current == nullptr || pending == nullptr) return kErrorInvalidArgument;
  return kErrorNotSupported;
}
NVML_EXPORT Return nvmlDeviceGetDriverModel_v2(nvmlDevice_st* device, int* current, int* pending) {
  return nvmlDeviceGetDriverModel(device, current, pending);
}
