// SPDX-License-Identifier: Apache-2.0
#include "sched/placement.h"

#include <algorithm>
#include <map>

namespace tarmac::sched {
namespace {

// The best group of free GPUs by `key` (-1: not grouped) that holds `count`:
// the smallest group that fits, then the lowest index.
std::optional<std::vector<int>> FromOneGroup(const std::vector<const GpuSlot*>& free, int count,
                                             int GpuSlot::*key) {
  std::map<int, std::vector<int>> groups;
  for (const GpuSlot* g : free) {
    if (g->*key >= 0) groups[g->*key].push_back(g->index);
  }
  const std::vector<int>* best = nullptr;
  for (const auto& [id, members] : groups) {
    if (static_cast<int>(members.size()) < count) continue;
    if (best == nullptr || members.size() < best->size()) best = &members;
  }
  if (best == nullptr) return std::nullopt;
  return std::vector<int>(best->begin(), best->begin() + count);
}

}  // namespace

bool IsFree(const GpuSlot& gpu, int64_t min_free_memory_bytes, Override change) {
  if (change == Override::kTaken) return false;
  bool is_leased = gpu.is_leased && change != Override::kReleased;
  return gpu.is_healthy && !is_leased && !gpu.has_foreign_processes && gpu.memory_free_bytes >= min_free_memory_bytes;
}

std::optional<std::vector<int>> PickGpus(const std::vector<GpuSlot>& gpus, const GpuWants& wants,
                                         const Overrides& overrides) {
  auto change = [&](const GpuSlot& g) {
    size_t i = static_cast<size_t>(g.index);
    return i < overrides.size() ? overrides[i] : Override::kNone;
  };
  if (!wants.uuids.empty()) {
    std::vector<int> picked;
    for (const std::string& uuid : wants.uuids) {
      auto it = std::find_if(gpus.begin(), gpus.end(), [&](const GpuSlot& g) { return g.uuid == uuid; });
      if (it == gpus.end() || !IsFree(*it, wants.min_free_memory_bytes, change(*it))) return std::nullopt;
      if (std::find(picked.begin(), picked.end(), it->index) != picked.end()) return std::nullopt;  // Named twice.
      picked.push_back(it->index);
    }
    return picked;
  }
  if (wants.gpu_count <= 0) return std::nullopt;
  std::vector<const GpuSlot*> free;
  for (const GpuSlot& g : gpus) {
    if (IsFree(g, wants.min_free_memory_bytes, change(g))) free.push_back(&g);
  }
  if (static_cast<int>(free.size()) < wants.gpu_count) return std::nullopt;
  if (wants.gpu_count == 1) {
    // One GPU: one without NVLink first, else one from the most broken-up
    // NVLink domain, so whole domains stay free for multi-GPU work.
    std::map<int, int> free_in_domain;
    for (const GpuSlot* g : free) free_in_domain[g->nvlink_domain]++;
    auto score = [&](const GpuSlot* g) { return g->nvlink_domain < 0 ? 0 : free_in_domain[g->nvlink_domain]; };
    const GpuSlot* best = free.front();
    for (const GpuSlot* g : free) {
      if (score(g) < score(best)) best = g;
    }
    return std::vector<int>{best->index};
  }
  for (int GpuSlot::*key : {&GpuSlot::nvlink_domain, &GpuSlot::pcie_switch, &GpuSlot::numa_node}) {
    if (std::optional<std::vector<int>> picked = FromOneGroup(free, wants.gpu_count, key)) return picked;
  }
  std::vector<int> picked;
  for (int i = 0; i < wants.gpu_count; ++i) picked.push_back(free[static_cast<size_t>(i)]->index);
  return picked;
}

}  // namespace tarmac::sched
