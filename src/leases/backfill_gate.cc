// SPDX-License-Identifier: Apache-2.0
#include "leases/backfill_gate.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/units.h"
#include "leases/lease_text.h"

namespace tarmac::leases {
namespace {

// What other work uses a device, in words; null when none does.
const char* UsedBy(Holder holder, bool has_foreign, bool is_busy) {
  if (holder == Holder::kOther) return "another lease holds it";
  if (has_foreign) return "a process outside any lease runs on it";
  if (is_busy) return "its SM is busy";
  return nullptr;
}

}  // namespace

BackfillGate::BackfillGate(BackfillPolicy policy, double since_unix) : arrivals_(since_unix) {
  SetPolicy(std::move(policy));
}

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

void BackfillGate::NoteUse(const std::string& uuid, TimePoint at) {
  auto [it, is_new] = last_used_.emplace(uuid, at);
  if (!is_new && it->second < at) it->second = at;
}

int BackfillGate::MinutesToWindow(int minute_of_day) const {
  int best = 24 * 60;
  for (const TimeWindow& w : windows_)
    best = std::min(best, (w.from_minute - minute_of_day + 24 * 60) % (24 * 60));
  return best;
}

bool BackfillGate::Accepts(const std::string& uuid, const char* used_by, const node::GpuSample& gpu,
                           int gpu_index, bool is_wanted, TimePoint now, const GateContext& context) {
  using std::chrono::duration_cast;
  using std::chrono::milliseconds;
  bool is_in_window = policy_.windows.empty() ||
                      std::any_of(windows_.begin(), windows_.end(),
                                  [&](const TimeWindow& w) { return w.Contains(context.minute_of_day); });
  auto it = last_used_.emplace(uuid, now).first;
  if (used_by != nullptr) it->second = now;
  milliseconds idle = duration_cast<milliseconds>(now - it->second);
  milliseconds wait = policy_.is_auto ? policy_.settle : policy_.idle_for;
  bool is_idle_long_enough = idle >= wait;
  bool is_cool = policy_.max_temperature_celsius <= 0 ||
                 gpu.temperature_celsius.value_or(0) < static_cast<double>(policy_.max_temperature_celsius);
  bool is_under_power =
      policy_.max_power_watts <= 0 || gpu.power_milliwatts.value_or(0) < policy_.max_power_watts * 1000;
  GateVerdict& v = verdicts_[uuid];
  v = GateVerdict{};
  if (policy_.is_auto) {
    v.arrivals_per_hour = arrivals_.RatePerHour(gpu_index, context.hour_of_week, context.now_unix);
    v.arrival_chance =
        arrivals_.ChanceWithin(gpu_index, context.hour_of_week, context.now_unix, policy_.min_run);
  }
  bool is_waited_for = policy_.is_auto && is_wanted;
  bool is_arrival_likely = policy_.is_auto && v.arrival_chance >= 0.5;
  v.accepts = is_in_window && is_idle_long_enough && is_cool && is_under_power && !is_waited_for &&
              !is_arrival_likely;
  v.idle = idle;
  v.temperature_celsius = gpu.temperature_celsius.value_or(0);
  v.power_watts = static_cast<double>(gpu.power_milliwatts.value_or(0)) / 1000;
  v.reason = used_by != nullptr     ? GateReason::kInUse
             : !is_cool             ? GateReason::kTooHot
             : !is_under_power      ? GateReason::kTooMuchPower
             : !is_idle_long_enough ? GateReason::kNotIdleLongEnough
             : is_waited_for        ? GateReason::kRequestWaits
             : is_arrival_likely    ? GateReason::kArrivalLikely
             : !is_in_window        ? GateReason::kOutsideWindows
                                    : GateReason::kAccepts;
  if (used_by != nullptr) v.used_by = used_by;
  if (v.reason == GateReason::kNotIdleLongEnough && !is_waited_for && !is_arrival_likely)
    v.starts_in = wait - idle;
  if (!is_in_window && v.reason != GateReason::kInUse && !is_waited_for && !is_arrival_likely) {
    // The next window's start, or the idle wait's end if that is later.
    milliseconds to_window =
        duration_cast<milliseconds>(std::chrono::minutes(MinutesToWindow(context.minute_of_day)));
    v.starts_in = std::max(to_window, v.starts_in.value_or(milliseconds(0)));
  }
  if (v.starts_in) v.opens_at = now + *v.starts_in;
  return v.accepts;
}

std::optional<std::chrono::steady_clock::time_point> BackfillGate::NextOpening() const {
  std::optional<std::chrono::steady_clock::time_point> first;
  for (const auto& [uuid, v] : verdicts_) {
    if (v.opens_at && (!first || *v.opens_at < *first)) first = v.opens_at;
  }
  return first;
}

std::string BackfillGate::Describe(const GateVerdict& v) const {
  std::string arrivals = fmt::format("arrivals at this hour {:.1f}/h", v.arrivals_per_hour);
  switch (v.reason) {
    case GateReason::kInUse:
      return std::string("in use: ") + v.used_by;
    case GateReason::kTooHot:
      return fmt::format("at {:.0f} °C, over [backfill] max_temperature {} °C", v.temperature_celsius,
                         policy_.max_temperature_celsius);
    case GateReason::kTooMuchPower:
      return fmt::format("drawing {:.0f} W, over [backfill] max_power {} W", v.power_watts,
                         policy_.max_power_watts);
    case GateReason::kNotIdleLongEnough:
      if (policy_.is_auto) {
        return fmt::format("settling: idle {} of settle {}", FormatDuration(v.idle),
                           FormatDuration(policy_.settle));
      }
      return fmt::format("idle {} of idle_for {}", FormatDuration(v.idle), FormatDuration(policy_.idle_for));
    case GateReason::kRequestWaits:
      return "holds off: kept for the request at the head of the queue";
    case GateReason::kArrivalLikely:
      return fmt::format("holds off: {}, one within min_run {} is likely ({:.0f} %)", arrivals,
                         FormatDuration(policy_.min_run), 100 * v.arrival_chance);
    case GateReason::kOutsideWindows:
      return fmt::format("idle {}; outside the backfill windows", FormatDuration(v.idle));
    case GateReason::kAccepts:
      break;
  }
  if (policy_.is_auto)
    return fmt::format("starts now: nothing queued, {} (idle {})", arrivals, FormatDuration(v.idle));
  return fmt::format("accepts backfill (idle {})", FormatDuration(v.idle));
}

std::vector<bool> BackfillGate::Observe(const node::NodeView& node_view, const std::vector<Holder>& holders,
                                        TimePoint now, const GateContext& context) {
  std::vector<bool> accepts(node_view.gpus.size(), false);
  for (size_t i = 0; i < node_view.gpus.size(); ++i) {
    const node::GpuView& g = node_view.gpus[i];
    Holder holder = i < holders.size() ? holders[i] : Holder::kNone;
    bool has_foreign =
        holder == Holder::kNone && std::any_of(g.processes.begin(), g.processes.end(), node::IsCompute);
    bool is_busy = holder == Holder::kNone && g.sample.utilization_gpu_ratio.value_or(0) > 0;
    int index = static_cast<int>(i);
    accepts[i] = Accepts(g.info.uuid, UsedBy(holder, has_foreign, is_busy), g.sample, index,
                         context.wanted_gpus.count(index) > 0, now, context);
  }
  return accepts;
}

std::map<std::string, bool> BackfillGate::ObserveInstances(const node::NodeView& node_view,
                                                           const std::map<std::string, Holder>& holders,
                                                           TimePoint now, const GateContext& context) {
  std::map<std::string, bool> accepts;
  for (size_t i = 0; i < node_view.gpus.size(); ++i) {
    const node::GpuView& g = node_view.gpus[i];
    for (const node::MigInstance& m : g.sample.mig_instances) {
      auto found = holders.find(m.uuid);
      Holder holder = found != holders.end() ? found->second : Holder::kNone;
      bool has_foreign = holder == Holder::kNone &&
                         std::any_of(g.processes.begin(), g.processes.end(), [&](const node::ProcessView& p) {
                           return p.process.gpu_instance_id == m.gpu_instance_id && node::IsCompute(p);
                         });
      bool is_busy = holder == Holder::kNone && m.graphics_engine_active_ratio.value_or(0) > 0;
      accepts[m.uuid] = Accepts(m.uuid, UsedBy(holder, has_foreign, is_busy), g.sample, static_cast<int>(i),
                                context.wanted_instances.count(m.uuid) > 0, now, context);
    }
  }
  return accepts;
}

}  // namespace tarmac::leases
