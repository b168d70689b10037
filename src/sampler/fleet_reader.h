// SPDX-License-Identifier: Apache-2.0
//
// FleetReader reads every GPU once through a backend and joins each GPU
// process with who it is (/proc), giving the plain FleetView that status,
// query and pick render. Collection and drawing meet only through FleetView.
//
// Thread safety: one thread at a time.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "gpu/backend_factory.h"
#include "common/log.h"
#include "sampler/gpu_workers.h"
#include "sampler/process_attribution.h"

namespace tarmac::sampler {

struct ProcessView {
  gpu::GpuProcess process;
  ProcessDetails details;
};

struct GpuView {
  gpu::GpuInfo info;
  gpu::GpuSample sample;
  std::vector<ProcessView> processes;
  // Mean utilization over the recent window, when asked for and available.
  std::optional<double> recent_utilization_ratio;
  // PCIe traffic from counter deltas between two reads (watch mode).
  std::optional<double> pcie_tx_bytes_per_second;
  std::optional<double> pcie_rx_bytes_per_second;
  // Xid errors the agent's events thread has seen on this GPU.
  int64_t xid_count = 0;
  std::optional<gpu::GpuEvent> last_xid;
  std::map<int64_t, int64_t> xid_count_by_code;
  // The agent's lease on this GPU, when any (status from the agent only).
  std::optional<int64_t> lease_id;
  std::string lease_user;
};

struct FleetView {
  std::string hostname;
  std::string backend;  // "nvml" or "sim"
  // Why no GPU can be read at all (the driver is not loaded): set while the
  // agent waits to re-attach; `gpus` then holds the last GPUs it knew.
  std::string backend_error;
  gpu::SystemInfo system;
  std::chrono::system_clock::time_point taken_at;
  std::vector<GpuView> gpus;
};

class FleetReader {
 public:
  FleetReader(gpu::OpenedBackend opened, Clock* clock);
  ~FleetReader();
  FleetReader(FleetReader&&) = default;

  // Reads all GPUs: the `tiers` given (gpu::SampleTier bits); readings of a
  // tier not read this time are carried over from the previous read. With
  // `recent_window` set, also reads each GPU's mean utilization over it.
  FleetView Read(std::optional<std::chrono::seconds> recent_window, unsigned tiers = gpu::kAllTiers);

  const std::vector<gpu::GpuInfo>& gpus() const { return opened_.gpus; }
  gpu::GpuBackend* backend() const { return opened_.backend.get(); }

  // True while a bounded read is stuck in the driver; the reader (and its
  // backend) must then not be destroyed: the stuck thread still uses them.
  bool HasCallInDriver() const;

  // From now on, read the GPUs off the calling thread and give up on a GPU
  // whose read takes longer than `call_timeout` (it is then reported
  // unresponsive; see gpu_workers.h), and keep pidfds for GPU processes.
  // For long-running readers (the agent).
  void BoundCalls(std::chrono::milliseconds call_timeout, Logger* logger);

 private:
  gpu::OpenedBackend opened_;
  Clock* clock_;
  ProcessAttributor attributor_;
  std::string hostname_;                         // Read once.
  std::vector<gpu::GpuSample> previous_samples_;  // For rates and the slow tier.
  std::unique_ptr<GpuWorkers> workers_;
};

}  // namespace tarmac::sampler

namespace tarmac::cli {
// The command-line renderers work on the same plain data.
using sampler::FleetReader;
using sampler::FleetView;
using sampler::GpuView;
using sampler::ProcessView;
}  // namespace tarmac::cli
