// SPDX-License-Identifier: Apache-2.0
#include "sampler/node_reader.h"

#include "common/host_name.h"
#include "node/sample_fields.h"

namespace tarmac::sampler {

NodeReader::NodeReader(gpu::OpenedBackend opened, Clock* clock, const std::string& hostname)
    : opened_(std::move(opened)), clock_(clock), hostname_(hostname.empty() ? HostName() : hostname) {}

void NodeReader::BoundCalls(std::chrono::milliseconds call_timeout, Logger* logger) {
  std::vector<int> indices;
  for (const node::GpuInfo& info : opened_.gpus) indices.push_back(info.index);
  workers_ = std::make_unique<GpuWorkers>(opened_.backend.get(), indices, call_timeout, clock_, logger);
  attributor_.UsePidfds();
}

NodeReader::~NodeReader() = default;

bool NodeReader::HasCallInDriver() const { return workers_ != nullptr && workers_->HasCallInDriver(); }

node::NodeView NodeReader::Read(std::optional<std::chrono::seconds> recent_window, unsigned tiers) {
  node::NodeView view;
  view.hostname = hostname_;
  view.backend = std::string(opened_.backend->name());
  view.system = opened_.backend->system_info();
  view.taken_at = clock_->WallNow();
  std::vector<node::GpuSample> bounded;
  if (workers_ != nullptr) bounded = workers_->SampleAll(tiers);
  attributor_.BeginTick();
  for (size_t slot = 0; slot < opened_.gpus.size(); ++slot) {
    const node::GpuInfo& info = opened_.gpus[slot];
    node::GpuView g;
    g.info = info;
    Result<node::GpuSample> sample = workers_ != nullptr ? Result<node::GpuSample>(bounded[slot])
                                                         : opened_.backend->Sample(info.index, tiers);
    if (sample.ok()) {
      g.sample = std::move(sample).value();
      if (tiers & node::kSlowTier) g.sample.slow_taken_at = g.sample.taken_at;
      if (!(tiers & node::kSlowTier) && slot < previous_samples_.size() &&
          g.sample.health == node::GpuHealth::kOk) {
        node::CarrySlowTier(previous_samples_[slot], &g.sample);
      }
    } else {
      g.sample.index = info.index;
      g.sample.health = node::GpuHealth::kError;
      g.sample.error = sample.status().message();
    }
    for (const node::GpuProcess& p : g.sample.processes) {
      node::ProcessDetails unattributed;
      unattributed.pid = p.pid;
      g.processes.push_back(node::ProcessView{p, is_attributing_ ? attributor_.Lookup(p.pid) : unattributed});
    }
    if (recent_window && g.sample.health == node::GpuHealth::kOk) {
      g.recent_utilization_ratio = opened_.backend->RecentUtilization(info.index, *recent_window);
    }
    if (pcie_rates_.size() <= slot) pcie_rates_.resize(slot + 1);
    auto& [tx, rx] = pcie_rates_[slot];
    if (g.sample.health == node::GpuHealth::kOk) {
      tx.Observe(g.sample.pcie_tx_bytes, g.sample.slow_taken_at);
      rx.Observe(g.sample.pcie_rx_bytes, g.sample.slow_taken_at);
    }
    g.pcie_tx_bytes_per_second = tx.per_second;
    g.pcie_rx_bytes_per_second = rx.per_second;
    view.gpus.push_back(std::move(g));
  }
  std::vector<int64_t> live;
  for (const node::GpuView& g : view.gpus) {
    for (const node::ProcessView& p : g.processes) live.push_back(p.process.pid);
  }
  attributor_.Retain(live);
  previous_samples_.clear();
  for (const node::GpuView& g : view.gpus) previous_samples_.push_back(g.sample);
  return view;
}

}  // namespace tarmac::sampler
