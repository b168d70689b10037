// SPDX-License-Identifier: Apache-2.0
//
// NodeReader reads every GPU once through a backend and joins each GPU
// process with who it is (/proc), giving the plain NodeView that status,
// query and pick render. Collection and drawing meet only through NodeView.
//
// Thread safety: one thread at a time.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/log.h"
#include "gpu/backend_factory.h"
#include "node/counter_rate.h"
#include "node/node_view.h"
#include "sampler/gpu_workers.h"
#include "sampler/process_attribution.h"

namespace tarmac::sampler {

class NodeReader {
 public:
  // `hostname`: the node's name its views carry; empty: this host's.
  NodeReader(gpu::OpenedBackend opened, Clock* clock, const std::string& hostname = "");
  ~NodeReader();
  NodeReader(NodeReader&&) = default;

  // Reads all GPUs: the `tiers` given (node::SampleTier bits); readings of a
  // tier not read this time are carried over from the previous read. With
  // `recent_window` set, also reads each GPU's mean utilization over it.
  node::NodeView Read(std::optional<std::chrono::seconds> recent_window, unsigned tiers = node::kAllTiers);

  const std::vector<node::GpuInfo>& gpus() const { return opened_.gpus; }
  gpu::GpuBackend* backend() const { return opened_.backend.get(); }

  // True while a bounded read is stuck in the driver; the reader (and its
  // backend) must then not be destroyed: the stuck thread still uses them.
  bool HasCallInDriver() const;

  // From now on, read the GPUs off the calling thread and give up on a GPU
  // whose read takes longer than `call_timeout` (it is then reported
  // unresponsive; see gpu_workers.h), and keep pidfds for GPU processes.
  // For long-running readers (the agent).
  void BoundCalls(std::chrono::milliseconds call_timeout, Logger* logger);

  // From now on, GPU processes come without their /proc details (only the
  // PID): for readers that show no process (`query --query-gpu`), which
  // then skip three /proc reads per process.
  void LeaveProcessesUnattributed() { is_attributing_ = false; }

 private:
  gpu::OpenedBackend opened_;
  Clock* clock_;
  ProcessAttributor attributor_;
  std::string hostname_;                                                     // Read once.
  std::vector<node::GpuSample> previous_samples_;                            // For the slow tier.
  std::vector<std::pair<node::CounterRate, node::CounterRate>> pcie_rates_;  // tx, rx; by slot.
  std::unique_ptr<GpuWorkers> workers_;
  bool is_attributing_ = true;
};

}  // namespace tarmac::sampler
