// SPDX-License-Identifier: Apache-2.0
#include "fleet/fleet_queries.h"

#include <fmt/format.h>

#include <array>
#include <cmath>

#include "node/metric_families.h"

namespace tarmac::fleet {

using prom::Sample;

// The GPUs of the nodes that answer now, with only the labels read: an
// agent's info series carries its driver, PCI address and more, a tenth of
// a large fleet's answer bytes each.
std::string InfoQuery() {
  return fmt::format("max by (instance, hostname, gpu, uuid, model) ({})", node::family::kGpuInfo);
}
std::string LastSampleQuery() { return node::family::kLastSampleTimestampSeconds; }

// The same over the window, for the down nodes `instances` only: a day of
// every GPU's samples is what a fleet scraped every 15 s cannot afford to
// read (80,000 GPUs: 460 million samples, most of a minute of a core, past
// the command's timeout), and a down node has none since it went down.
namespace {
std::string InstancesMatcher(const std::vector<std::string>& instances) {
  std::string alternation;
  for (const std::string& i : instances)
    alternation += (alternation.empty() ? "" : "|") + prom::RegexLiteral(i);
  return "{instance=~" + prom::QuoteLabelValue(alternation) + "}";
}
}  // namespace
std::string DownInfoQuery(const std::vector<std::string>& instances) {
  return fmt::format("max by (instance, hostname, gpu, uuid, model) (last_over_time({}{}[{}]))",
                     node::family::kGpuInfo, InstancesMatcher(instances), kDownWindow);
}
std::string DownLastSampleQuery(const std::vector<std::string>& instances) {
  return fmt::format("last_over_time({}{}[{}])", node::family::kLastSampleTimestampSeconds,
                     InstancesMatcher(instances), kDownWindow);
}
std::string MemoryUsedQuery(const std::vector<std::string>& instances) {
  return fmt::format("max by (instance, gpu) ({}{})", node::family::kGpuMemoryUsedBytes,
                     InstancesMatcher(instances));
}
std::string CountingNodesQuery() {
  return fmt::format("max by (instance) ({}{{which=\"{}\"}})", node::family::kNodeGpus,
                     node::family::kNodeGpusWhich[0]);
}
std::string DcgmInfoQuery() { return fmt::format("last_over_time(DCGM_FI_DEV_GPU_UTIL[{}])", kDownWindow); }
std::string IdleHoldersQuery() {
  return fmt::format("count by (instance, uuid) ({} == 0)", node::family::kProcessSmUtilizationRatio);
}
std::string ProcessesQuery() {
  return fmt::format("count by (instance, uuid) ({})", node::family::kProcessGpuMemoryBytes);
}
std::string RecentQuery() {
  return fmt::format("max by (instance, gpu) (avg_over_time({}[1m]))", node::family::kGpuUtilizationRatio);
}

std::optional<double> FiniteOrNone(double v) {
  return std::isfinite(v) ? std::optional<double>(v) : std::nullopt;
}

// A mark's GPUs, where it is set, named as tarmac_gpu_info names them.
std::string MarkQuery(const char* family) {
  return fmt::format("max by (instance, hostname, gpu, uuid, model) ({} == 1)", family);
}
// The GPUs in a spell now (tarmac_gpu_idle_for_seconds, or held idle), with
// its length, named the same way: what `fleet idle` lists. An agent's spell
// is over 0 while its mark is 1 (metrics/counters.h adds each sample's time
// to the spells its marks say; its first sample has none), so two families
// name what the two marks and the two lengths would.
std::string SpellQuery(const char* family) {
  return fmt::format("max by (instance, hostname, gpu, uuid, model) ({} > 0)", family);
}

// The marks (idle, held idle, lost) and the idle spells' lengths are asked
// only where they are set (`== 1`, `> 0`): on most of a fleet they are 0,
// and a thousand nodes' zeros would be most of the answer's bytes. The
// spell's cost is asked everywhere but by `fleet idle`: a GPU with a cost
// (0 or not) is one whose agent exports the spells, and the lengths absent
// from their answers are 0 on it.
const std::vector<ReadingQuery>& ReadingQueries() {
  using G = FleetGpu;
  static const std::vector<ReadingQuery> kQueries = [] {
    std::vector<ReadingQuery> out;
    constexpr AskedBy kEvery = AskedBy::kEvery, kNotIdle = AskedBy::kAllButIdle;
    auto add = [&out](const char* family, const char* filter, AskedBy asked_by,
                      void (*apply)(const Sample&, G*)) {
      out.push_back({family, fmt::format("max by (instance, gpu) ({}{})", family, filter), asked_by, apply});
    };
    namespace f = node::family;
    add(f::kGpuUtilizationRatio, "", kNotIdle,
        [](const Sample& s, G* g) { g->utilization_ratio = FiniteOrNone(s.value); });
    add(f::kGpuMemoryTotalBytes, "", kNotIdle,
        [](const Sample& s, G* g) { g->memory_total_bytes = FiniteOrNone(s.value); });
    add(f::kGpuMemoryFreeBytes, "", kNotIdle,
        [](const Sample& s, G* g) { g->memory_free_bytes = FiniteOrNone(s.value); });
    add(f::kGpuPowerWatts, "", kNotIdle,
        [](const Sample& s, G* g) { g->power_watts = FiniteOrNone(s.value); });
    add(f::kGpuPowerLimitWatts, "", kNotIdle,
        [](const Sample& s, G* g) { g->power_limit_watts = FiniteOrNone(s.value); });
    add(f::kGpuTemperatureCelsius, "", kNotIdle,
        [](const Sample& s, G* g) { g->temperature_celsius = FiniteOrNone(s.value); });
    // `fleet idle` asks the memory of its GPUs that have processes alone,
    // once it knows them (MemoryUsedQuery).
    add(f::kGpuMemoryUsedBytes, "", kNotIdle,
        [](const Sample& s, G* g) { g->memory_used_bytes = FiniteOrNone(s.value); });
    add(f::kGpuLost, " == 1", kNotIdle, [](const Sample& s, G* g) { g->is_lost = s.value == 1; });
    out.push_back({f::kGpuHealth, fmt::format("max by (instance, gpu, verdict) ({} == 1)", f::kGpuHealth),
                   kNotIdle, [](const Sample& s, G* g) { g->verdict = s.Label("verdict"); }});
    out.push_back(
        {f::kGpuPcieLinkWidth,
         fmt::format("max by (instance, gpu) ({} < {})", f::kGpuPcieLinkWidth, f::kGpuPcieLinkWidthMax),
         kNotIdle, [](const Sample& s, G* g) { g->pcie_link_width = FiniteOrNone(s.value); }});
    out.push_back({f::kGpuXidErrorsTotal,
                   fmt::format("sum by (instance, gpu) ({}) > 0", f::kGpuXidErrorsTotal), kNotIdle,
                   [](const Sample& s, G* g) { g->xid_errors = FiniteOrNone(s.value); }});
    out.push_back({f::kGpuEccErrorsTotal,
                   fmt::format("max by (instance, gpu) ({}{{kind=\"uncorrected\",scope=\"volatile\"}}) > 0",
                               f::kGpuEccErrorsTotal),
                   kNotIdle, [](const Sample& s, G* g) { g->ecc_uncorrected = FiniteOrNone(s.value); }});
    // The marks and the spells keep the GPU's identity (every tarmac family
    // carries it): `fleet idle` names its GPUs from the spells alone
    // (ReadParts::idle_only), and from the marks on agents that export no
    // spells (MarkTheRest).
    out.push_back({f::kGpuIdle, MarkQuery(f::kGpuIdle), kNotIdle,
                   [](const Sample& s, G* g) { g->is_idle = s.value == 1; }});
    out.push_back({f::kGpuHeldIdle, MarkQuery(f::kGpuHeldIdle), kNotIdle,
                   [](const Sample& s, G* g) { g->is_held_idle = s.value == 1; }});
    add(f::kGpuIdleForSeconds, " > 0", kNotIdle,
        [](const Sample& s, G* g) { g->idle_for_seconds = FiniteOrNone(s.value); });
    add(f::kGpuHeldIdleForSeconds, " > 0", kNotIdle,
        [](const Sample& s, G* g) { g->held_idle_for_seconds = FiniteOrNone(s.value); });
    out.push_back({f::kGpuIdleForSeconds, SpellQuery(f::kGpuIdleForSeconds), AskedBy::kIdleOnly,
                   [](const Sample& s, G* g) {
                     g->is_idle = true;
                     g->idle_for_seconds = FiniteOrNone(s.value);
                   }});
    out.push_back({f::kGpuHeldIdleForSeconds, SpellQuery(f::kGpuHeldIdleForSeconds), AskedBy::kIdleOnly,
                   [](const Sample& s, G* g) {
                     g->is_held_idle = true;
                     g->held_idle_for_seconds = FiniteOrNone(s.value);
                   }});
    // `fleet idle` asks the costs over 0 alone: which nodes export spells
    // it learns from the spells and the agents' counts (CountingNodesQuery).
    auto cost = [](const Sample& s, G* g) {
      g->idle_for_cost = FiniteOrNone(s.value);
      g->currency = s.Label("currency");
    };
    out.push_back({f::kGpuIdleForCost,
                   fmt::format("max by (instance, gpu, currency) ({})", f::kGpuIdleForCost), kNotIdle, cost});
    out.push_back({f::kGpuIdleForCost,
                   fmt::format("max by (instance, gpu, currency) ({} > 0)", f::kGpuIdleForCost),
                   AskedBy::kIdleOnly, cost});
    out.push_back({f::kGpuThrottled,
                   fmt::format("max by (instance, gpu, reason) ({} == 1)", f::kGpuThrottled), kNotIdle,
                   [](const Sample& s, G* g) {
                     if (s.value == 1) g->throttle_reasons.push_back(s.Label("reason"));
                   }});
    // Only the labels read: a fleet's leases are tens of thousands of
    // series, each label set otherwise a quarter of a kilobyte.
    out.push_back({f::kGpuLease,
                   fmt::format("max by (instance, gpu, lease, user, kind, slurm_job, mig_uuid) ({} == 1)",
                               f::kGpuLease),
                   kEvery, [](const Sample& s, G* g) {
                     if (s.value != 1) return;
                     g->holders.push_back(GpuHolder{std::atoll(s.Label("lease").c_str()), s.Label("user"),
                                                    s.Label("kind"), s.Label("slurm_job"),
                                                    s.Label("mig_uuid")});
                   }});
    out.push_back({f::kGpuPodAllocated,
                   fmt::format("max by (instance, gpu, namespace, pod) ({} == 1)", f::kGpuPodAllocated),
                   kEvery, [](const Sample& s, G* g) {
                     if (!s.Label("pod").empty()) g->pod = s.Label("namespace") + "/" + s.Label("pod");
                   }});
    return out;
  }();
  return kQueries;
}

// --by node (ReadParts::by_node): each node's GPUs, counted by UUID (a GPU
// whose info series changed within the lookback counts once).
std::string NodeInfoQuery() {
  return fmt::format("count by (instance, hostname) (max by (instance, hostname, uuid) ({}))",
                     node::family::kGpuInfo);
}
// Its held-idle GPUs by UUID (the mark carries it), whose idle holders
// IdleHoldersQuery counts.
std::string HeldIdleUuidQuery() {
  return fmt::format("max by (instance, uuid) ({} == 1)", node::family::kGpuHeldIdle);
}

const std::vector<CountQuery>& CountQueries() {
  namespace f = node::family;
  static const std::vector<CountQuery> kQueries = {
      {fmt::format("count by (instance) ({} == 1)", f::kGpuIdle),
       [](const Sample& s, NodeCounts* c) { c->idle = static_cast<int>(s.value); }},
      {fmt::format("count by (instance) ({} == 1)", f::kGpuLost),
       [](const Sample& s, NodeCounts* c) { c->lost = static_cast<int>(s.value); }},
      // A GPU whose MIG instances several leases hold counts once.
      {fmt::format("count by (instance) (max by (instance, gpu) ({} == 1))", f::kGpuLease),
       [](const Sample& s, NodeCounts* c) { c->leased = static_cast<int>(s.value); }},
      // Only the verdicts counted: a third fewer series than all three.
      {fmt::format("count by (instance, verdict) ({}{{verdict=~\"drain|degraded\"}} == 1)", f::kGpuHealth),
       [](const Sample& s, NodeCounts* c) {
         if (s.Label("verdict") == "drain") c->drain = static_cast<int>(s.value);
         if (s.Label("verdict") == "degraded") c->degraded = static_cast<int>(s.value);
       }},
      {fmt::format("avg by (instance) ({})", f::kGpuUtilizationRatio),
       [](const Sample& s, NodeCounts* c) { c->utilization_ratio = FiniteOrNone(s.value); }},
  };
  return kQueries;
}

// --by node from the agents' own counts (metrics/node_render.h): six
// series a node for tarmac_node_gpus, one for each of the others, where
// counting the GPUs' series is the store reading every GPU's.
std::string NodeGpusQuery() {
  return fmt::format("max by (instance, hostname, which) ({})", node::family::kNodeGpus);
}
const std::vector<CountQuery>& NodeSeriesQueries() {
  namespace f = node::family;
  static const std::vector<CountQuery> kQueries = {
      {fmt::format("max by (instance) ({})", f::kNodeGpusLeased),
       [](const Sample& s, NodeCounts* c) { c->leased = static_cast<int>(s.value); }},
      {fmt::format("max by (instance) ({})", f::kNodeIdleHolders),
       [](const Sample& s, NodeCounts* c) { c->idle_holders = static_cast<int>(s.value); }},
      {fmt::format("max by (instance) ({})", f::kNodeUtilizationRatio),
       [](const Sample& s, NodeCounts* c) { c->utilization_ratio = FiniteOrNone(s.value); }},
  };
  return kQueries;
}
// A count tarmac_node_gpus gives, by its `which` (node::family::
// kNodeGpusWhich, in that order); a `which` it does not name is left out.
void ApplyWhich(const Sample& s, NodeCounts* c) {
  static constexpr std::array<int NodeCounts::*, node::family::kNodeGpusWhich.size()> kCounts = {
      &NodeCounts::gpus, &NodeCounts::idle,     &NodeCounts::held_idle,
      &NodeCounts::lost, &NodeCounts::degraded, &NodeCounts::drain};
  const std::string& which = s.Label("which");
  for (size_t i = 0; i < kCounts.size(); ++i) {
    if (which == node::family::kNodeGpusWhich[i]) c->*kCounts[i] = static_cast<int>(s.value);
  }
}

}  // namespace tarmac::fleet
