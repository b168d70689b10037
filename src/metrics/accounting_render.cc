// SPDX-License-Identifier: Apache-2.0
#include "metrics/accounting_render.h"

#include <array>
#include <string_view>

#include "metrics/family.h"
#include "node/metric_families.h"

namespace tarmac::metrics {
namespace {

// The families CollectIdle renders.
constexpr Family kGpuIdleSecondsTotal{node::family::kGpuIdleSecondsTotal, "counter",
                                      "Time the GPU spent under 5 % utilization."};
constexpr Family kGpuHeldIdleSecondsTotal{node::family::kGpuHeldIdleSecondsTotal, "counter",
                                          "Time a process held memory on the GPU at 0 % SM."};
constexpr Family kGpuIdleCostTotal{node::family::kGpuIdleCostTotal, "counter",
                                   "What the GPU's idle time cost, at the configured price."};
constexpr Family kGpuIdleForSeconds{
    node::family::kGpuIdleForSeconds, "gauge",
    "How long the GPU has been idle now (0 when it is not); since the agent started at most."};
constexpr Family kGpuIdleForCost{node::family::kGpuIdleForCost, "gauge",
                                 "What the idle spell going on now has cost, at the configured price."};
constexpr Family kGpuHeldIdleForSeconds{
    node::family::kGpuHeldIdleForSeconds, "gauge",
    "How long a process has held memory on the GPU at 0 % SM now (0 when none does)."};
constexpr std::array kIdleFamilies = {&kGpuIdleSecondsTotal, &kGpuHeldIdleSecondsTotal,
                                      &kGpuIdleCostTotal,    &kGpuIdleForSeconds,
                                      &kGpuIdleForCost,      &kGpuHeldIdleForSeconds};
constexpr Family kGpuStateSecondsTotal{
    node::family::kGpuStateSecondsTotal, "counter",
    "Time the GPU spent in each state (busy, idle, held_idle, unknown), each second in one."};
constexpr Family kGpuLeaseSecondsTotal{
    node::family::kGpuLeaseSecondsTotal, "counter",
    "Time leases held the GPU (or its MIG instances), by the lease's user and kind."};
constexpr Family kGpuJobSecondsTotal{
    node::family::kGpuJobSecondsTotal, "counter",
    "Time a Kubernetes pod or a Slurm job held the GPU (or a MIG instance), by the GPU's state."};
constexpr Family kGpuUserSecondsTotal{
    node::family::kGpuUserSecondsTotal, "counter",
    "Time of the GPU (or its MIG instances' share) charged to a user: held by a lease or, outside "
    "leases, by the user's processes; by the GPU's state meanwhile (busy, idle, unknown)."};
constexpr Family kGpuUserCostTotal{node::family::kGpuUserCostTotal, "counter",
                                   "What the time charged to a user cost, at the configured price."};
constexpr std::array kAccountingFamilies = {&kGpuStateSecondsTotal, &kGpuLeaseSecondsTotal,
                                            &kGpuJobSecondsTotal, &kGpuUserSecondsTotal, &kGpuUserCostTotal};

// A counter's value for one family of kIdleFamilies.
double IdleValue(std::string_view family, const GpuCounters& c) {
  if (family == node::family::kGpuIdleSecondsTotal) return c.idle_seconds;
  if (family == node::family::kGpuHeldIdleSecondsTotal) return c.held_idle_seconds;
  if (family == node::family::kGpuIdleCostTotal) return c.idle_cost;
  if (family == node::family::kGpuIdleForSeconds) return c.idle_for_seconds;
  if (family == node::family::kGpuIdleForCost) return c.idle_for_cost;
  return c.held_idle_for_seconds;
}

// Idle and held-idle time, and what it cost.
void CollectIdle(const node::NodeView& node_view, const std::string& host, const std::string& currency,
                 const std::map<std::string, GpuCounters>& counters, Exposition* out) {
  for (const Family* family : kIdleFamilies) {
    Head(out, *family);
    std::string name(family->name);
    for (const node::GpuView& g : node_view.gpus) {
      auto c = counters.find(g.info.uuid);
      if (c == counters.end()) continue;
      bool is_cost = name == node::family::kGpuIdleCostTotal || name == node::family::kGpuIdleForCost;
      out->Sample(name, is_cost ? With(NativeLabels(g, host), "currency", currency) : NativeLabels(g, host),
                  IdleValue(name, c->second));
    }
  }
}

// Seconds by state and by lease holder: what fleet accounting sums with
// increase() (docs/fleet.md).
void CollectSecondsByHolder(const node::NodeView& node_view, const std::string& host,
                            const std::map<std::string, GpuCounters>& counters, Exposition* out) {
  Head(out, kGpuStateSecondsTotal);
  for (const node::GpuView& g : node_view.gpus) {
    auto c = counters.find(g.info.uuid);
    if (c == counters.end()) continue;
    for (const auto& [state, seconds] : c->second.state_seconds) {
      out->Sample(node::family::kGpuStateSecondsTotal, With(NativeLabels(g, host), "state", state), seconds);
    }
  }
  Head(out, kGpuLeaseSecondsTotal);
  for (const node::GpuView& g : node_view.gpus) {
    auto c = counters.find(g.info.uuid);
    if (c == counters.end()) continue;
    for (const auto& [holder, seconds] : c->second.lease_seconds) {
      out->Sample(node::family::kGpuLeaseSecondsTotal,
                  With(With(NativeLabels(g, host), "user", holder.first), "kind", holder.second), seconds);
    }
  }
  Head(out, kGpuJobSecondsTotal);
  for (const node::GpuView& g : node_view.gpus) {
    auto c = counters.find(g.info.uuid);
    if (c == counters.end()) continue;
    for (const auto& [job, held] : c->second.job_seconds) {
      Labels l = NativeLabels(g, host);
      if (!job.pod.empty()) l = With(With(l, "namespace", job.pod_namespace), "pod", job.pod);
      if (!job.slurm_job.empty()) l = With(l, "slurm_job", job.slurm_job);
      out->Sample(node::family::kGpuJobSecondsTotal, With(l, "state", job.state), held.seconds);
    }
  }
}

// Time and cost charged to users (node/gpu_charge.h): what `fleet report
// --by user` sums.
void CollectUserCharges(const node::NodeView& node_view, const std::string& host, const std::string& currency,
                        const std::map<std::string, GpuCounters>& counters, Exposition* out) {
  for (const Family* family : {&kGpuUserSecondsTotal, &kGpuUserCostTotal}) {
    Head(out, *family);
    const bool is_cost = family == &kGpuUserCostTotal;
    for (const node::GpuView& g : node_view.gpus) {
      auto c = counters.find(g.info.uuid);
      if (c == counters.end()) continue;
      for (const auto& [key, charge] : c->second.user_charges) {
        Labels l = With(With(With(NativeLabels(g, host), "user", key.user), "held_by", key.held_by), "state",
                        key.state);
        if (is_cost) l = With(l, "currency", currency);
        out->Sample(family->name, l, is_cost ? charge.cost : charge.seconds);
      }
    }
  }
}

}  // namespace

const std::vector<FamilyDoc>& AccountingFamilies() {
  static const std::vector<FamilyDoc> kAll = [] {
    std::vector<FamilyDoc> all;
    for (const Family* f : kIdleFamilies) all.push_back(f->Doc());
    for (const Family* f : kAccountingFamilies) all.push_back(f->Doc());
    return all;
  }();
  return kAll;
}

void CollectAccounting(const node::NodeView& node_view, const std::string& host, const std::string& currency,
                       const std::map<std::string, GpuCounters>& counters, Exposition* out) {
  CollectIdle(node_view, host, currency, counters, out);
  CollectSecondsByHolder(node_view, host, counters, out);
  CollectUserCharges(node_view, host, currency, counters, out);
}

}  // namespace tarmac::metrics
