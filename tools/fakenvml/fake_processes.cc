// SPDX-License-Identifier: Apache-2.0
//
// The fake libnvidia-ml (README.md here says what it is): processes.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <vector>

#include "common/cpu_list.h"
#include "fake_device.h"

namespace {
using namespace tarmac;            // NOLINT: one ABI shim.
using namespace tarmac::fakenvml;  // NOLINT
}  // namespace

namespace {

// Writes process entries at `stride` with the size protocol.
// On a MIG device handle, the processes of that instance only; on a GPU,
// all (each with its instance's ids under MIG).
Return ProcessList(nvmlDevice_st* device, unsigned* count, void* infos, size_t stride, bool is_graphics) {
  int only_instance = -1;
  Dev d;
  if (Fake().IsMigHandle(device)) {
    MigDev md = OpenMig(device);
    d = md.d;
    if (d.r == kSuccess) only_instance = md.m->spec->gpu_instance_id;
  } else {
    d = Open(device);
  }
  if (d.r != kSuccess) return d.r;
  if (count == nullptr) return kErrorInvalidArgument;
  std::vector<const sim::ProcessState*> listed;
  for (const sim::ProcessState& p : d.g->processes) {
    if (only_instance < 0 || p.gpu_instance_id == only_instance) listed.push_back(&p);
  }
  // The simulated world runs compute contexts only.
  size_t n = is_graphics ? 0 : listed.size();
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
    const sim::ProcessState& p = *listed[i];
    unsigned char* entry = out + i * stride;
    std::memset(entry, 0, stride);
    unsigned pid = static_cast<unsigned>(p.pid);
    unsigned long long used = static_cast<unsigned long long>(p.used_memory_bytes);
    std::memcpy(entry, &pid, sizeof pid);
    std::memcpy(entry + 8, &used, sizeof used);
    if (stride >= 24) {
      unsigned none = kValueNotAvailableUint;  // Not a MIG instance.
      unsigned gi = p.gpu_instance_id < 0 ? none : static_cast<unsigned>(p.gpu_instance_id);
      unsigned ci = p.compute_instance_id < 0 ? none : static_cast<unsigned>(p.compute_instance_id);
      std::memcpy(entry + 16, &gi, sizeof gi);
      std::memcpy(entry + 20, &ci, sizeof ci);
    }
  }
  *count = static_cast<unsigned>(n);
  return kSuccess;
}

}  // namespace

#ifndef TARMAC_FAKE_LEGACY
NVML_EXPORT Return nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_st* device, unsigned* count,
                                                           void* infos) {
  return ProcessList(device, count, infos, sizeof(ProcessInfoV2), false);
}
NVML_EXPORT Return nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_st* device, unsigned* count,
                                                            void* infos) {
  return ProcessList(device, count, infos, sizeof(ProcessInfoV2), true);
}
NVML_EXPORT Return nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_st* device, unsigned* count,
                                                           void* infos) {
  return ProcessList(device, count, infos, sizeof(ProcessInfoV2), false);
}
NVML_EXPORT Return nvmlDeviceGetGraphicsRunningProcesses_v2(nvmlDevice_st* device, unsigned* count,
                                                            void* infos) {
  return ProcessList(device, count, infos, sizeof(ProcessInfoV2), true);
}
#endif
NVML_EXPORT Return nvmlDeviceGetComputeRunningProcesses(nvmlDevice_st* device, unsigned* count, void* infos) {
  return ProcessList(device, count, infos, sizeof(ProcessInfoV1), false);
}
NVML_EXPORT Return nvmlDeviceGetGraphicsRunningProcesses(nvmlDevice_st* device, unsigned* count,
                                                         void* infos) {
  return ProcessList(device, count, infos, sizeof(ProcessInfoV1), true);
}

#ifndef TARMAC_FAKE_LEGACY
// nvmlProcessDetailList_v1_t and its 32-byte entries (the usedGpuCcProtectedMemory
// field last, 0 here: no confidential computing).
struct ProcessDetailList {
  unsigned version;
  unsigned mode;  // 0 compute, 1 graphics, 2 MPS, 3 all.
  unsigned numProcArrayEntries;
  void* procArray;
};
static_assert(sizeof(ProcessDetailList) == 24);
constexpr unsigned kProcessDetailListV1 = 0x01000018;
constexpr size_t kProcessDetailSize = 32;

NVML_EXPORT Return nvmlDeviceGetRunningProcessDetailList(nvmlDevice_st* device, ProcessDetailList* list) {
  if (list == nullptr) return kErrorInvalidArgument;
  if (list->version != kProcessDetailListV1) return kErrorArgumentVersionMismatch;
  if (list->mode > 3) return kErrorInvalidArgument;
  if (list->mode == 2) {  // No MPS server in the simulated world.
    Dev d = Open(device);
    if (d.r != kSuccess) return d.r;
    list->numProcArrayEntries = 0;
    return kSuccess;
  }
  return ProcessList(device, &list->numProcArrayEntries, list->procArray, kProcessDetailSize,
                     list->mode == 1);
}

// Confidential computing is off on the simulated GPUs: NOT_SUPPORTED, as a
// driver answers for a GPU without it. Exported beside
// nvmlDeviceGetRunningProcessDetailList, as real drivers do (a client that
// finds this one without the other takes 32-byte process entries).
NVML_EXPORT Return nvmlDeviceGetConfComputeMemSizeInfo(nvmlDevice_st* device, void* info) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (info == nullptr) return kErrorInvalidArgument;
  return kErrorNotSupported;
}
#endif

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
