// SPDX-License-Identifier: Apache-2.0
#include "cli/pick.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "common/units.h"
#include "node/health_verdict.h"
#include "node/pick_rank.h"
#include "sched/node_slots.h"
#include "sched/placement.h"

namespace tarmac::cli {

PickResult Pick(const node::NodeView& node_view, const PickRequest& request) {
  PickResult result;
  std::vector<const node::GpuView*> candidates;
  for (const node::GpuView& g : node_view.gpus) {
    const node::GpuSample& s = g.sample;
    if (node::HealthVerdict v = node::JudgeGpu(g); v.verdict == node::Verdict::kDrain) {
      result.rejections.push_back(
          fmt::format("gpu {}: to drain: {}", g.info.index, fmt::join(v.reasons, "; ")));
      continue;
    }
    if (g.lease) {
      result.rejections.push_back(fmt::format("gpu {}: leased to {} (lease {}); tarmac run queues for it",
                                              g.info.index, g.lease->user, g.lease->id));
      continue;
    }
    if (g.info.is_mig_enabled.value_or(false) || !s.mig_instances.empty()) {
      result.rejections.push_back(fmt::format(
          "gpu {}: in MIG mode (CUDA takes one of its instances: tarmac run --mig PROFILE)", g.info.index));
      continue;
    }
    if (!s.memory_free_bytes) {
      result.rejections.push_back(fmt::format("gpu {}: free memory unknown", g.info.index));
      continue;
    }
    if (*s.memory_free_bytes < request.min_free_memory_bytes) {
      result.rejections.push_back(fmt::format("gpu {}: {} free, need {}", g.info.index,
                                              FormatBytes(*s.memory_free_bytes),
                                              FormatBytes(request.min_free_memory_bytes)));
      continue;
    }
    std::optional<double> used =
        g.recent_utilization_ratio ? g.recent_utilization_ratio : s.utilization_gpu_ratio;
    if (used && *used > request.max_utilization_ratio) {
      result.rejections.push_back(fmt::format("gpu {}: busy ({:.0f}% recently, limit {:.0f}%)", g.info.index,
                                              *used * 100, request.max_utilization_ratio * 100));
      continue;
    }
    candidates.push_back(&g);
  }
  auto rank = [](const node::GpuView* g) {
    return node::PickRank{node::BusyStep(g->recent_utilization_ratio ? g->recent_utilization_ratio
                                                                     : g->sample.utilization_gpu_ratio),
                          static_cast<int>(g->processes.size()),
                          static_cast<double>(*g->sample.memory_free_bytes), g->info.index};
  };
  std::stable_sort(candidates.begin(), candidates.end(), [&](const node::GpuView* a, const node::GpuView* b) {
    return node::IsBetterPick(rank(a), rank(b));
  });
  if (static_cast<int>(candidates.size()) < request.count) return result;
  // Which of the ranked candidates: as a lease would be placed (NVLink
  // domain, PCIe switch, NUMA node), ties to the better ranked.
  std::vector<sched::GpuSlot> slots = sched::SlotsOf(node_view);
  std::vector<sched::GpuSlot> ranked;
  for (const node::GpuView* g : candidates)
    ranked.push_back(slots[static_cast<size_t>(g - node_view.gpus.data())]);
  sched::GpuWants wants;
  wants.gpu_count = request.count;
  std::optional<std::vector<int>> placed = sched::PickGpus(ranked, wants);
  if (!placed) return result;
  // Best ranked first.
  for (const node::GpuView* g : candidates) {
    int position = static_cast<int>(g - node_view.gpus.data());
    if (std::find(placed->begin(), placed->end(), position) != placed->end()) result.chosen.push_back(g);
  }
  return result;
}

}  // namespace tarmac::cli
