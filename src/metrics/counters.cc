// SPDX-License-Identifier: Apache-2.0
#include "metrics/counters.h"

#include <algorithm>

#include "nvidia/clock_event_reasons.h"
#include "fleet/gpu_marks.h"

namespace tarmac::metrics {

FleetCounters::FleetCounters(std::function<double(const std::string& model)> price) : price_(std::move(price)) {}

void FleetCounters::Update(const fleet::FleetView& fleet, const fleet::LeaseMarks& marks,
                           std::chrono::steady_clock::time_point at) {
  double dt = 0;
  if (previous_) {
    dt = std::chrono::duration<double>(std::min<std::chrono::steady_clock::duration>(at - *previous_, kMaxStep))
             .count();
  }
  previous_ = at;
  MutexLock lock(&mu_);
  for (const fleet::GpuView& g : fleet.gpus) {
    auto [entry, is_new] = by_uuid_.try_emplace(g.info.uuid);
    GpuCounters& c = entry->second;
    if (is_new) {  // Every series from the first scrape on, at 0.
      for (const nvidia::ClockEventReason& r : nvidia::ClockEventReasons()) {
        if (r.is_throttle) c.throttle_seconds.emplace(std::string(r.name), 0.0);
      }
      for (const char* state : {"busy", "idle", "held_idle", "unknown"}) c.state_seconds.emplace(state, 0.0);
    }
    if (dt > 0) {
      auto add = [&](const fleet::GpuLease& l) {
        c.lease_seconds[{l.user, std::string(fleet::LeaseKindName(l.kind))}] += dt;
      };
      if (auto it = marks.leases.find(g.info.index); it != marks.leases.end()) add(it->second);
      for (const fleet::MigInstance& m : g.sample.mig_instances) {
        if (auto it = marks.mig_leases.find(m.uuid); it != marks.mig_leases.end()) add(it->second);
      }
    }
    if (g.sample.health != fleet::GpuHealth::kOk) {
      c.state_seconds["unknown"] += dt;
      // An unreadable GPU is not known to be idle: its spells end.
      c.idle_for_seconds = c.idle_for_cost = c.held_idle_for_seconds = 0;
      continue;
    }
    fleet::GpuMarks m = fleet::MarkGpu(g);
    if (!m.is_idle) c.idle_for_seconds = c.idle_for_cost = 0;
    if (m.idle_holding_pids.empty()) c.held_idle_for_seconds = 0;
    if (dt <= 0) continue;
    c.state_seconds[!m.is_idle ? "busy" : m.idle_holding_pids.empty() ? "idle" : "held_idle"] += dt;
    if (m.is_idle) {
      double cost = dt / 3600.0 * price_(g.info.name);
      c.idle_seconds += dt;
      c.idle_cost += cost;
      c.idle_for_seconds += dt;
      c.idle_for_cost += cost;
    }
    if (!m.idle_holding_pids.empty()) {
      c.held_idle_seconds += dt;
      c.held_idle_for_seconds += dt;
    }
    for (const std::string& reason : m.throttle_reasons) c.throttle_seconds[reason] += dt;
  }
}

std::map<std::string, GpuCounters> FleetCounters::Get() const {
  MutexLock lock(&mu_);
  return by_uuid_;
}

}  // namespace tarmac::metrics
