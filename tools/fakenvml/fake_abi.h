// SPDX-License-Identifier: Apache-2.0
//
// The public NVML structs the fake answers with that tarmac itself never
// reads (so src/gpu/nvml_api.h does not declare them), laid out as the
// public header (nvml.h, R550) declares them. Internal to the fake.
#pragma once

#include "fake_state.h"

namespace tarmac::fakenvml::abi {

struct Bar1Memory {
  unsigned long long bar1Total;
  unsigned long long bar1Free;
  unsigned long long bar1Used;
};

struct AccountingStats {
  unsigned int gpuUtilization;
  unsigned int memoryUtilization;
  unsigned long long maxMemoryUsage;
  unsigned long long time;       // ms
  unsigned long long startTime;  // us since the epoch
  unsigned int isRunning;
  unsigned int reserved[5];
};

struct ViolationTime {
  unsigned long long referenceTime;  // us since the epoch
  unsigned long long violationTime;  // ns
};

struct Placement {  // nvmlGpuInstancePlacement_t, nvmlComputeInstancePlacement_t
  unsigned int start;
  unsigned int size;
};

struct GpuInstanceInfo {
  nvmlDevice_st* device;
  unsigned int id;
  unsigned int profileId;
  Placement placement;
};

struct DeviceAttributes {  // nvmlDeviceAttributes_t
  unsigned int multiprocessorCount;
  unsigned int sharedCopyEngineCount;
  unsigned int sharedDecoderCount;
  unsigned int sharedEncoderCount;
  unsigned int sharedJpegCount;
  unsigned int sharedOfaCount;
  unsigned int gpuInstanceSliceCount;
  unsigned int computeInstanceSliceCount;
  unsigned long long memorySizeMB;
};

struct GpuInstanceProfileInfo {
  unsigned int id;
  unsigned int isP2pSupported;
  unsigned int sliceCount;
  unsigned int instanceCount;
  unsigned int multiprocessorCount;
  unsigned int copyEngineCount;
  unsigned int decoderCount;
  unsigned int encoderCount;
  unsigned int jpegCount;
  unsigned int ofaCount;
  unsigned long long memorySizeMB;
};

struct GpuInstanceProfileInfoV2 {
  unsigned int version;
  unsigned int id;
  unsigned int isP2pSupported;
  unsigned int sliceCount;
  unsigned int instanceCount;
  unsigned int multiprocessorCount;
  unsigned int copyEngineCount;
  unsigned int decoderCount;
  unsigned int encoderCount;
  unsigned int jpegCount;
  unsigned int ofaCount;
  unsigned long long memorySizeMB;
  char name[96];
};
// NVML_STRUCT_VERSION(GpuInstanceProfileInfo, 2)
inline constexpr unsigned kGpuInstanceProfileInfoV2 = sizeof(GpuInstanceProfileInfoV2) | (2u << 24);

struct ComputeInstanceInfo {
  nvmlDevice_st* device;
  nvmlGpuInstance_st* gpuInstance;
  unsigned int id;
  unsigned int profileId;
  Placement placement;
};

struct ComputeInstanceProfileInfo {
  unsigned int id;
  unsigned int sliceCount;
  unsigned int instanceCount;
  unsigned int multiprocessorCount;
  unsigned int sharedCopyEngineCount;
  unsigned int sharedDecoderCount;
  unsigned int sharedEncoderCount;
  unsigned int sharedJpegCount;
  unsigned int sharedOfaCount;
};

struct ComputeInstanceProfileInfoV2 {
  unsigned int version;
  unsigned int id;
  unsigned int sliceCount;
  unsigned int instanceCount;
  unsigned int multiprocessorCount;
  unsigned int sharedCopyEngineCount;
  unsigned int sharedDecoderCount;
  unsigned int sharedEncoderCount;
  unsigned int sharedJpegCount;
  unsigned int sharedOfaCount;
  char name[96];
};
inline constexpr unsigned kComputeInstanceProfileInfoV2 = sizeof(ComputeInstanceProfileInfoV2) | (2u << 24);

// nvmlGpuP2PStatus_t
inline constexpr int kP2pStatusOk = 0;
inline constexpr int kP2pStatusChipsetNotSupported = 1;
// nvmlGpuP2PCapsIndex_t: read, write, NVLink, atomics, prop (deprecated).
inline constexpr int kP2pCapsNvlink = 2;
inline constexpr int kP2pCapsLast = 4;

}  // namespace tarmac::fakenvml::abi
