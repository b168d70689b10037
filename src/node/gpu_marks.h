// SPDX-License-Identifier: Apache-2.0
//
// What matters about a GPU at a glance, judged from one reading: idle, lost,
// throttling (and why), a PCIe link narrower than it can be, and processes
// holding memory without computing. Used by the text and JSON renderings so
// both say the same thing. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "node/node_view.h"

namespace tarmac::node {

// Below this utilization a GPU counts as idle.
inline constexpr double kIdleUtilizationRatio = 0.05;
// A process holding at least this much memory at 0 % SM is "holding idle".
inline constexpr int64_t kHoldingMemoryBytes = int64_t{256} << 20;

struct GpuMarks {
  bool is_idle = false;  // Readable, utilization under the idle line.
  bool is_lost = false;
  bool is_unreadable = false;  // Any health other than ok.
  bool is_throttled = false;
  std::vector<std::string> throttle_reasons;  // Only the throttling ones.
  bool is_pcie_degraded = false;              // Width below the maximum.
  std::vector<int64_t> idle_holding_pids;     // Memory held at 0 % SM.
};

// A MIG instance's engine activity (GPM) at or below this counts as none.
inline constexpr double kMigIdleEngineRatio = 0.005;

GpuMarks MarkGpu(const GpuView& gpu);

// True when `process` holds kHoldingMemoryBytes or more at 0 % SM (under
// MIG: in an instance whose engine showed no activity).
bool IsIdleHolding(const ProcessView& process, const GpuView& gpu);

// The MIG instance of `sample` with `gpu_instance_id`; null when none.
const MigInstance* FindMigInstance(const GpuSample& sample, int gpu_instance_id);

// Whether an instance's engine activity (GPM) is under the idle line;
// false when unknown.
bool IsMigInstanceIdle(const MigInstance& instance);
// The same, on `gpu`: without an engine reading (a one-shot read has no
// previous GPM sample), an instance none of the GPU's processes runs in is
// idle too (when the process list could be read).
bool IsMigInstanceIdle(const MigInstance& instance, const GpuView& gpu);

}  // namespace tarmac::node
