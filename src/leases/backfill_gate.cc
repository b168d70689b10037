// SPDX-License-Identifier: Apache-2.0
#include "leases/backfill_gate.h"

#include <algorithm>

#include "leases/lease_helpers.h"

namespace tarmac::leases {

BackfillGate::BackfillGate(BackfillPolicy policy) { SetPolicy(std::move(policy)); }

void BackfillGate::SetPolicy(BackfillPolicy policy) {
  policy_ = std::move(policy);
  windows_.clear();
  for (const std::string& text : policy_.windows) {
    TimeWindow w;
    if (ParseWindow(text, &w)) windows_.push_back(w);  // The config refuses any other.
  }
}

bool BackfillGate::Accepts(const std::string& uuid, bool is_used, const fleet::GpuSample& gpu, TimePoint now,
                           int minute_of_day) {
  bool is_in_window = policy_.windows.empty() || std::any_of(windows_.begin(), windows_.end(),
                                                      [&](const TimeWindow& w) { return w.Contains(minute_of_day); });
  auto [it, is_new] = last_used_.emplace(uuid, now);
  if (is_used) it->second = now;
  (void)is_new;
  bool is_idle_long_enough = now - it->second >= policy_.idle_for;
  bool is_cool = policy_.max_temperature_celsius <= 0 ||
                 gpu.temperature_celsius.value_or(0) < static_cast<double>(policy_.max_temperature_celsius);
  bool is_under_power = policy_.max_power_watts <= 0 || gpu.power_milliwatts.value_or(0) < policy_.max_power_watts * 1000;
  return is_in_window && is_idle_long_enough && is_cool && is_under_power;
}

std::vector<bool> BackfillGate::Observe(const fleet::FleetView& fleet, const std::vector<Holder>& holders,
                                        TimePoint now, int minute_of_day) {
  std::vector<bool> accepts(fleet.gpus.size(), false);
  for (size_t i = 0; i < fleet.gpus.size(); ++i) {
    const fleet::GpuView& g = fleet.gpus[i];
    Holder holder = i < holders.size() ? holders[i] : Holder::kNone;
    bool has_foreign = holder == Holder::kNone &&
                       std::any_of(g.processes.begin(), g.processes.end(), lease_helpers::IsCompute);
    bool is_busy = holder == Holder::kNone && g.sample.utilization_gpu_ratio.value_or(0) > 0;
    accepts[i] = Accepts(g.info.uuid, holder == Holder::kOther || has_foreign || is_busy, g.sample, now, minute_of_day);
  }
  return accepts;
}

std::map<std::string, bool> BackfillGate::ObserveInstances(const fleet::FleetView& fleet,
                                                           const std::map<std::string, Holder>& holders, TimePoint now,
                                                           int minute_of_day) {
  std::map<std::string, bool> accepts;
  for (const fleet::GpuView& g : fleet.gpus) {
    for (const fleet::MigInstance& m : g.sample.mig_instances) {
      auto found = holders.find(m.uuid);
      Holder holder = found != holders.end() ? found->second : Holder::kNone;
      bool has_foreign = holder == Holder::kNone &&
                         std::any_of(g.processes.begin(), g.processes.end(), [&](const fleet::ProcessView& p) {
                           return p.process.gpu_instance_id == m.gpu_instance_id && lease_helpers::IsCompute(p);
                         });
      bool is_busy = holder == Holder::kNone && m.graphics_engine_active_ratio.value_or(0) > 0;
      accepts[m.uuid] = Accepts(m.uuid, holder == Holder::kOther || has_foreign || is_busy, g.sample, now, minute_of_day);
    }
  }
  return accepts;
}

}  // namespace tarmac::leases
