// SPDX-License-Identifier: Apache-2.0
//
// A GpuBackend is tarmac's only way to read GPUs. The program picks one at
// start-up (MakeBackend in backend_factory.h): NvmlBackend on real machines
// (and over the fake libnvidia-ml in tests), SimBackend for demos, tests and
// development without GPUs.
//
// Thread safety: Open from one thread. After it, Sample may be called for
// different GPUs from different threads at once (the agent samples each GPU
// on its own worker so that one hung GPU cannot stall the others); calls for
// the same GPU never overlap. WaitEvents may run on a thread of its own (the
// agent's events thread) at the same time as Sample. The other methods are
// called from one thread.
#pragma once

#include <chrono>
#include <optional>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "node/gpu_types.h"

namespace tarmac::gpu {

class GpuBackend {
 public:
  GpuBackend() = default;
  GpuBackend(const GpuBackend&) = delete;
  GpuBackend& operator=(const GpuBackend&) = delete;
  virtual ~GpuBackend() = default;

  // Short lower-case name for logs and labels: "nvml", "sim".
  virtual std::string_view name() const = 0;

  // Loads the vendor library (or the scenario), enumerates devices and probes
  // which fields each supports. Returns kUnavailable when the driver or
  // library is absent, with a message naming what was tried. Devices that
  // cannot be opened are returned with health != kOk, not dropped.
  virtual Result<std::vector<node::GpuInfo>> Open() = 0;

  // Driver and library facts. REQUIRES: Open() succeeded.
  virtual const node::SystemInfo& system_info() const = 0;

  // Reads the groups of fields in `tiers` for the GPU at `index`
  // (0 <= index < Open().size()). A field the device cannot report is left
  // empty; a device that cannot be read comes back with health != kOk and
  // empty readings. Returns non-OK only for an index out of range.
  virtual Result<node::GpuSample> Sample(int index, unsigned tiers) = 0;

  // Mean GPU utilization (0..1) over the last `window`, from the device's own
  // sample buffer, so a one-shot command judges recent use and not one
  // instant. Empty when the device keeps no such history.
  virtual std::optional<double> RecentUtilization(int index, std::chrono::seconds window) = 0;

  // Waits up to `timeout` for driver events (Xid) and returns those that
  // arrived, oldest first; empty on timeout. Events that happened before the
  // first call are not reported.
  virtual Result<std::vector<node::GpuEvent>> WaitEvents(std::chrono::milliseconds timeout) = 0;

  // Failed driver calls so far (see CallErrorCounts). Safe to call from any
  // thread, while other threads sample. Backends without a driver have none.
  virtual node::CallErrorCounts CallErrors() const { return {}; }
};

}  // namespace tarmac::gpu
