// SPDX-License-Identifier: Apache-2.0
//
// NvmlBackend's process lists: compute and graphics processes with the
// size protocol (the list may grow between calls), and per-process SM use.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "gpu/nvml_backend.h"
#include "gpu/nvml_text.h"

namespace tarmac::gpu {

using nvml::Return;
using nvml_text::CString;

namespace {

constexpr int kMaxListAttempts = 5;
}  // namespace

bool NvmlBackend::ReadProcessList(DeviceState& d, int index, bool is_graphics,
                                  std::vector<node::GpuProcess>* out) {
  const nvml::Api& api = library_->api();
  using ListFn = Return (*)(nvml::Device, unsigned*, void*);
  ListFn fn = nullptr;
  const char* call = nullptr;
  size_t stride = sizeof(nvml::ProcessInfoV2);
  ListFn v3 = is_graphics ? api.DeviceGetGraphicsRunningProcessesV3 : api.DeviceGetComputeRunningProcessesV3;
  ListFn v2 = is_graphics ? api.DeviceGetGraphicsRunningProcessesV2 : api.DeviceGetComputeRunningProcessesV2;
  ListFn v1 = is_graphics ? api.DeviceGetGraphicsRunningProcesses : api.DeviceGetComputeRunningProcesses;
  if (v3 != nullptr) {
    fn = v3;
    call =
        is_graphics ? "nvmlDeviceGetGraphicsRunningProcesses_v3" : "nvmlDeviceGetComputeRunningProcesses_v3";
    // Drivers 535.43..535.86 wrote 32-byte entries from _v3; they are the
    // ones exporting ConfComputeMemSizeInfo without RunningProcessDetailList.
    if (api.DeviceGetConfComputeMemSizeInfo != nullptr && api.DeviceGetRunningProcessDetailList == nullptr) {
      stride = nvml::kProcessInfoCcStride;
    }
  } else if (v2 != nullptr) {
    fn = v2;
    call =
        is_graphics ? "nvmlDeviceGetGraphicsRunningProcesses_v2" : "nvmlDeviceGetComputeRunningProcesses_v2";
  } else if (v1 != nullptr) {
    fn = v1;
    call = is_graphics ? "nvmlDeviceGetGraphicsRunningProcesses" : "nvmlDeviceGetComputeRunningProcesses";
    stride = sizeof(nvml::ProcessInfoV1);
  }
  NvmlField field = is_graphics ? NvmlField::kGraphicsProcesses : NvmlField::kComputeProcesses;
  if (fn == nullptr || !Supported(d, field)) return false;

  // Size protocol: ask with count 0; INSUFFICIENT_SIZE gives the count;
  // retry with headroom, as processes may start between the calls.
  unsigned count = 0;
  Return r = fn(d.handle, &count, nullptr);
  if (r == nvml::kSuccess) return true;  // No processes.
  std::vector<unsigned char> buffer;
  for (int attempt = 0; attempt < kMaxListAttempts && r == nvml::kErrorInsufficientSize; ++attempt) {
    count = count * 2 + 5;
    buffer.assign(static_cast<size_t>(count) * stride, 0);
    r = fn(d.handle, &count, buffer.data());
  }
  if (!Check(d, index, field, call, r)) return false;
  for (unsigned i = 0; i < count; ++i) {
    const unsigned char* entry = buffer.data() + static_cast<size_t>(i) * stride;
    unsigned pid = 0;
    unsigned long long used = 0;
    std::memcpy(&pid, entry, sizeof pid);
    std::memcpy(&used, entry + 8, sizeof used);
    node::GpuProcess p;
    p.pid = pid;
    p.type = is_graphics ? node::ProcessType::kGraphics : node::ProcessType::kCompute;
    if (used != nvml::kValueNotAvailableUll) p.used_memory_bytes = static_cast<int64_t>(used);
    if (stride >= sizeof(nvml::ProcessInfoV2)) {  // The MIG instance, 0xFFFFFFFF when none.
      unsigned gi = 0;
      unsigned ci = 0;
      std::memcpy(&gi, entry + 16, sizeof gi);
      std::memcpy(&ci, entry + 20, sizeof ci);
      if (gi != nvml::kValueNotAvailableUint) p.gpu_instance_id = static_cast<int>(gi);
      if (ci != nvml::kValueNotAvailableUint) p.compute_instance_id = static_cast<int>(ci);
    }
    out->push_back(p);
  }
  return true;
}

void NvmlBackend::ReadProcesses(DeviceState& d, int index, node::GpuSample* s) {
  std::vector<node::GpuProcess> compute;
  std::vector<node::GpuProcess> graphics;
  bool has_compute = ReadProcessList(d, index, false, &compute);
  bool has_graphics = ReadProcessList(d, index, true, &graphics);
  if (d.health != node::GpuHealth::kOk) return;
  s->has_processes = has_compute || has_graphics;
  // Merge by PID: a process with both contexts appears once.
  s->processes = std::move(compute);
  for (const node::GpuProcess& g : graphics) {
    bool merged = false;
    for (node::GpuProcess& p : s->processes) {
      if (p.pid != g.pid) continue;
      p.type = node::ProcessType::kComputeAndGraphics;
      if (g.used_memory_bytes && (!p.used_memory_bytes || *g.used_memory_bytes > *p.used_memory_bytes)) {
        p.used_memory_bytes = g.used_memory_bytes;
      }
      merged = true;
    }
    if (!merged) s->processes.push_back(g);
  }
  std::sort(s->processes.begin(), s->processes.end(),
            [](const node::GpuProcess& a, const node::GpuProcess& b) { return a.pid < b.pid; });

  const nvml::Api& api = library_->api();
  if (api.DeviceGetProcessUtilization == nullptr || !Supported(d, NvmlField::kProcessUtilization) ||
      s->processes.empty()) {
    return;
  }
  // Ask only for samples newer than the last seen one; the first time, for
  // the last second (0 would return stale averages and dead PIDs).
  unsigned long long now_us = static_cast<unsigned long long>(
      std::chrono::duration_cast<std::chrono::microseconds>(s->taken_at.time_since_epoch()).count());
  unsigned long long last_seen = d.last_process_sample_us != 0 ? d.last_process_sample_us : now_us - 1000000;
  unsigned count = 0;
  Return r = api.DeviceGetProcessUtilization(d.handle, nullptr, &count, last_seen);
  std::vector<nvml::ProcessUtilizationSample> samples;
  if (r == nvml::kErrorInsufficientSize) {
    samples.resize(count + 5);
    count = static_cast<unsigned>(samples.size());
    r = api.DeviceGetProcessUtilization(d.handle, samples.data(), &count, last_seen);
  }
  // NOT_FOUND means no new samples: the processes did not compute.
  if (r != nvml::kErrorNotFound && r != nvml::kSuccess) {
    Check(d, index, NvmlField::kProcessUtilization, "nvmlDeviceGetProcessUtilization", r);
    return;
  }
  if (r == nvml::kSuccess) samples.resize(std::min<size_t>(count, samples.size()));
  if (r == nvml::kErrorNotFound) samples.clear();
  for (node::GpuProcess& p : s->processes) p.sm_utilization_ratio = 0.0;
  for (const nvml::ProcessUtilizationSample& sample : samples) {
    if (sample.smUtil > 100) continue;  // Garbage entries seen on some drivers.
    d.last_process_sample_us = std::max(d.last_process_sample_us, sample.timeStamp);
    for (node::GpuProcess& p : s->processes) {
      if (p.pid == sample.pid) p.sm_utilization_ratio = sample.smUtil / 100.0;
    }
  }
}

}  // namespace tarmac::gpu
