// SPDX-License-Identifier: Apache-2.0
//
// The fake libnvidia-ml (README.md here says what it is): the rest of the
// public API, so that no client meets a missing function. Small readings
// the simulated GPU has are answered; settings answer NO_PERMISSION to a
// caller that is not root (as the driver does) and NOT_SUPPORTED to root
// (the simulated GPU's settings are its scenario's); what a data-center GPU
// without vGPU, units, MPS or display does not have answers as the driver
// does there (NOT_SUPPORTED, an empty list, or INVALID_ARGUMENT for a vGPU
// or unit handle, since there are none). Every handle is checked before
// anything else: a handle this library did not give out is
// INVALID_ARGUMENT, never dereferenced.
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "fake_device.h"

extern "C" tarmac::gpu::nvml::Return nvmlDeviceGetCpuAffinity(nvmlDevice_st* device, unsigned size,
                                                              unsigned long* set);
extern "C" tarmac::gpu::nvml::Return nvmlDeviceGetClockInfo(nvmlDevice_st* device, int type, unsigned* mhz);
extern "C" tarmac::gpu::nvml::Return nvmlDeviceGetMaxClockInfo(nvmlDevice_st* device, int type,
                                                               unsigned* mhz);
extern "C" tarmac::gpu::nvml::Return nvmlDeviceGetSerial(nvmlDevice_st* device, char* serial,
                                                         unsigned length);

namespace {
using namespace tarmac;            // NOLINT: one ABI shim.
using namespace tarmac::fakenvml;  // NOLINT

Return Initialized() { return Fake().world() == nullptr ? kErrorUninitialized : kSuccess; }

Return NotPermitted() { return ::geteuid() == 0 ? kErrorNotSupported : kErrorNoPermission; }

bool IsHopper(const sim::GpuSpec& spec) {
  return spec.model.find("H100") != std::string::npos || spec.model.find("H200") != std::string::npos;
}

Return Zero(unsigned* value) {
  if (value == nullptr) return kErrorInvalidArgument;
  *value = 0;
  return kSuccess;
}

}  // namespace

// A device call the simulated GPU has no reading for: the handle checked,
// then NOT_SUPPORTED. It takes its handle first; what follows is not read.
#define FAKE_NOT_SUPPORTED(name)                       \
  NVML_EXPORT Return name(nvmlDevice_st* device) {     \
    Dev d = Open(device);                              \
    return d.r != kSuccess ? d.r : kErrorNotSupported; \
  }
// A device setting: the handle checked, then NotPermitted().
#define FAKE_SETTING(name)                         \
  NVML_EXPORT Return name(nvmlDevice_st* device) { \
    Dev d = Open(device);                          \
    return d.r != kSuccess ? d.r : NotPermitted(); \
  }
// A call on a vGPU instance or type, or a unit: there are none.
#define FAKE_NO_SUCH_HANDLE(name)                     \
  NVML_EXPORT Return name() {                         \
    Return r = Initialized();                         \
    return r != kSuccess ? r : kErrorInvalidArgument; \
  }
// A system-wide call about vGPU: not on this host.
#define FAKE_SYSTEM_NOT_SUPPORTED(name)            \
  NVML_EXPORT Return name() {                      \
    Return r = Initialized();                      \
    return r != kSuccess ? r : kErrorNotSupported; \
  }

