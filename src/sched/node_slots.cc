// SPDX-License-Identifier: Apache-2.0
#include "sched/node_slots.h"

#include <algorithm>
#include <map>
#include <string>

#include "node/health_verdict.h"

namespace tarmac::sched {

std::vector<int> NvLinkDomains(const node::NodeView& node_view) {
  size_t n = node_view.gpus.size();
  std::vector<size_t> parent(n);
  for (size_t i = 0; i < n; ++i) parent[i] = i;
  auto root = [&parent](size_t i) {
    while (parent[i] != i) i = parent[i] = parent[parent[i]];
    return i;
  };
  std::map<std::string, size_t> by_bus;
  for (size_t i = 0; i < n; ++i) by_bus[node_view.gpus[i].info.pci_bus_id] = i;
  std::vector<bool> linked(n, false);
  for (size_t i = 0; i < n; ++i) {
    for (const std::string& bus : node_view.gpus[i].info.nvlink_peer_bus_ids) {
      auto peer = by_bus.find(bus);
      if (peer == by_bus.end() || peer->second == i) continue;
      linked[i] = linked[peer->second] = true;
      parent[root(i)] = root(peer->second);
    }
  }
  std::vector<int> domain(n, -1);
  for (size_t i = 0; i < n; ++i) {
    if (linked[i]) domain[i] = static_cast<int>(root(i));
  }
  return domain;
}

std::vector<GpuSlot> SlotsOf(const node::NodeView& node_view) {
  std::vector<int> domain = NvLinkDomains(node_view);
  std::vector<GpuSlot> slots;
  slots.reserve(node_view.gpus.size());
  for (const node::GpuView& g : node_view.gpus) {
    GpuSlot s;
    s.index = static_cast<int>(slots.size());
    s.uuid = g.info.uuid;
    // A GPU to drain (unreadable, uncorrected ECC, a critical Xid, ...) is
    // given to nobody: node/health_verdict.h.
    node::Verdict verdict = node::JudgeGpu(g).verdict;
    s.is_healthy = verdict != node::Verdict::kDrain;
    s.is_degraded = verdict == node::Verdict::kDegraded;
    s.is_drain_overridable =
        verdict == node::Verdict::kDrain && g.sample.health == node::GpuHealth::kOk && !g.drained;
    s.memory_free_bytes = g.sample.memory_free_bytes.value_or(0);
    s.memory_total_bytes = g.info.memory_total_bytes.value_or(0);
    s.numa_node = g.info.numa_node.value_or(-1);
    s.nvlink_domain = domain[static_cast<size_t>(s.index)];
    s.is_mig_enabled = g.info.is_mig_enabled.value_or(false) || !g.sample.mig_instances.empty();
    for (const node::MigInstance& m : g.sample.mig_instances) {
      MigSlot ms;
      ms.uuid = m.uuid;
      ms.profile = m.profile;
      ms.memory_total_bytes = m.memory_total_bytes.value_or(0);
      s.mig.push_back(std::move(ms));
    }
    slots.push_back(std::move(s));
  }
  return slots;
}

void MarkUse(const node::NodeView& node_view, const std::set<int>& leased, double busy_above_ratio,
             std::vector<GpuSlot>* slots) {
  for (GpuSlot& s : *slots) {
    const node::GpuView& g = node_view.gpus[static_cast<size_t>(s.index)];
    bool is_leased = leased.count(s.index) != 0;
    s.has_foreign_processes =
        !is_leased && std::any_of(g.processes.begin(), g.processes.end(), node::IsCompute);
    std::optional<double> used =
        g.recent_utilization_ratio ? g.recent_utilization_ratio : g.sample.utilization_gpu_ratio;
    s.is_busy = !is_leased && used && *used > busy_above_ratio;
  }
}

}  // namespace tarmac::sched
