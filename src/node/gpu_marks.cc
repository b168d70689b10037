// SPDX-License-Identifier: Apache-2.0
#include "node/gpu_marks.h"

#include "nvidia/clock_event_reasons.h"

namespace tarmac::node {

const MigInstance* FindMigInstance(const GpuSample& sample, int gpu_instance_id) {
  for (const MigInstance& m : sample.mig_instances) {
    if (m.gpu_instance_id == gpu_instance_id) return &m;
  }
  return nullptr;
}

bool IsMigInstanceIdle(const MigInstance& instance) {
  return instance.graphics_engine_active_ratio &&
         *instance.graphics_engine_active_ratio < kIdleUtilizationRatio;
}

bool IsMigInstanceIdle(const MigInstance& instance, const GpuView& gpu) {
  if (instance.graphics_engine_active_ratio) return IsMigInstanceIdle(instance);
  if (!gpu.sample.has_processes) return false;
  for (const GpuProcess& p : gpu.sample.processes) {
    if (p.gpu_instance_id == instance.gpu_instance_id) return false;
  }
  return true;
}

bool IsIdleHolding(const ProcessView& process, const GpuView& gpu) {
  const GpuProcess& p = process.process;
  if (!p.used_memory_bytes || *p.used_memory_bytes < kHoldingMemoryBytes) return false;
  if (p.gpu_instance_id) {  // Under MIG: its instance's engine (GPM) proves it, nothing else.
    const MigInstance* m = FindMigInstance(gpu.sample, *p.gpu_instance_id);
    return m != nullptr && m->graphics_engine_active_ratio &&
           *m->graphics_engine_active_ratio <= kMigIdleEngineRatio;
  }
  if (p.sm_utilization_ratio) return *p.sm_utilization_ratio <= 0.0;
  // Without per-process figures, only a fully idle device proves it.
  return gpu.sample.utilization_gpu_ratio && *gpu.sample.utilization_gpu_ratio <= 0.0;
}

GpuMarks MarkGpu(const GpuView& gpu) {
  GpuMarks m;
  const GpuSample& s = gpu.sample;
  m.is_lost = s.health == GpuHealth::kLost;
  m.is_unreadable = s.health != GpuHealth::kOk;
  if (m.is_unreadable) return m;
  m.is_idle = s.utilization_gpu_ratio && *s.utilization_gpu_ratio < kIdleUtilizationRatio;
  if (!s.utilization_gpu_ratio && !s.mig_instances.empty()) {
    // Under MIG: the engine's activity (GPM); without a reading of it (a
    // one-shot read), idle when no process runs on the GPU at all.
    m.is_idle = s.graphics_engine_active_ratio ? *s.graphics_engine_active_ratio < kIdleUtilizationRatio
                                               : s.has_processes && s.processes.empty();
  }
  if (s.clock_event_reasons && nvidia::IsThrottled(*s.clock_event_reasons)) {
    m.is_throttled = true;
    for (const nvidia::ClockEventReason& r : nvidia::ClockEventReasons()) {
      if (r.is_throttle && (*s.clock_event_reasons & r.bit)) m.throttle_reasons.emplace_back(r.name);
    }
  }
  m.is_pcie_degraded = s.pcie_width && gpu.info.pcie_width_max && *s.pcie_width < *gpu.info.pcie_width_max;
  for (const ProcessView& p : gpu.processes) {
    if (IsIdleHolding(p, gpu)) m.idle_holding_pids.push_back(p.process.pid);
  }
  return m;
}

}  // namespace tarmac::node