FAKE_NOT_SUPPORTED(nvmlDeviceCcuGetStreamState)
FAKE_NOT_SUPPORTED(nvmlDeviceGetAPIRestriction)
FAKE_NOT_SUPPORTED(nvmlDeviceGetActiveVgpus)
FAKE_NOT_SUPPORTED(nvmlDeviceGetAdaptiveClockInfoStatus)
FAKE_NOT_SUPPORTED(nvmlDeviceGetAutoBoostedClocksEnabled)
FAKE_NOT_SUPPORTED(nvmlDeviceGetBridgeChipInfo)
FAKE_NOT_SUPPORTED(nvmlDeviceGetClkMonStatus)
FAKE_NOT_SUPPORTED(nvmlDeviceGetCreatableVgpus)
FAKE_NOT_SUPPORTED(nvmlDeviceGetDetailedEccErrors)
FAKE_NOT_SUPPORTED(nvmlDeviceGetDynamicPstatesInfo)
FAKE_NOT_SUPPORTED(nvmlDeviceGetFanControlPolicy_v2)
FAKE_NOT_SUPPORTED(nvmlDeviceGetGpcClkMinMaxVfOffset)
FAKE_NOT_SUPPORTED(nvmlDeviceGetGpcClkVfOffset)
FAKE_NOT_SUPPORTED(nvmlDeviceGetGpuFabricInfo)
FAKE_NOT_SUPPORTED(nvmlDeviceGetGpuOperationMode)
FAKE_NOT_SUPPORTED(nvmlDeviceGetGridLicensableFeatures_v4)
FAKE_NOT_SUPPORTED(nvmlDeviceGetGspFirmwareMode)
FAKE_NOT_SUPPORTED(nvmlDeviceGetGspFirmwareVersion)
FAKE_NOT_SUPPORTED(nvmlDeviceGetHostVgpuMode)
FAKE_NOT_SUPPORTED(nvmlDeviceGetIrqNum)
FAKE_NOT_SUPPORTED(nvmlDeviceGetMemClkMinMaxVfOffset)
FAKE_NOT_SUPPORTED(nvmlDeviceGetMemClkVfOffset)
FAKE_NOT_SUPPORTED(nvmlDeviceGetMemoryErrorCounter)
FAKE_NOT_SUPPORTED(nvmlDeviceGetMinMaxClockOfPState)
FAKE_NOT_SUPPORTED(nvmlDeviceGetMinMaxFanSpeed)
FAKE_NOT_SUPPORTED(nvmlDeviceGetNvLinkCapability)
FAKE_NOT_SUPPORTED(nvmlDeviceGetNvLinkErrorCounter)
FAKE_NOT_SUPPORTED(nvmlDeviceGetNvLinkRemoteDeviceType)
FAKE_NOT_SUPPORTED(nvmlDeviceGetNvLinkUtilizationControl)
FAKE_NOT_SUPPORTED(nvmlDeviceGetNvLinkUtilizationCounter)
FAKE_NOT_SUPPORTED(nvmlDeviceGetPgpuMetadataString)
FAKE_NOT_SUPPORTED(nvmlDeviceGetPowerSource)
FAKE_NOT_SUPPORTED(nvmlDeviceGetRowRemapperHistogram)
FAKE_NOT_SUPPORTED(nvmlDeviceGetSupportedVgpus)
FAKE_NOT_SUPPORTED(nvmlDeviceGetTargetFanSpeed)
FAKE_NOT_SUPPORTED(nvmlDeviceGetThermalSettings)
FAKE_NOT_SUPPORTED(nvmlDeviceGetVgpuCapabilities)
FAKE_NOT_SUPPORTED(nvmlDeviceGetVgpuMetadata)
FAKE_NOT_SUPPORTED(nvmlDeviceGetVgpuProcessUtilization)
FAKE_NOT_SUPPORTED(nvmlDeviceGetVgpuSchedulerCapabilities)
FAKE_NOT_SUPPORTED(nvmlDeviceGetVgpuSchedulerLog)
FAKE_NOT_SUPPORTED(nvmlDeviceGetVgpuSchedulerState)
FAKE_NOT_SUPPORTED(nvmlDeviceGetVgpuUtilization)
// The calling thread's CPU binding is left to the caller's own tools.
FAKE_NOT_SUPPORTED(nvmlDeviceSetCpuAffinity)
FAKE_NOT_SUPPORTED(nvmlDeviceClearCpuAffinity)

