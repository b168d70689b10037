// SPDX-License-Identifier: Apache-2.0
#include "leases/backfill_gate.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/units.h"

#include "leases/lease_helpers.h"

namespace tarmac::leases {
namespace {

// What other work uses a device, in words; empty when none does.
std::string UsedBy(Holder holder, bool has_foreign, bool is_busy) {
  if (holder == Holder::kOther) return "another lease holds it";
  if (has_foreign) return "a process outside any lease runs on it";
  if (is_busy) return "its SM is busy";
  return "";
}

}  // namespace

BackfillGate::BackfillGate(BackfillPolicy policy) { SetPolicy(std::move(policy)); }

void BackfillGate::SetPolicy(BackfillPolicy policy) {
  policy_ = std::move(policy);
  windows_.clear();
  for (const std::string& text : policy_.windows) {
    TimeWindow w;
    if (ParseWindow(text, &w)) windows_.push_back(w);  // The config refuses any other.
  }
}

void BackfillGate::SeedLastUse(const std::map<std::string, TimePoint>& last_used) {
  for (const auto& [uuid, at] : last_used) last_used_.emplace(uuid, at);
}

int BackfillGate::MinutesToWindow(int minute_of_day) const {
  int best = 24 * 60;
  for (const TimeWindow& w : windows_) best = std::min(best, (w.from_minute - minute_of_day + 24 * 60) % (24 * 60));
  return best;
}

bool BackfillGate::Accepts(const std::string& uuid, const std::string& used_by, const fleet::GpuSample& gpu,
                           TimePoint now, int minute_of_day) {
  using std::chrono::duration_cast;
  using std::chrono::milliseconds;
  bool is_in_window = policy_.windows.empty() || std::any_of(windows_.begin(), windows_.end(),
                                                      [&](const TimeWindow& w) { return w.Contains(minute_of_day); });
  auto [it, is_new] = last_used_.emplace(uuid, now);
  if (!used_by.empty()) it->second = now;
  (void)is_new;
  milliseconds idle = duration_cast<milliseconds>(now - it->second);
  bool is_idle_long_enough = idle >= policy_.idle_for;
  bool is_cool = policy_.max_temperature_celsius <= 0 ||
                 gpu.temperature_celsius.value_or(0) < static_cast<double>(policy_.max_temperature_celsius);
  bool is_under_power = policy_.max_power_watts <= 0 || gpu.power_milliwatts.value_or(0) < policy_.max_power_watts * 1000;
  GateVerdict v;
  v.accepts = is_in_window && is_idle_long_enough && is_cool && is_under_power;
  if (!used_by.empty()) {
    v.why = "in use: " + used_by;
  } else if (!is_cool) {
    v.why = fmt::format("at {:.0f} °C, over [backfill] max_temperature {} °C", gpu.temperature_celsius.value_or(0),
                        policy_.max_temperature_celsius);
  } else if (!is_under_power) {
    v.why = fmt::format("drawing {:.0f} W, over [backfill] max_power {} W",
                        static_cast<double>(gpu.power_milliwatts.value_or(0)) / 1000, policy_.max_power_watts);
  } else if (!is_idle_long_enough) {
    v.why = fmt::format("idle {} of idle_for {}", FormatDuration(idle), FormatDuration(policy_.idle_for));
    v.starts_in = policy_.idle_for - idle;
  } else if (!is_in_window) {
    v.why = fmt::format("idle {}; outside the backfill windows", FormatDuration(idle));
  } else {
    v.why = fmt::format("accepts backfill (idle {})", FormatDuration(idle));
  }
  if (!is_in_window && v.why.rfind("in use", 0) != 0) {
    // The next window's start, or idle_for's end if that is later.
    milliseconds to_window = duration_cast<milliseconds>(std::chrono::minutes(MinutesToWindow(minute_of_day)));
    v.starts_in = std::max(to_window, v.starts_in.value_or(milliseconds(0)));
  }
  verdicts_[uuid] = v;
  return v.accepts;
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
    accepts[i] = Accepts(g.info.uuid, UsedBy(holder, has_foreign, is_busy), g.sample, now, minute_of_day);
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
      accepts[m.uuid] = Accepts(m.uuid, UsedBy(holder, has_foreign, is_busy), g.sample, now, minute_of_day);
    }
  }
  return accepts;
}

}  // namespace tarmac::leases
