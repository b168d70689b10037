// SPDX-License-Identifier: Apache-2.0
#include "node/gpu_charge.h"

#include <algorithm>
#include <optional>
#include <set>

#include "common/enum_names.h"
#include "node/gpu_marks.h"

namespace tarmac::node {
namespace {

std::string UserOf(const ProcessView& p) {
  if (!p.details.user.empty()) return p.details.user;
  return p.details.uid >= 0 ? std::to_string(p.details.uid) : "unknown";
}

// Adds `share` in `state` to the lease's user, or split among the users of
// `processes` (those in `instance` under MIG), to `out`.
void Charge(const GpuLease* lease, const std::vector<ProcessView>& processes, std::optional<int> instance,
            ChargeState state, double share, std::vector<GpuCharge>* out) {
  auto add = [&](const std::string& user, ChargeHolder held_by, double part) {
    for (GpuCharge& c : *out) {
      if (c.user == user && c.held_by == held_by && c.state == state) {
        c.share += part;
        return;
      }
    }
    out->push_back(GpuCharge{user, held_by, state, part});
  };
  if (lease != nullptr) {
    add(lease->user, ChargeHolder::kLease, share);
    return;
  }
  std::set<std::string> users;
  for (const ProcessView& p : processes) {
    if (IsCompute(p) && (!instance || p.process.gpu_instance_id == instance)) users.insert(UserOf(p));
  }
  for (const std::string& user : users)
    add(user, ChargeHolder::kProcess, share / static_cast<double>(users.size()));
}

}  // namespace

namespace {
constexpr std::pair<ChargeHolder, const char*> kHolderNames[] = {{ChargeHolder::kLease, "lease"},
                                                                 {ChargeHolder::kProcess, "process"}};
constexpr std::pair<ChargeState, const char*> kStateNames[] = {
    {ChargeState::kBusy, "busy"}, {ChargeState::kIdle, "idle"}, {ChargeState::kUnknown, "unknown"}};
}  // namespace

const char* ChargeHolderName(ChargeHolder holder) { return EnumName(kHolderNames, holder); }

const char* ChargeStateName(ChargeState state) { return EnumName(kStateNames, state); }

std::vector<GpuCharge> ChargeGpu(const GpuView& gpu) {
  return ChargeGpu(gpu, gpu.lease ? &*gpu.lease : nullptr, gpu.mig_leases);
}

std::vector<GpuCharge> ChargeGpu(const GpuView& gpu, const GpuLease* lease,
                                 const std::map<std::string, GpuLease>& mig_leases) {
  std::vector<GpuCharge> out;
  const bool is_readable = gpu.sample.health == GpuHealth::kOk;
  const std::vector<MigInstance>& instances = gpu.sample.mig_instances;
  if (instances.empty()) {
    ChargeState state = !is_readable           ? ChargeState::kUnknown
                        : MarkGpu(gpu).is_idle ? ChargeState::kIdle
                                               : ChargeState::kBusy;
    Charge(lease, gpu.processes, std::nullopt, state, 1.0, &out);
    return out;
  }
  int64_t instances_bytes = 0;
  for (const MigInstance& m : instances) instances_bytes += m.memory_total_bytes.value_or(0);
  const int64_t gpu_bytes = gpu.info.memory_total_bytes.value_or(0);
  for (const MigInstance& m : instances) {
    double share = 1.0 / static_cast<double>(instances.size());
    if (gpu_bytes > 0 && m.memory_total_bytes && *m.memory_total_bytes > 0)
      share = static_cast<double>(*m.memory_total_bytes) /
              static_cast<double>(std::max(gpu_bytes, instances_bytes));
    ChargeState state = !is_readable                ? ChargeState::kUnknown
                        : IsMigInstanceIdle(m, gpu) ? ChargeState::kIdle
                                                    : ChargeState::kBusy;
    auto held = mig_leases.find(m.uuid);
    Charge(held != mig_leases.end() ? &held->second : nullptr, gpu.processes, m.gpu_instance_id, state, share,
           &out);
  }
  return out;
}

}  // namespace tarmac::node