FAKE_SETTING(nvmlDeviceCcuSetStreamState)
FAKE_SETTING(nvmlDeviceClearAccountingPids)
FAKE_SETTING(nvmlDeviceClearEccErrorCounts)
FAKE_SETTING(nvmlDeviceClearFieldValues)
FAKE_SETTING(nvmlDeviceFreezeNvLinkUtilizationCounter)
FAKE_SETTING(nvmlDeviceResetApplicationsClocks)
FAKE_SETTING(nvmlDeviceResetGpuLockedClocks)
FAKE_SETTING(nvmlDeviceResetMemoryLockedClocks)
FAKE_SETTING(nvmlDeviceResetNvLinkErrorCounters)
FAKE_SETTING(nvmlDeviceResetNvLinkUtilizationCounter)
FAKE_SETTING(nvmlDeviceSetAPIRestriction)
FAKE_SETTING(nvmlDeviceSetAccountingMode)
FAKE_SETTING(nvmlDeviceSetApplicationsClocks)
FAKE_SETTING(nvmlDeviceSetAutoBoostedClocksEnabled)
FAKE_SETTING(nvmlDeviceSetComputeMode)
FAKE_SETTING(nvmlDeviceSetDefaultAutoBoostedClocksEnabled)
FAKE_SETTING(nvmlDeviceSetDefaultFanSpeed_v2)
FAKE_SETTING(nvmlDeviceSetDriverModel)
FAKE_SETTING(nvmlDeviceSetEccMode)
FAKE_SETTING(nvmlDeviceSetFanControlPolicy)
FAKE_SETTING(nvmlDeviceSetFanSpeed_v2)
FAKE_SETTING(nvmlDeviceSetGpcClkVfOffset)
FAKE_SETTING(nvmlDeviceSetGpuLockedClocks)
FAKE_SETTING(nvmlDeviceSetGpuOperationMode)
FAKE_SETTING(nvmlDeviceSetMemClkVfOffset)
FAKE_SETTING(nvmlDeviceSetMemoryLockedClocks)
FAKE_SETTING(nvmlDeviceSetMigMode)
FAKE_SETTING(nvmlDeviceSetNvLinkDeviceLowPowerThreshold)
FAKE_SETTING(nvmlDeviceSetNvLinkUtilizationControl)
FAKE_SETTING(nvmlDeviceSetPersistenceMode)
FAKE_SETTING(nvmlDeviceSetPowerManagementLimit)
FAKE_SETTING(nvmlDeviceSetTemperatureThreshold)
FAKE_SETTING(nvmlDeviceSetVirtualizationMode)

