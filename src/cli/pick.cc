// SPDX-License-Identifier: Apache-2.0
#include "cli/pick.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "common/units.h"
#include "node/health_verdict.h"
#include "node/pick_rank.h"
#include "sched/node_slots.h"
#include "sched/placement.h"

namespace tarmac::cli {
namespace {

std::optional<double> RecentUse(const node::GpuView& g) {
  return g.recent_utilization_ratio ? g.recent_utilization_ratio : g.sample.utilization_gpu_ratio;
}

// Why `g` is not free, in words.
std::string WhyNot(const node::GpuView& g, const node::HealthVerdict& health, sched::NotFree why,
                   const PickRequest& request) {
  switch (why) {
    case sched::NotFree::kDrain:
      return fmt::format("to drain: {}", fmt::join(health.reasons, "; "));
    case sched::NotFree::kMig:
      return "in MIG mode (CUDA takes one of its instances: tarmac run --mig PROFILE)";
    case sched::NotFree::kLeased:
      return fmt::format("leased to {} (lease {}); tarmac run queues for it", g.lease->user, g.lease->id);
    case sched::NotFree::kForeignProcesses: {
      std::set<std::string> users;
      for (const node::ProcessView& p : g.processes) {
        if (node::IsCompute(p))
          users.insert(p.details.user.empty() ? "pid " + std::to_string(p.process.pid) : p.details.user);
      }
      return fmt::format("in use outside any lease (by {})", fmt::join(users, ", "));
    }
    case sched::NotFree::kBusy:
      return fmt::format("busy ({:.0f}% recently, limit {:.0f}%)", RecentUse(g).value_or(0) * 100,
                         request.max_utilization_ratio * 100);
    case sched::NotFree::kMemory:
      return fmt::format("{} free, need {}", FormatBytes(g.sample.memory_free_bytes.value_or(0)),
                         FormatBytes(request.min_free_memory_bytes));
    case sched::NotFree::kTaken:
    case sched::NotFree::kFree:
      break;
  }
  return "";
}

}  // namespace

PickResult Pick(const node::NodeView& node_view, const PickRequest& request) {
  PickResult result;
  std::vector<sched::GpuSlot> slots = sched::SlotsOf(node_view);
  std::set<int> leased;
  for (const node::GpuView& g : node_view.gpus) {
    if (g.lease) leased.insert(static_cast<int>(&g - node_view.gpus.data()));
  }
  sched::MarkUse(node_view, leased, request.max_utilization_ratio, &slots);
  for (sched::GpuSlot& s : slots) s.is_leased = leased.count(s.index) != 0;
  std::vector<const node::GpuView*> candidates;
  for (const sched::GpuSlot& s : slots) {
    const node::GpuView& g = node_view.gpus[static_cast<size_t>(s.index)];
    sched::NotFree why = sched::WhyNotFree(s, request.min_free_memory_bytes);
    node::HealthVerdict health = node::JudgeGpu(g);
    std::string text = WhyNot(g, health, why, request);
    result.gpus.push_back({&g, why == sched::NotFree::kFree, false, std::move(health), std::move(text)});
    if (why == sched::NotFree::kFree) {
      candidates.push_back(&g);
    } else {
      result.rejections.push_back(fmt::format("gpu {}: {}", g.info.index, result.gpus.back().why));
    }
  }
  auto rank = [](const node::GpuView* g) {
    return node::PickRank{node::BusyStep(RecentUse(*g)), static_cast<int>(g->processes.size()),
                          static_cast<double>(g->sample.memory_free_bytes.value_or(0)), g->info.index};
  };
  std::stable_sort(candidates.begin(), candidates.end(), [&](const node::GpuView* a, const node::GpuView* b) {
    return node::IsBetterPick(rank(a), rank(b));
  });
  // Which of the ranked candidates: as a lease would be placed (ok before
  // degraded; NVLink domain, PCIe switch, NUMA node), ties to the better
  // ranked.
  std::vector<sched::GpuSlot> ranked;
  for (const node::GpuView* g : candidates)
    ranked.push_back(slots[static_cast<size_t>(g - node_view.gpus.data())]);
  sched::GpuWants wants;
  wants.gpu_count = request.count;
  std::optional<std::vector<int>> placed;
  if (static_cast<int>(candidates.size()) >= request.count) placed = sched::PickGpus(ranked, wants);
  for (const node::GpuView* g : candidates) {  // Best ranked first.
    int position = static_cast<int>(g - node_view.gpus.data());
    PickJudgement& j = result.gpus[static_cast<size_t>(position)];
    j.is_chosen = placed && std::find(placed->begin(), placed->end(), position) != placed->end();
    std::string state = fmt::format("free: {:.0f}% recently, {} free", RecentUse(*g).value_or(0) * 100,
                                    FormatBytes(g->sample.memory_free_bytes.value_or(0)));
    bool is_degraded = slots[static_cast<size_t>(position)].is_degraded;
    if (is_degraded) state += fmt::format("; degraded: {}", fmt::join(j.health.reasons, "; "));
    if (j.is_chosen) {
      j.why = "chosen; " + state;
    } else if (!placed) {
      j.why = state + fmt::format("; not enough free GPUs ({} of {})", candidates.size(), request.count);
    } else {
      j.why = state + (is_degraded ? "; not chosen: ok GPUs are taken before degraded ones"
                                   : "; not chosen: the chosen rank higher or sit closer together");
    }
    if (j.is_chosen) result.chosen.push_back(g);
  }
  return result;
}

}  // namespace tarmac::cli
