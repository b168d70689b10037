// SPDX-License-Identifier: Apache-2.0
//
// The fake libnvidia-ml (README.md here says what it is): MIG devices. A GPU
// in MIG mode hands out one MIG device handle per instance of its layout
// (the scenario's, or a mig_reconfigure fault's), in layout order; a slot
// past the layout is NOT_FOUND, as an empty slot is on a real GPU.
#include <cstring>

#include "fake_abi.h"
#include "fake_device.h"

namespace {
using namespace tarmac;            // NOLINT: one ABI shim.
using namespace tarmac::fakenvml;  // NOLINT
}  // namespace

NVML_EXPORT Return nvmlDeviceIsMigDeviceHandle(nvmlDevice_st* device, unsigned* is_mig_device) {
  if (is_mig_device == nullptr) return kErrorInvalidArgument;
  if (Fake().IsMigHandle(device)) {
    MigDev md = OpenMig(device);
    if (md.d.r != kSuccess) return md.d.r;
    *is_mig_device = 1;
    return kSuccess;
  }
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  *is_mig_device = 0;
  return kSuccess;
}

// Seven instances on the MIG-capable data-center GPUs (A100, H100, H200).
NVML_EXPORT Return nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_st* device, unsigned* count) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (count == nullptr) return kErrorInvalidArgument;
  const std::string& m = d.spec->model;
  if (m.find("A100") == std::string::npos && m.find("H100") == std::string::npos &&
      m.find("H200") == std::string::npos && m.find("A30") == std::string::npos) {
    return kErrorNotSupported;
  }
  *count = FakeState::kMaxMigSlots;
  return kSuccess;
}

NVML_EXPORT Return nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_st* device, unsigned index,
                                                       nvmlDevice_st** mig_device) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (mig_device == nullptr || index >= static_cast<unsigned>(FakeState::kMaxMigSlots))
    return kErrorInvalidArgument;
  if (!d.spec->is_mig_enabled) return kErrorNotSupported;
  if (index >= d.g->mig_instances.size()) return kErrorNotFound;
  *mig_device = Fake().MigHandle(d.index, static_cast<int>(index));
  return kSuccess;
}

NVML_EXPORT Return nvmlDeviceGetDeviceHandleFromMigDeviceHandle(nvmlDevice_st* mig_device,
                                                                nvmlDevice_st** device) {
  if (device == nullptr) return kErrorInvalidArgument;
  MigDev md = OpenMig(mig_device);
  if (md.d.r != kSuccess) return md.d.r;
  *device = Fake().Handle(md.d.index);
  return kSuccess;
}

NVML_EXPORT Return nvmlDeviceGetGpuInstanceId(nvmlDevice_st* device, unsigned* id) {
  if (id == nullptr) return kErrorInvalidArgument;
  MigDev md = OpenMig(device);
  if (md.d.r != kSuccess) return md.d.r;
  *id = static_cast<unsigned>(md.m->spec->gpu_instance_id);
  return kSuccess;
}

NVML_EXPORT Return nvmlDeviceGetComputeInstanceId(nvmlDevice_st* device, unsigned* id) {
  if (id == nullptr) return kErrorInvalidArgument;
  MigDev md = OpenMig(device);
  if (md.d.r != kSuccess) return md.d.r;
  *id = static_cast<unsigned>(md.m->spec->compute_instance_id);
  return kSuccess;
}

// "Currently only supports MIG device handles" (NVML API reference,
// nvmlDeviceGetAttributes_v2): a GPU's handle is NOT_SUPPORTED; a MIG
// device's answers its slices, SMs, engines and memory, as its GPU
// instance profile says.
NVML_EXPORT Return nvmlDeviceGetAttributes_v2(nvmlDevice_st* device, abi::DeviceAttributes* attributes) {
  if (!Fake().IsMigHandle(device)) {
    Dev d = Open(device);
    return d.r != kSuccess ? d.r : kErrorNotSupported;
  }
  MigDev md = OpenMig(device);
  if (md.d.r != kSuccess) return md.d.r;
  if (attributes == nullptr) return kErrorInvalidArgument;
  const int slices = md.m->spec->compute_slices;
  std::memset(attributes, 0, sizeof *attributes);
  attributes->multiprocessorCount = MigSms(*md.d.spec, slices);
  attributes->sharedCopyEngineCount = static_cast<unsigned>(slices);
  attributes->sharedDecoderCount = static_cast<unsigned>(slices);
  attributes->sharedJpegCount = static_cast<unsigned>(slices);
  attributes->sharedOfaCount = slices == nvidia::kMigComputeSlices ? 1 : 0;
  attributes->gpuInstanceSliceCount = static_cast<unsigned>(slices);
  attributes->computeInstanceSliceCount = static_cast<unsigned>(slices);
  attributes->memorySizeMB = static_cast<unsigned long long>(md.m->spec->memory_total_bytes) >> 20;
  return kSuccess;
}