FAKE_NO_SUCH_HANDLE(nvmlVgpuInstanceClearAccountingPids)
FAKE_NO_SUCH_HANDLE(nvmlVgpuInstanceGetAccountingMode)
FAKE_NO_SUCH_HANDLE(nvmlVgpuInstanceGetAccountingPids)
FAKE_NO_SUCH_HANDLE(nvmlVgpuInstanceGetAccountingStats)
FAKE_NO_SUCH_HANDLE(nvmlVgpuInstanceGetEccMode)
FAKE_NO_SUCH_HANDLE(nvmlVgpuInstanceGetEncoderCapacity)
FAKE_NO_SUCH_HANDLE(nvmlVgpuInstanceGetEncoderSessions)
FAKE_NO_SUCH_HANDLE(nvmlVgpuInstanceGetEncoderStats)
FAKE_NO_SUCH_HANDLE(nvmlVgpuInstanceGetFBCSessions)
FAKE_NO_SUCH_HANDLE(nvmlVgpuInstanceGetFBCStats)
FAKE_NO_SUCH_HANDLE(nvmlVgpuInstanceGetFbUsage)
FAKE_NO_SUCH_HANDLE(nvmlVgpuInstanceGetFrameRateLimit)
FAKE_NO_SUCH_HANDLE(nvmlVgpuInstanceGetGpuInstanceId)
FAKE_NO_SUCH_HANDLE(nvmlVgpuInstanceGetGpuPciId)
FAKE_NO_SUCH_HANDLE(nvmlVgpuInstanceGetLicenseInfo_v2)
FAKE_NO_SUCH_HANDLE(nvmlVgpuInstanceGetLicenseStatus)
FAKE_NO_SUCH_HANDLE(nvmlVgpuInstanceGetMdevUUID)
FAKE_NO_SUCH_HANDLE(nvmlVgpuInstanceGetMetadata)
FAKE_NO_SUCH_HANDLE(nvmlVgpuInstanceGetType)
FAKE_NO_SUCH_HANDLE(nvmlVgpuInstanceGetUUID)
FAKE_NO_SUCH_HANDLE(nvmlVgpuInstanceGetVmDriverVersion)
FAKE_NO_SUCH_HANDLE(nvmlVgpuInstanceGetVmID)
FAKE_NO_SUCH_HANDLE(nvmlVgpuInstanceSetEncoderCapacity)
FAKE_NO_SUCH_HANDLE(nvmlVgpuTypeGetCapabilities)
FAKE_NO_SUCH_HANDLE(nvmlVgpuTypeGetClass)
FAKE_NO_SUCH_HANDLE(nvmlVgpuTypeGetDeviceID)
FAKE_NO_SUCH_HANDLE(nvmlVgpuTypeGetFrameRateLimit)
FAKE_NO_SUCH_HANDLE(nvmlVgpuTypeGetFramebufferSize)
FAKE_NO_SUCH_HANDLE(nvmlVgpuTypeGetGpuInstanceProfileId)
FAKE_NO_SUCH_HANDLE(nvmlVgpuTypeGetLicense)
FAKE_NO_SUCH_HANDLE(nvmlVgpuTypeGetMaxInstances)
FAKE_NO_SUCH_HANDLE(nvmlVgpuTypeGetMaxInstancesPerVm)
FAKE_NO_SUCH_HANDLE(nvmlVgpuTypeGetName)
FAKE_NO_SUCH_HANDLE(nvmlVgpuTypeGetNumDisplayHeads)
FAKE_NO_SUCH_HANDLE(nvmlVgpuTypeGetResolution)
FAKE_NO_SUCH_HANDLE(nvmlUnitGetHandleByIndex)
FAKE_NO_SUCH_HANDLE(nvmlUnitGetDevices)
FAKE_NO_SUCH_HANDLE(nvmlUnitGetFanSpeedInfo)
FAKE_NO_SUCH_HANDLE(nvmlUnitGetLedState)
FAKE_NO_SUCH_HANDLE(nvmlUnitGetPsuInfo)
FAKE_NO_SUCH_HANDLE(nvmlUnitGetTemperature)
FAKE_NO_SUCH_HANDLE(nvmlUnitGetUnitInfo)
FAKE_NO_SUCH_HANDLE(nvmlUnitSetLedState)
FAKE_NO_SUCH_HANDLE(nvmlGetExcludedDeviceInfoByIndex)

FAKE_SYSTEM_NOT_SUPPORTED(nvmlGetVgpuCompatibility)
FAKE_SYSTEM_NOT_SUPPORTED(nvmlGetVgpuDriverCapabilities)
FAKE_SYSTEM_NOT_SUPPORTED(nvmlGetVgpuVersion)
FAKE_SYSTEM_NOT_SUPPORTED(nvmlSetVgpuVersion)
FAKE_SYSTEM_NOT_SUPPORTED(nvmlGetFunctionPointer)

// --- counts that are zero here --------------------------------------------

NVML_EXPORT Return nvmlUnitGetCount(unsigned* count) {
  Return r = Initialized();
  return r != kSuccess ? r : Zero(count);
}

