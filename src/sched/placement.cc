// SPDX-License-Identifier: Apache-2.0
#include "sched/placement.h"

#include <algorithm>
#include <iterator>
#include <map>

#include "nvidia/vendor_facts.h"

namespace tarmac::sched {
namespace {

// How many free GPUs share each value of `key` (values under 0 are not
// counted): a flat table when the values are small, as topology ids are.
std::map<int, int> CountByKey(const std::vector<const GpuSlot*>& free, int GpuSlot::*key) {
  std::map<int, int> counts;
  for (const GpuSlot* g : free) {
    if (g->*key >= 0) counts[g->*key]++;
  }
  return counts;
}

std::vector<int> FlatCounts(const std::vector<const GpuSlot*>& free, int GpuSlot::*key, bool* is_flat) {
  int max_key = -1;
  for (const GpuSlot* g : free) max_key = std::max(max_key, g->*key);
  *is_flat = max_key < 65536;
  std::vector<int> counts;
  if (!*is_flat) return counts;
  counts.assign(static_cast<size_t>(max_key + 1), 0);
  for (const GpuSlot* g : free) {
    if (g->*key >= 0) counts[static_cast<size_t>(g->*key)]++;
  }
  return counts;
}

// The free GPUs of the best group by `key` (-1: not grouped) that holds
// `count`: the smallest group that fits, on a tie the one whose first GPU
// comes first in `free`, in `free`'s order. Empty when no group holds
// `count`.
std::vector<const GpuSlot*> OneGroup(const std::vector<const GpuSlot*>& free, int count, int GpuSlot::*key) {
  bool is_flat = false;
  std::vector<int> flat = FlatCounts(free, key, &is_flat);
  std::map<int, int> counts = is_flat ? std::map<int, int>() : CountByKey(free, key);
  auto size_of = [&](int value) { return is_flat ? flat[static_cast<size_t>(value)] : counts[value]; };
  int best_size = 0;
  for (const GpuSlot* g : free) {
    int size = g->*key >= 0 ? size_of(g->*key) : 0;
    if (size >= count && (best_size == 0 || size < best_size)) best_size = size;
  }
  std::vector<const GpuSlot*> members;
  if (best_size == 0) return members;
  int best_key = -1;
  for (const GpuSlot* g : free) {
    if (g->*key >= 0 && size_of(g->*key) == best_size) {
      best_key = g->*key;
      break;
    }
  }
  members.reserve(static_cast<size_t>(best_size));
  for (const GpuSlot* g : free) {
    if (g->*key == best_key) members.push_back(g);
  }
  return members;
}

// `count` GPUs from `free`: from one group by the coarsest key from `level`
// on (NVLink domain, PCIe switch, NUMA node) that can hold them, and within
// that group by the next keys, so that, say, two GPUs of an all-NVLink node
// also share a NUMA node when they can.
std::vector<int> FromGroups(const std::vector<const GpuSlot*>& free, int count, size_t level) {
  static constexpr int GpuSlot::*kKeys[] = {&GpuSlot::nvlink_domain, &GpuSlot::pcie_switch,
                                            &GpuSlot::numa_node};
  for (size_t k = level; k < std::size(kKeys); ++k) {
    std::vector<const GpuSlot*> group = OneGroup(free, count, kKeys[k]);
    if (group.empty()) continue;
    if (static_cast<int>(group.size()) == count) {
      std::vector<int> picked;
      for (const GpuSlot* g : group) picked.push_back(g->index);
      return picked;
    }
    return FromGroups(group, count, k + 1);
  }
  std::vector<int> picked;
  for (int i = 0; i < count; ++i) picked.push_back(free[static_cast<size_t>(i)]->index);
  return picked;
}

}  // namespace

bool WantsMig(const GpuWants& wants) {
  return !wants.mig_profile.empty() || (wants.uuids.size() == 1 && nvidia::IsMigUuid(wants.uuids[0]));
}

NotFree WhyNotFree(const GpuSlot& gpu, int64_t min_free_memory_bytes, Override change) {
  if (change == Override::kTaken) return NotFree::kTaken;
  if (!gpu.is_healthy) return NotFree::kDrain;
  if (gpu.is_mig_enabled) return NotFree::kMig;
  if (gpu.is_leased && change != Override::kReleased) return NotFree::kLeased;
  if (gpu.has_foreign_processes) return NotFree::kForeignProcesses;
  if (gpu.is_busy) return NotFree::kBusy;
  if (gpu.memory_free_bytes < min_free_memory_bytes) return NotFree::kMemory;
  return NotFree::kFree;
}

std::optional<std::vector<int>> PickGpus(const std::vector<GpuSlot>& gpus, const GpuWants& wants,
                                         const Overrides& overrides) {
  if (wants.allows_unhealthy) {  // Those GPUs as if healthy, for this request only.
    std::vector<GpuSlot> allowed = gpus;
    for (GpuSlot& g : allowed) g.is_healthy |= g.is_drain_overridable;
    GpuWants plain = wants;
    plain.allows_unhealthy = false;
    return PickGpus(allowed, plain, overrides);
  }
  auto change = [&](const GpuSlot& g) {
    size_t i = static_cast<size_t>(g.index);
    return i < overrides.size() ? overrides[i] : Override::kNone;
  };
  if (!wants.uuids.empty()) {
    std::vector<int> picked;
    for (const std::string& uuid : wants.uuids) {
      auto it = std::find_if(gpus.begin(), gpus.end(), [&](const GpuSlot& g) { return g.uuid == uuid; });
      if (it == gpus.end() || !IsFree(*it, wants.min_free_memory_bytes, change(*it))) return std::nullopt;
      if (std::find(picked.begin(), picked.end(), it->index) != picked.end())
        return std::nullopt;  // Named twice.
      picked.push_back(it->index);
    }
    return picked;
  }
  if (wants.gpu_count <= 0) return std::nullopt;
  std::vector<const GpuSlot*> free;
  free.reserve(gpus.size());
  for (const GpuSlot& g : gpus) {
    if (IsFree(g, wants.min_free_memory_bytes, change(g))) free.push_back(&g);
  }
  if (static_cast<int>(free.size()) < wants.gpu_count) return std::nullopt;
  // Degraded GPUs only when the ok ones cannot serve the request.
  std::vector<const GpuSlot*> ok;
  for (const GpuSlot* g : free) {
    if (!g->is_degraded) ok.push_back(g);
  }
  if (static_cast<int>(ok.size()) >= wants.gpu_count && ok.size() < free.size()) free = std::move(ok);
  if (wants.gpu_count == 1) {
    // One GPU: one without NVLink first, else one from the most broken-up
    // NVLink domain, so whole domains stay free for multi-GPU work.
    bool is_flat = false;
    std::vector<int> flat = FlatCounts(free, &GpuSlot::nvlink_domain, &is_flat);
    std::map<int, int> counts = is_flat ? std::map<int, int>() : CountByKey(free, &GpuSlot::nvlink_domain);
    auto score = [&](const GpuSlot* g) {
      if (g->nvlink_domain < 0) return 0;
      return is_flat ? flat[static_cast<size_t>(g->nvlink_domain)] : counts[g->nvlink_domain];
    };
    const GpuSlot* best = free.front();
    int best_score = score(best);
    for (const GpuSlot* g : free) {
      int sc = score(g);
      if (sc < best_score) {
        best = g;
        best_score = sc;
      }
    }
    return std::vector<int>{best->index};
  }
  return FromGroups(free, wants.gpu_count, 0);
}

}  // namespace tarmac::sched
