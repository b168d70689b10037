// SPDX-License-Identifier: Apache-2.0
#include "fleet/fleet_pick.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "node/pick_rank.h"

namespace tarmac::fleet {
namespace {

double Busy(const FleetGpu& g) {
  return g.recent_utilization_ratio.value_or(g.utilization_ratio.value_or(1));
}

// Free as tarmac pick means it (sched/placement.h): not to drain, no
// lease, no process, not busy, the memory asked.
bool IsCandidate(const FleetGpu& g, const FleetPickRequest& r) {
  if (!g.holders.empty() || g.is_lost || g.verdict == "drain" || g.processes > 0 || !g.utilization_ratio)
    return false;
  if (!ModelMatches(g.model, r.model)) return false;
  if (Busy(g) > r.max_utilization_ratio) return false;
  double free =
      g.memory_free_bytes.value_or(g.memory_total_bytes.value_or(0) - g.memory_used_bytes.value_or(0));
  return free >= static_cast<double>(r.min_free_memory_bytes);
}

bool IsDegraded(const FleetGpu& g) { return g.verdict == "degraded"; }

// tarmac pick's order (node/pick_rank.h), ok GPUs before degraded ones.
bool Better(const FleetGpu* a, const FleetGpu* b) {
  if (IsDegraded(*a) != IsDegraded(*b)) return !IsDegraded(*a);
  auto rank = [](const FleetGpu& g) {
    return node::PickRank{node::BusyStep(Busy(g)), g.processes, g.memory_free_bytes.value_or(0), g.index};
  };
  return node::IsBetterPick(rank(*a), rank(*b));
}

}  // namespace

FleetPick PickInFleet(const FleetView& view, const FleetPickRequest& request) {
  FleetPick best;
  size_t best_degraded = 0;  // Degraded GPUs among those chosen.
  size_t best_spare = 0;
  double best_busy = 0;
  const FleetNode* nearest = nullptr;
  size_t nearest_count = 0;
  for (const FleetNode& node : view.nodes) {
    if (!node.is_up) continue;
    std::vector<const FleetGpu*> fit;
    for (const FleetGpu& g : node.gpus) {
      if (IsCandidate(g, request)) fit.push_back(&g);
    }
    if (fit.size() > nearest_count || nearest == nullptr) {
      nearest = &node;
      nearest_count = fit.size();
    }
    if (fit.size() < static_cast<size_t>(request.count)) continue;
    size_t spare = fit.size() - static_cast<size_t>(request.count);  // Candidates beyond the job.
    std::sort(fit.begin(), fit.end(), Better);
    fit.resize(static_cast<size_t>(request.count));
    double busy = 0;
    for (const FleetGpu* g : fit) busy += Busy(*g);
    size_t degraded = static_cast<size_t>(
        std::count_if(fit.begin(), fit.end(), [](const FleetGpu* g) { return IsDegraded(*g); }));
    bool is_better = best.node == nullptr || degraded < best_degraded ||
                     (degraded == best_degraded &&
                      (spare < best_spare || (spare == best_spare && busy < best_busy - 1e-9)));
    if (is_better) {
      best.node = &node;
      best.gpus = fit;
      best_degraded = degraded;
      best_spare = spare;
      best_busy = busy;
    }
  }
  if (best.node == nullptr) {
    std::string what = fmt::format("{} free GPU{}", request.count, request.count == 1 ? "" : "s");
    if (request.min_free_memory_bytes > 0) {
      what += fmt::format(" with {:.1f} GiB free",
                          static_cast<double>(request.min_free_memory_bytes) / (1 << 30));
    }
    best.why_none = nearest == nullptr ? "no node is up"
                                       : fmt::format("no node has {} now; the most: {} with {}", what,
                                                     nearest->name, nearest_count);
  }
  return best;
}

}  // namespace tarmac::fleet