NVML_EXPORT Return nvmlGetExcludedDeviceCount(unsigned* count) {
  Return r = Initialized();
  return r != kSuccess ? r : Zero(count);
}

NVML_EXPORT Return nvmlSystemGetHicVersion(unsigned* count, void* hics) {
  (void)hics;
  Return r = Initialized();
  return r != kSuccess ? r : Zero(count);
}

NVML_EXPORT Return nvmlDeviceGetMPSComputeRunningProcesses_v3(nvmlDevice_st* device, unsigned* count,
                                                              void* infos) {
  (void)infos;
  Dev d = Open(device);
  return d.r != kSuccess ? d.r : Zero(count);
}

NVML_EXPORT Return nvmlDeviceGetEncoderSessions(nvmlDevice_st* device, unsigned* count, void* sessions) {
  (void)sessions;
  Dev d = Open(device);
  return d.r != kSuccess ? d.r : Zero(count);
}

NVML_EXPORT Return nvmlDeviceGetFBCSessions(nvmlDevice_st* device, unsigned* count, void* sessions) {
  (void)sessions;
  Dev d = Open(device);
  return d.r != kSuccess ? d.r : Zero(count);
}

NVML_EXPORT Return nvmlDeviceGetEncoderStats(nvmlDevice_st* device, unsigned* sessions, unsigned* fps,
                                             unsigned* latency_us) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (sessions == nullptr || fps == nullptr || latency_us == nullptr) return kErrorInvalidArgument;
  *sessions = *fps = *latency_us = 0;
  return kSuccess;
}

NVML_EXPORT Return nvmlDeviceGetFBCStats(nvmlDevice_st* device,
                                         unsigned* stats /* sessions, fps, latency */) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (stats == nullptr) return kErrorInvalidArgument;
  stats[0] = stats[1] = stats[2] = 0;
  return kSuccess;
}

// Encoder types 0 H.264, 1 HEVC, 2 AV1: all of it free.
NVML_EXPORT Return nvmlDeviceGetEncoderCapacity(nvmlDevice_st* device, int type, unsigned* capacity) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (capacity == nullptr || type < 0 || type > 2) return kErrorInvalidArgument;
  *capacity = 100;
  return kSuccess;
}

// --- small readings of the simulated GPU -----------------------------------

NVML_EXPORT Return nvmlDeviceGetPowerManagementLimitConstraints(nvmlDevice_st* device, unsigned* min_mw,
                                                                unsigned* max_mw) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (min_mw == nullptr || max_mw == nullptr) return kErrorInvalidArgument;
  *max_mw = static_cast<unsigned>(d.spec->power_max_watts * 1000);
  *min_mw = static_cast<unsigned>(d.spec->power_max_watts * 1000 * 2 / 7);  // 200 W of an H100's 700 W
  return kSuccess;
}

NVML_EXPORT Return nvmlDeviceGetPowerManagementMode(nvmlDevice_st* device, int* mode) {
  return AnswerOne(device, mode, [](const Dev&) { return 1; });
}

NVML_EXPORT Return nvmlDeviceGetBusType(nvmlDevice_st* device, int* type) {
  return AnswerOne(device, type, [](const Dev&) { return 2; });  // NVML_BUS_TYPE_PCIE
}

// nvmlPcieLinkMaxSpeed: 1 2.5 GT/s (gen 1) ... 5 32 GT/s (gen 5).
NVML_EXPORT Return nvmlDeviceGetPcieLinkMaxSpeed(nvmlDevice_st* device, unsigned* speed) {
  return AnswerOne(device, speed,
                   [](const Dev& d) { return static_cast<unsigned>(d.spec->pcie_generation); });
}

// The link's speed now, in Mbps per lane (32000 at gen 5).
NVML_EXPORT Return nvmlDeviceGetPcieSpeed(nvmlDevice_st* device, unsigned* mbps) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (mbps == nullptr) return kErrorInvalidArgument;
  static constexpr unsigned kByGeneration[] = {0, 2500, 5000, 8000, 16000, 32000, 64000};
  int gen = std::min(std::max(d.spec->pcie_generation, 0), 6);
  *mbps = kByGeneration[gen];
  return kSuccess;
}

