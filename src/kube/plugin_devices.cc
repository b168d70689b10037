// SPDX-License-Identifier: Apache-2.0
#include "kube/plugin_devices.h"

#include <fmt/format.h>

#include <algorithm>
#include <tuple>

#include "node/health_verdict.h"
#include "sched/node_slots.h"
#include "sched/placement.h"

namespace tarmac::kube {
namespace {

// A device a lease holds is not offered to pods, unless a pod holds it (the
// kubelet's own) or backfill does (it gives way to a pod's Allocate).
bool IsKeptFromPods(const node::GpuLease& l) {
  return l.kind != node::LeaseKind::kPod && l.kind != node::LeaseKind::kBackfill;
}

}  // namespace

std::vector<PluginDevice> DevicesOf(const node::NodeView& node_view,
                                    const std::map<int, node::GpuLease>& leases,
                                    const std::set<int>& critical_gpus) {
  std::vector<PluginDevice> devices;
  if (!node_view.backend_error.empty()) return devices;
  for (const node::GpuView& g : node_view.gpus) {
    PluginDevice d;
    d.id = g.info.uuid;
    d.numa_node = g.info.numa_node;
    if (g.sample.health != node::GpuHealth::kOk) {
      d.why_unhealthy = fmt::format("{}: {}", node::GpuHealthName(g.sample.health), g.sample.error);
    } else if (node::HealthVerdict v = node::JudgeGpu(g); v.verdict == node::Verdict::kDrain) {
      // As NVIDIA's own plugin does on a critical Xid, and on the rest of
      // the evidence tarmac drains on (node/health_verdict.h).
      d.why_unhealthy = fmt::format("to drain: {}", fmt::join(v.reasons, "; "));
    } else if (critical_gpus.count(g.info.index) != 0) {
      d.why_unhealthy = "a critical doctor finding";
    } else if (auto l = leases.find(g.info.index); l != leases.end() && IsKeptFromPods(l->second)) {
      d.why_unhealthy = fmt::format("in tarmac lease {} of {}", l->second.id, l->second.user);
    }
    d.is_healthy = d.why_unhealthy.empty();
    devices.push_back(std::move(d));
  }
  return devices;
}

std::string MigResourceName(const std::string& resource_name, const std::string& profile) {
  return resource_name.substr(0, resource_name.find('/')) + "/mig-" + profile;
}

std::map<std::string, std::vector<PluginDevice>> DevicesByResource(
    const node::NodeView& node_view, const std::map<int, node::GpuLease>& leases,
    const std::map<std::string, node::GpuLease>& mig_leases, const std::set<int>& critical_gpus,
    const std::string& resource_name, const std::string& strategy) {
  std::map<std::string, std::vector<PluginDevice>> out;
  std::vector<PluginDevice> whole = DevicesOf(node_view, leases, critical_gpus);
  // A GPU one of whose MIG instances any lease holds (a pod's too) cannot
  // be allocated whole: offered as such it would only be refused at
  // Allocate, so it is not offered.
  for (size_t i = 0; i < node_view.gpus.size() && i < whole.size(); ++i) {
    for (const node::MigInstance& m : node_view.gpus[i].sample.mig_instances) {
      auto l = mig_leases.find(m.uuid);
      if (!whole[i].is_healthy || l == mig_leases.end()) continue;
      whole[i].is_healthy = false;
      whole[i].why_unhealthy =
          fmt::format("its MIG instance {} is in lease {} of {}", m.uuid, l->second.id, l->second.user);
    }
  }
  out[resource_name];
  if (strategy == "none") {
    out[resource_name] = std::move(whole);
    return out;
  }
  for (size_t i = 0; i < node_view.gpus.size() && i < whole.size(); ++i) {
    const node::GpuView& g = node_view.gpus[i];
    bool is_mig = g.info.is_mig_enabled.value_or(false) || g.sample.has_mig_instances;
    if (!is_mig) {
      out[resource_name].push_back(whole[i]);
      continue;
    }
    for (const node::MigInstance& m : g.sample.mig_instances) {
      PluginDevice d;
      d.id = m.uuid;
      d.numa_node = g.info.numa_node;
      // Unhealthy with its GPU, unless only its instances' leases made the
      // GPU so (that is each instance's own question, below).
      bool is_gpu_down = !whole[i].is_healthy && whole[i].why_unhealthy.rfind("its MIG instance ", 0) != 0;
      d.why_unhealthy = is_gpu_down ? whole[i].why_unhealthy : std::string();
      if (auto l = mig_leases.find(m.uuid);
          d.why_unhealthy.empty() && l != mig_leases.end() && IsKeptFromPods(l->second)) {
        d.why_unhealthy = fmt::format("in tarmac lease {} of {}", l->second.id, l->second.user);
      }
      d.is_healthy = d.why_unhealthy.empty();
      out[strategy == "mixed" ? MigResourceName(resource_name, m.profile) : resource_name].push_back(
          std::move(d));
    }
  }
  return out;
}

std::vector<std::string> PreferredDevices(const node::NodeView& node_view,
                                          const std::vector<std::string>& available,
                                          const std::vector<std::string>& must_include, int size) {
  std::vector<sched::GpuSlot> slots = sched::SlotsOf(node_view);
  std::map<std::string, size_t> by_uuid;
  for (size_t i = 0; i < slots.size(); ++i) by_uuid[slots[i].uuid] = i;
  std::set<std::string> offered(available.begin(), available.end());
  std::vector<std::string> chosen;
  for (const std::string& id : must_include) {
    if (std::find(chosen.begin(), chosen.end(), id) == chosen.end()) chosen.push_back(id);
  }
  int wanted = size - static_cast<int>(chosen.size());
  if (wanted <= 0) return chosen;
  // Placement sees only the offered GPUs not yet chosen as free.
  for (sched::GpuSlot& s : slots) {
    bool is_offered =
        offered.count(s.uuid) != 0 && std::find(chosen.begin(), chosen.end(), s.uuid) == chosen.end();
    s.is_healthy = is_offered;
    s.memory_total_bytes = 0;
  }
  if (chosen.empty()) {
    sched::GpuWants wants;
    wants.gpu_count = wanted;
    if (std::optional<std::vector<int>> picked = sched::PickGpus(slots, wants)) {
      for (int i : *picked) chosen.push_back(slots[static_cast<size_t>(i)].uuid);
      return chosen;
    }
  }
  // Around GPUs already chosen (or when placement cannot fit): the offered
  // GPUs closest to them first: same NVLink domain, PCIe switch, NUMA node.
  std::vector<const sched::GpuSlot*> anchors;
  for (const std::string& id : chosen) {
    if (auto it = by_uuid.find(id); it != by_uuid.end()) anchors.push_back(&slots[it->second]);
  }
  auto closeness = [&](const sched::GpuSlot& s) {
    int nvlink = 0, pcie = 0, numa = 0;
    for (const sched::GpuSlot* a : anchors) {
      nvlink += s.nvlink_domain >= 0 && s.nvlink_domain == a->nvlink_domain;
      pcie += s.pcie_switch >= 0 && s.pcie_switch == a->pcie_switch;
      numa += s.numa_node >= 0 && s.numa_node == a->numa_node;
    }
    return std::make_tuple(-nvlink, -pcie, -numa, s.index);
  };
  std::vector<const sched::GpuSlot*> candidates;
  for (const sched::GpuSlot& s : slots) {
    if (s.is_healthy) candidates.push_back(&s);
  }
  std::sort(candidates.begin(), candidates.end(),
            [&](const sched::GpuSlot* a, const sched::GpuSlot* b) { return closeness(*a) < closeness(*b); });
  for (const sched::GpuSlot* s : candidates) {
    if (wanted == 0) break;
    chosen.push_back(s->uuid);
    --wanted;
  }
  // IDs this node does not know (never expected): in the kubelet's order.
  for (const std::string& id : available) {
    if (wanted == 0) break;
    if (by_uuid.count(id) != 0 || std::find(chosen.begin(), chosen.end(), id) != chosen.end()) continue;
    chosen.push_back(id);
    --wanted;
  }
  return chosen;
}

}  // namespace tarmac::kube
