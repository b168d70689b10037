// SPDX-License-Identifier: Apache-2.0
#include "metrics/counters.h"

#include <algorithm>

#include "metrics/pod_labels.h"
#include "node/gpu_charge.h"
#include "node/gpu_marks.h"
#include "nvidia/clock_event_reasons.h"

namespace tarmac::metrics {
namespace {

// Adds `dt` seconds in `state` to the pod and the Slurm job holding a GPU
// or instance now (either may be absent).
void AddJobSeconds(const node::KubernetesNames* pod, const node::GpuLease* lease, const std::string& state,
                   double dt, std::chrono::steady_clock::time_point at, GpuCounters* c) {
  auto add = [&](JobKey key) {
    key.state = state;
    JobSeconds& j = c->job_seconds[key];
    j.seconds += dt;
    j.last_held = at;
  };
  if (pod != nullptr && !pod->pod.empty()) add(JobKey{pod->pod_namespace, pod->pod, "", ""});
  if (lease != nullptr && lease->kind == node::LeaseKind::kSlurm && !lease->slurm_job.empty()) {
    add(JobKey{"", "", lease->slurm_job, ""});
  }
}

// "busy", "idle" or "unknown": a holder's view of its GPU (held idle is
// idle to the holder).
const char* JobState(const node::GpuView& g) {
  if (g.sample.health != node::GpuHealth::kOk) return "unknown";
  return node::MarkGpu(g).is_idle ? "idle" : "busy";
}

const char* JobState(const node::GpuView& g, const node::MigInstance& m) {
  if (g.sample.health != node::GpuHealth::kOk) return "unknown";
  return node::IsMigInstanceIdle(m, g) ? "idle" : "busy";
}

// Charges `dt` seconds of `g` (marked with `marks`) to its users.
void AddUserCharges(const node::GpuView& g, const node::LeaseMarks& marks, double dt, double price_per_hour,
                    std::chrono::steady_clock::time_point at, GpuCounters* c) {
  auto lease = marks.leases.find(g.info.index);
  for (const node::GpuCharge& charge :
       node::ChargeGpu(g, lease != marks.leases.end() ? &lease->second : nullptr, marks.mig_leases)) {
    UserCharge& u = c->user_charges[UserChargeKey{charge.user, node::ChargeHolderName(charge.held_by),
                                                  node::ChargeStateName(charge.state)}];
    u.seconds += dt * charge.share;
    u.cost += dt * charge.share / 3600.0 * price_per_hour;
    u.last_held = at;
  }
}

}  // namespace

NodeCounters::NodeCounters(std::function<double(const std::string& model)> price)
    : price_(std::move(price)) {}

void NodeCounters::Update(const node::NodeView& node_view, const node::LeaseMarks& marks,
                          std::chrono::steady_clock::time_point at) {
  double dt = 0;
  if (previous_) {
    dt = std::chrono::duration<double>(
             std::min<std::chrono::steady_clock::duration>(at - *previous_, kMaxStep))
             .count();
  }
  previous_ = at;
  MutexLock lock(&mu_);
  for (const node::GpuView& g : node_view.gpus) {
    auto [entry, is_new] = by_uuid_.try_emplace(g.info.uuid);
    GpuCounters& c = entry->second;
    if (is_new) {  // Every series from the first scrape on, at 0.
      for (const nvidia::ClockEventReason& r : nvidia::ClockEventReasons()) {
        if (r.is_throttle) c.throttle_seconds.emplace(std::string(r.name), 0.0);
      }
      for (const char* state : {"busy", "idle", "held_idle", "unknown"}) c.state_seconds.emplace(state, 0.0);
    }
    if (dt > 0) {
      auto add = [&](const node::GpuLease& l) {
        c.lease_seconds[{l.user, std::string(node::LeaseKindName(l.kind))}] += dt;
      };
      auto lease = marks.leases.find(g.info.index);
      if (lease != marks.leases.end()) add(lease->second);
      if (g.sample.mig_instances.empty()) {
        AddJobSeconds(GpuPod(g), lease != marks.leases.end() ? &lease->second : nullptr, JobState(g), dt, at,
                      &c);
      }
      for (const node::MigInstance& m : g.sample.mig_instances) {
        auto mig_lease = marks.mig_leases.find(m.uuid);
        if (mig_lease != marks.mig_leases.end()) add(mig_lease->second);
        AddJobSeconds(MigInstancePod(g, m),
                      mig_lease != marks.mig_leases.end() ? &mig_lease->second : nullptr, JobState(g, m), dt,
                      at, &c);
      }
    }
    if (dt > 0) AddUserCharges(g, marks, dt, price_(g.info.name), at, &c);
    std::erase_if(c.job_seconds, [&](const auto& j) { return at - j.second.last_held > kJobSeriesKeep; });
    std::erase_if(c.user_charges, [&](const auto& u) { return at - u.second.last_held > kJobSeriesKeep; });
    if (g.sample.health != node::GpuHealth::kOk) {
      c.state_seconds["unknown"] += dt;
      // An unreadable GPU is not known to be idle: its spells end.
      c.idle_for_seconds = c.idle_for_cost = c.held_idle_for_seconds = 0;
      continue;
    }
    node::GpuMarks m = node::MarkGpu(g);
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

std::map<std::string, GpuCounters> NodeCounters::Get() const {
  MutexLock lock(&mu_);
  return by_uuid_;
}

}  // namespace tarmac::metrics
