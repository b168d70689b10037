// SPDX-License-Identifier: Apache-2.0
#include "store/fold.h"

#include <algorithm>

#include "node/gpu_marks.h"
#include "nvidia/clock_event_reasons.h"

namespace tarmac::store {
namespace {

constexpr int64_t kIdlePercent = static_cast<int64_t>(node::kIdleUtilizationRatio * 100);
constexpr uint64_t kThermal = nvidia::kReasonSwThermalSlowdown | nvidia::kReasonHwThermalSlowdown;
constexpr uint64_t kPower = nvidia::kReasonSwPowerCap | nvidia::kReasonHwPowerBrakeSlowdown;
constexpr uint64_t kOther = nvidia::kReasonHwSlowdown;

// How long each sample of `times` stands for: until the next one (the
// minute's last until the minute ends), or until the node's next stop when
// that comes first, at least a second and at most `max_gap_seconds`.
std::vector<int64_t> Weights(int64_t minute, const std::vector<int64_t>& times,
                             const std::vector<int64_t>& stops, int64_t max_gap_seconds) {
  std::vector<int64_t> dt(times.size());
  for (size_t i = 0; i < times.size(); ++i) {
    int64_t next = i + 1 < times.size() ? times[i + 1] : (minute + 1) * 60;
    if (auto stop = std::upper_bound(stops.begin(), stops.end(), times[i]); stop != stops.end())
      next = std::min(next, *stop);
    dt[i] = std::clamp<int64_t>(next - times[i], 1, std::max<int64_t>(max_gap_seconds, 1));
  }
  return dt;
}

template <typename T>
void Append(const T& values, int64_t t, Block* b) {
  if (b->columns.empty()) b->columns.resize(values.size());
  b->times.push_back(t);
  for (size_t c = 0; c < values.size(); ++c) b->columns[c].push_back(values[c]);
}

}  // namespace

namespace {

// Rollup of one GPU's block, each sample standing for its `dt`.
GpuMinuteRollup RollUpWeighted(const Block& block, const std::vector<int64_t>& dt) {
  GpuMinuteRollup r;
  int64_t utilization_seconds = 0;
  int64_t memory_sum = 0;
  int64_t memory_seconds = 0;
  int64_t power_seconds = 0;
  for (size_t i = 0; i < block.times.size(); ++i) {
    auto at = [&](GpuColumn c) { return block.columns[c][i]; };
    r.covered_seconds += dt[i];
    if (std::optional<int64_t> u = at(kUtilizationPercent)) {
      int64_t permille = *u * 10;
      r.utilization_min_permille = std::min(r.utilization_min_permille.value_or(permille), permille);
      r.utilization_max_permille = std::max(r.utilization_max_permille.value_or(permille), permille);
      r.utilization_sum_permille_seconds += permille * dt[i];
      utilization_seconds += dt[i];
      if (*u < kIdlePercent) r.idle_seconds += dt[i];
    } else {
      r.unknown_seconds += dt[i];
    }
    if (std::optional<int64_t> m = at(kMemoryUsedMib)) {
      memory_sum += *m * dt[i];
      memory_seconds += dt[i];
      r.memory_used_max_mib = std::max(r.memory_used_max_mib.value_or(*m), *m);
    }
    if (std::optional<int64_t> p = at(kPowerDeciwatts)) {
      r.power_sum_deciwatt_seconds += *p * dt[i];
      power_seconds += dt[i];
    }
    if (std::optional<int64_t> t = at(kTemperatureCelsius)) {
      r.temperature_max_celsius = std::max(r.temperature_max_celsius.value_or(*t), *t);
    }
    if (at(kHeldIdle).value_or(0) != 0) r.held_idle_seconds += dt[i];
    if (at(kBackfill).value_or(0) != 0) r.backfill_seconds += dt[i];
    uint64_t reasons = static_cast<uint64_t>(at(kClockEventReasons).value_or(0));
    if (reasons & kThermal) r.throttle_thermal_seconds += dt[i];
    if (reasons & kPower) r.throttle_power_seconds += dt[i];
    if (reasons & kOther) r.throttle_other_seconds += dt[i];
  }
  if (utilization_seconds > 0)
    r.utilization_mean_permille = r.utilization_sum_permille_seconds / utilization_seconds;
  if (memory_seconds > 0) r.memory_used_mean_mib = memory_sum / memory_seconds;
  if (power_seconds > 0) r.power_mean_deciwatts = r.power_sum_deciwatt_seconds / power_seconds;
  r.energy_joules = r.power_sum_deciwatt_seconds / 10;
  return r;
}

}  // namespace

GpuMinuteRollup RollUpGpu(int64_t minute, const Block& block, int64_t max_gap_seconds,
                          const std::vector<int64_t>& stops) {
  return RollUpWeighted(block, Weights(minute, block.times, stops, max_gap_seconds));
}

void MinuteFolder::Add(const TickRecord& tick) {
  if (tick.gpus.empty() && tick.processes.empty()) stops_.push_back(tick.t);
  for (const GpuTick& g : tick.gpus) Append(g.values, tick.t, &folded_.gpu_blocks[g.gpu_id]);
  for (const ProcessTick& p : tick.processes) Append(p.values, tick.t, &folded_.process_blocks[p.session_id]);
  for (const ChargeTick& c : tick.charges) charges_.emplace_back(tick.t, c);
  last_t_ = tick.t;
}

FoldedMinute MinuteFolder::Finish(int64_t max_gap_seconds) && {
  FoldedMinute f = std::move(folded_);
  int64_t minute = f.minute;
  std::map<std::pair<int64_t, int64_t>, int64_t> gpu_sample_seconds;  // By (gpu_id, t).
  for (const auto& [gpu_id, block] : f.gpu_blocks) {
    std::vector<int64_t> dt = Weights(minute, block.times, stops_, max_gap_seconds);
    f.gpu_rollups[gpu_id] = RollUpWeighted(block, dt);
    for (size_t i = 0; i < dt.size(); ++i) gpu_sample_seconds[{gpu_id, block.times[i]}] = dt[i];
  }
  for (const auto& [t, c] : charges_) {
    auto seconds = gpu_sample_seconds.find({c.gpu_id, t});
    if (seconds == gpu_sample_seconds.end()) continue;  // No sample of its GPU: no time to charge.
    f.charge_milliseconds[ChargeKey{c.gpu_id, c.user_id, c.held_by, c.state}] +=
        seconds->second * c.share_permille;
  }
  for (const auto& [session_id, block] : f.process_blocks) {
    ProcessMinuteRollup& r = f.process_rollups[session_id];
    std::vector<int64_t> dt = Weights(minute, block.times, stops_, max_gap_seconds);
    for (size_t i = 0; i < block.times.size(); ++i) {
      int64_t memory = block.columns[kProcessMemoryMib][i].value_or(0);
      std::optional<int64_t> sm = block.columns[kProcessSmPercent][i];
      r.seen_seconds += dt[i];
      if (sm.value_or(0) > 0) r.busy_seconds += dt[i];
      r.memory_mib_seconds += memory * dt[i];
      if (block.columns[kProcessHeldIdle][i].value_or(0) != 0) {
        r.held_idle_seconds += dt[i];
        r.held_idle_memory_mib_seconds += memory * dt[i];
      }
      r.memory_max_mib = std::max(r.memory_max_mib, memory);
      r.last_seen = block.times[i];
    }
  }
  return f;
}

}  // namespace tarmac::store
