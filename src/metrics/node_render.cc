// SPDX-License-Identifier: Apache-2.0
#include "metrics/node_render.h"

#include <array>
#include <utility>

#include "metrics/family.h"
#include "node/gpu_marks.h"
#include "node/health_verdict.h"
#include "node/metric_families.h"

namespace tarmac::metrics {
namespace {

constexpr Family kNodeGpus{node::family::kNodeGpus, "gauge",
                           "The node's GPUs now (which): all of them, those marked idle, held idle or lost, "
                           "and those whose health verdict is degraded or drain."};
constexpr Family kNodeIdleHolders{node::family::kNodeIdleHolders, "gauge",
                                  "Processes holding memory idle (at 0 % SM) on the node's GPUs now."};
constexpr Family kNodeUtilizationRatio{
    node::family::kNodeUtilizationRatio, "gauge",
    "The mean utilization of the node's GPUs now (0-1); absent when no GPU reports one."};
constexpr Family kNodeGpusLeased{
    node::family::kNodeGpusLeased, "gauge",
    "The node's GPUs a lease holds now (a GPU whose MIG instances leases hold counts once)."};
constexpr std::array kNodeFamilies = {&kNodeGpus, &kNodeIdleHolders, &kNodeUtilizationRatio,
                                      &kNodeGpusLeased};

// What tarmac_gpu_idle says of the readable GPU `g`, whose marks are `m`.
std::optional<double> IdleMarkOf(const node::GpuView& g, const node::GpuMarks& m) {
  // In MIG mode the driver reports no utilization; the engine's activity
  // says, as it does for status (node/gpu_marks.h).
  bool is_known = g.sample.utilization_gpu_ratio || g.sample.graphics_engine_active_ratio;
  if (!is_known) return std::nullopt;
  return m.is_idle ? 1.0 : 0.0;
}

}  // namespace

bool Readable(const node::GpuView& g) { return g.sample.health == node::GpuHealth::kOk; }

std::optional<double> IdleMarkValue(const node::GpuView& g) {
  if (!Readable(g)) return std::nullopt;
  return IdleMarkOf(g, node::MarkGpu(g));
}

std::optional<double> HeldIdleMarkValue(const node::GpuView& g) {
  if (!Readable(g)) return std::nullopt;
  return node::MarkGpu(g).idle_holding_pids.empty() ? 0.0 : 1.0;
}

const std::vector<FamilyDoc>& NodeFamilies() {
  static const std::vector<FamilyDoc> kAll = [] {
    std::vector<FamilyDoc> all;
    for (const Family* f : kNodeFamilies) all.push_back(f->Doc());
    return all;
  }();
  return kAll;
}

void CollectNodeCounts(const node::NodeView& node_view, const std::string& host, Exposition* out) {
  int idle = 0, held_idle = 0, lost = 0, degraded = 0, drain = 0, idle_holders = 0, with_utilization = 0;
  double utilization_sum = 0;
  for (const node::GpuView& g : node_view.gpus) {
    lost += g.sample.health == node::GpuHealth::kLost ? 1 : 0;
    node::Verdict verdict = node::JudgeGpu(g).verdict;
    degraded += verdict == node::Verdict::kDegraded ? 1 : 0;
    drain += verdict == node::Verdict::kDrain ? 1 : 0;
    if (!Readable(g)) continue;           // No idle mark, holder or reading.
    node::GpuMarks m = node::MarkGpu(g);  // Once a GPU, as the marks' families each take it.
    idle += IdleMarkOf(g, m).value_or(0) == 1 ? 1 : 0;
    held_idle += m.idle_holding_pids.empty() ? 0 : 1;
    idle_holders += static_cast<int>(m.idle_holding_pids.size());
    if (g.sample.utilization_gpu_ratio) {
      utilization_sum += *g.sample.utilization_gpu_ratio;
      ++with_utilization;
    }
  }
  Head(out, kNodeGpus);
  const std::array<int, node::family::kNodeGpusWhich.size()> counts = {
      static_cast<int>(node_view.gpus.size()), idle, held_idle, lost, degraded, drain};
  for (size_t i = 0; i < counts.size(); ++i) {
    out->Sample(node::family::kNodeGpus, {{"hostname", host}, {"which", node::family::kNodeGpusWhich[i]}},
                counts[i]);
  }
  Head(out, kNodeIdleHolders);
  out->Sample(node::family::kNodeIdleHolders, {{"hostname", host}}, idle_holders);
  Head(out, kNodeUtilizationRatio);
  if (with_utilization > 0) {
    out->Sample(node::family::kNodeUtilizationRatio, {{"hostname", host}},
                utilization_sum / with_utilization);
  }
}

std::string RenderNodeLeased(const node::LeaseMarks& marks, const node::NodeView& node_view,
                             const std::string& host) {
  int leased = 0;
  for (const node::GpuView& g : node_view.gpus) {
    bool is_held = marks.leases.count(g.info.index) != 0;
    for (const node::MigInstance& m : g.sample.mig_instances)
      is_held = is_held || marks.mig_leases.count(m.uuid) != 0;
    leased += is_held ? 1 : 0;
  }
  Exposition out;
  Head(&out, kNodeGpusLeased);
  out.Sample(node::family::kNodeGpusLeased, {{"hostname", host}}, leased);
  return out.text();
}

}  // namespace tarmac::metrics
