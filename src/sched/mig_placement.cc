// SPDX-License-Identifier: Apache-2.0
#include "sched/mig_placement.h"

#include <fmt/format.h>

#include <map>
#include <utility>

namespace tarmac::sched {
namespace {

bool IsFreeInstance(const GpuSlot& g, const MigSlot& m) {
  return g.is_healthy && !m.is_leased && !m.has_foreign_processes;
}

}  // namespace

const MigSlot* FindMigSlot(const std::vector<GpuSlot>& gpus, const std::string& uuid, int* gpu) {
  for (const GpuSlot& g : gpus) {
    for (const MigSlot& m : g.mig) {
      if (m.uuid != uuid) continue;
      if (gpu != nullptr) *gpu = g.index;
      return &m;
    }
  }
  return nullptr;
}

Status CheckMigWants(const GpuWants& wants, const std::vector<GpuSlot>& gpus) {
  if (wants.uuids.size() > 1) return Status::InvalidArgument("mig: a lease takes one MIG instance");
  if (!wants.uuids.empty()) {
    if (FindMigSlot(gpus, wants.uuids[0]) == nullptr) {
      return Status::InvalidArgument("mig-uuid: no such MIG instance on this machine", wants.uuids[0]);
    }
    return Status::OK();
  }
  std::map<std::string, int> count;
  for (const GpuSlot& g : gpus) {
    for (const MigSlot& m : g.mig) count[m.profile]++;
  }
  if (count.count(wants.mig_profile) != 0) return Status::OK();
  std::string have;
  for (const auto& [profile, n] : count)
    have += fmt::format("{}{} x{}", have.empty() ? "" : ", ", profile, n);
  if (have.empty()) {
    return Status::InvalidArgument(
        fmt::format("can never fit: no MIG instance of profile '{}': this machine has no MIG instances",
                    wants.mig_profile));
  }
  return Status::InvalidArgument(
      fmt::format("can never fit: no MIG instance of profile '{}' on this machine "
                  "(it has {})",
                  wants.mig_profile, have));
}

std::optional<MigPick> PickMigInstance(const std::vector<GpuSlot>& gpus, const GpuWants& wants,
                                       bool is_backfill) {
  std::optional<MigPick> best;
  int best_free = 0;
  bool best_is_degraded = false;
  for (const GpuSlot& g : gpus) {
    int free = 0;
    for (const MigSlot& m : g.mig) free += IsFreeInstance(g, m) ? 1 : 0;
    for (const MigSlot& m : g.mig) {
      if (!IsFreeInstance(g, m) || (is_backfill && !m.accepts_backfill)) continue;
      bool matches = wants.uuids.empty() ? m.profile == wants.mig_profile : m.uuid == wants.uuids[0];
      if (!matches) continue;
      // An instance of an ok GPU before one of a degraded GPU (as whole
      // GPUs are taken: placement.h); then fewer free instances: more of
      // the GPU in use already (packing).
      if (!best || std::pair(g.is_degraded, free) < std::pair(best_is_degraded, best_free)) {
        best = MigPick{g.index, m.uuid, m.profile};
        best_free = free;
        best_is_degraded = g.is_degraded;
      }
      break;  // The GPU's first match is its best.
    }
  }
  return best;
}

}  // namespace tarmac::sched