NVML_EXPORT Return nvmlDeviceGetMemoryBusWidth(nvmlDevice_st* device, unsigned* bits) {
  return AnswerOne(device, bits, [](const Dev&) { return 5120; });  // HBM2e and HBM3: five 1024-bit stacks
}

NVML_EXPORT Return nvmlDeviceGetNumGpuCores(nvmlDevice_st* device, unsigned* cores) {
  return AnswerOne(device, cores, [](const Dev& d) { return IsHopper(*d.spec) ? 16896 : 6912; });
}

NVML_EXPORT Return nvmlDeviceGetNvLinkVersion(nvmlDevice_st* device, unsigned link, unsigned* version) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (version == nullptr || link >= static_cast<unsigned>(sim::NvlinkLinkCount(*d.spec))) {
    return kErrorInvalidArgument;
  }
  *version = IsHopper(*d.spec) ? 4 : 3;
  return kSuccess;
}

// Clock types 0 graphics, 1 SM, 2 memory, 3 video: the maximum, which is
// what the applications clocks are at by default.
NVML_EXPORT Return nvmlDeviceGetMaxCustomerBoostClock(nvmlDevice_st* device, int type, unsigned* mhz) {
  return nvmlDeviceGetMaxClockInfo(device, type, mhz);
}

NVML_EXPORT Return nvmlDeviceGetApplicationsClock(nvmlDevice_st* device, int type, unsigned* mhz) {
  return nvmlDeviceGetMaxClockInfo(device, type, mhz);
}

NVML_EXPORT Return nvmlDeviceGetDefaultApplicationsClock(nvmlDevice_st* device, int type, unsigned* mhz) {
  return nvmlDeviceGetMaxClockInfo(device, type, mhz);
}

NVML_EXPORT Return nvmlDeviceGetDefaultEccMode(nvmlDevice_st* device, int* mode) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (mode == nullptr) return kErrorInvalidArgument;
  if (!d.spec->has_ecc) return kErrorNotSupported;
  *mode = 1;
  return kSuccess;
}

// The states the simulated GPU is ever in: P0 (a context on it) and P8
// (none), in order, the rest NVML_PSTATE_UNKNOWN.
NVML_EXPORT Return nvmlDeviceGetSupportedPerformanceStates(nvmlDevice_st* device, int* pstates,
                                                           unsigned size) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (pstates == nullptr) return kErrorInvalidArgument;
  if (size < 2) return kErrorInsufficientSize;
  pstates[0] = 0;
  pstates[1] = 8;
  for (unsigned i = 2; i < size && i < 16; ++i) pstates[i] = 32;  // NVML_PSTATE_UNKNOWN
  return kSuccess;
}

// By clock ID (nvml.h, nvmlClockId_t): the current clock, as
// nvmlDeviceGetClockInfo answers it; the applications clocks' target and
// default and the customer boost maximum, all at the maximum here, as
// nvmlDeviceGetApplicationsClock answers.
NVML_EXPORT Return nvmlDeviceGetClock(nvmlDevice_st* device, int type, int id, unsigned* mhz) {
  if (id == 0) return nvmlDeviceGetClockInfo(device, type, mhz);
  if (id >= 1 && id <= 3) return nvmlDeviceGetMaxClockInfo(device, type, mhz);
  Dev d = Open(device);
  return d.r != kSuccess ? d.r : kErrorInvalidArgument;
}

// Scope 0 (NUMA node) and 1 (socket) are the same here.
NVML_EXPORT Return nvmlDeviceGetCpuAffinityWithinScope(nvmlDevice_st* device, unsigned size,
                                                       unsigned long* set, int scope) {
  if (scope != 0 && scope != 1) return Open(device).r != kSuccess ? Open(device).r : kErrorInvalidArgument;
  return nvmlDeviceGetCpuAffinity(device, size, set);
}

