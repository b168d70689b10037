// SPDX-License-Identifier: Apache-2.0
//
// The fake libnvidia-ml (README.md here says what it is): enumeration and identity.
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
  // "The UUID of the target GPU or MIG instance" (NVML API reference,
  // nvmlDeviceGetHandleByUUID): a MIG UUID of the layout now is its MIG
  // device handle.
  for (const sim::GpuSpec& g : w->scenario().gpus) {
    if (!g.is_mig_enabled) continue;
    Dev d = Open(Fake().Handle(g.index));
    if (d.r != kSuccess) continue;
    for (size_t slot = 0; slot < d.g->mig_instances.size(); ++slot) {
      if (d.g->mig_instances[slot].spec->uuid == uuid) {
        *device = Fake().MigHandle(g.index, static_cast<int>(slot));
        return kSuccess;
      }
    }
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

// On a MIG device handle: its index among its GPU's MIG devices, which
// nvmlDeviceGetMigDeviceHandleByIndex takes back.
NVML_EXPORT Return nvmlDeviceGetIndex(nvmlDevice_st* device, unsigned* index) {
  if (Fake().IsMigHandle(device)) {
    int gpu = 0, slot = 0;
    std::shared_ptr<const sim::WorldState> state;
    Return r = Fake().ResolveMig(device, &gpu, &slot, &state);
    if (r != kSuccess) return r;
    if (index == nullptr) return kErrorInvalidArgument;
    *index = static_cast<unsigned>(slot);
    return kSuccess;
  }
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
  if (Fake().IsMigHandle(device)) {  // "NVIDIA H100 80GB HBM3 MIG 1g.10gb", as the driver names it.
    MigDev md = OpenMig(device);
    if (md.d.r != kSuccess) return md.d.r;
    return CopyString(md.d.spec->model + " MIG " + md.m->spec->profile, name, length);
  }
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  return CopyString(d.spec->model, name, length);
}

NVML_EXPORT Return nvmlDeviceGetUUID(nvmlDevice_st* device, char* uuid, unsigned length) {
  if (Fake().IsMigHandle(device)) {
    MigDev md = OpenMig(device);
    if (md.d.r != kSuccess) return md.d.r;
    return CopyString(md.m->spec->uuid, uuid, length);
  }
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