NVML_EXPORT Return nvmlDeviceGetMemoryAffinity(nvmlDevice_st* device, unsigned size, unsigned long* set,
                                               int scope) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (set == nullptr || size == 0 || (scope != 0 && scope != 1)) return kErrorInvalidArgument;
  unsigned node = static_cast<unsigned>(std::max(d.spec->numa_node, 0));
  if (node / 64 >= size) return kErrorInsufficientSize;
  std::memset(set, 0, size * sizeof(unsigned long));
  set[node / 64] = 1ul << (node % 64);
  return kSuccess;
}

// --- by serial, and the PCI-side calls ------------------------------------

NVML_EXPORT Return nvmlDeviceGetHandleBySerial(const char* serial, nvmlDevice_st** device) {
  sim::World* w = Fake().world();
  if (w == nullptr) return kErrorUninitialized;
  if (serial == nullptr || device == nullptr) return kErrorInvalidArgument;
  for (const sim::GpuSpec& g : w->scenario().gpus) {
    char own[64] = {};
    if (nvmlDeviceGetSerial(Fake().Handle(g.index), own, sizeof own) == kSuccess &&
        std::strcmp(own, serial) == 0) {
      *device = Fake().Handle(g.index);
      return kSuccess;
    }
  }
  return kErrorNotFound;
}

namespace {

// The GPU at `pci`'s bus id, or -1.
int GpuAt(const gpu::nvml::PciInfo* pci) {
  sim::World* w = Fake().world();
  if (w == nullptr || pci == nullptr) return -1;
  for (const sim::GpuSpec& g : w->scenario().gpus) {
    gpu::nvml::PciInfo own{};
    if (nvmlDeviceGetPciInfo_v3(Fake().Handle(g.index), &own) == kSuccess &&
        strncasecmp(own.busId, pci->busId, sizeof own.busId) == 0) {
      return g.index;
    }
  }
  return -1;
}

}  // namespace

NVML_EXPORT Return nvmlDeviceQueryDrainState(const gpu::nvml::PciInfo* pci, int* state) {
  if (Initialized() != kSuccess) return kErrorUninitialized;
  if (pci == nullptr || state == nullptr) return kErrorInvalidArgument;
  if (GpuAt(pci) < 0) return kErrorNotFound;
  *state = 0;  // NVML_FEATURE_DISABLED: not draining
  return kSuccess;
}

NVML_EXPORT Return nvmlDeviceModifyDrainState(const gpu::nvml::PciInfo* pci, int state) {
  if (Initialized() != kSuccess) return kErrorUninitialized;
  if (pci == nullptr || (state != 0 && state != 1)) return kErrorInvalidArgument;
  if (GpuAt(pci) < 0) return kErrorNotFound;
  return NotPermitted();
}

NVML_EXPORT Return nvmlDeviceRemoveGpu(const gpu::nvml::PciInfo* pci) {
  if (Initialized() != kSuccess) return kErrorUninitialized;
  if (pci == nullptr) return kErrorInvalidArgument;
  if (GpuAt(pci) < 0) return kErrorNotFound;
  return NotPermitted();
}

NVML_EXPORT Return nvmlDeviceRemoveGpu_v2(const gpu::nvml::PciInfo* pci, int gpu_state, int link_state) {
  (void)gpu_state;
  (void)link_state;
  return nvmlDeviceRemoveGpu(pci);
}

// Finds GPUs that appeared since the driver loaded: none do here.
NVML_EXPORT Return nvmlDeviceDiscoverGpus(gpu::nvml::PciInfo* pci) {
  if (Initialized() != kSuccess) return kErrorUninitialized;
  if (pci == nullptr) return kErrorInvalidArgument;
  return NotPermitted();
}
