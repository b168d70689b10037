// SPDX-License-Identifier: Apache-2.0
//
// /metrics, rendered from the latest snapshot and the agent's counters: a
// scrape never calls NVML and never waits for the sampler. Two sets of
// families (docs/metrics.md): dcgm-exporter's (4.8-era names, units and
// labels, on by default) so existing dashboards and rules work unchanged,
// and tarmac's own `tarmac_*` in base units. A reading the GPU cannot give
// is absent, never zero. Pure.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "metrics/counters.h"
#include "metrics/exposition.h"
#include "node/agent_figures.h"
#include "node/lease_marks.h"
#include "node/snapshot.h"

namespace tarmac::metrics {

struct RenderOptions {
  bool is_dcgm_compatible = true;
  std::string dcgm_hostname_label = "Hostname";  // Or "hostname" (dcgm-exporter >= 4.8.3).
  std::string hostname;                          // Empty: the snapshot's.
  size_t max_process_series = 200;               // Per-process series beyond this are dropped (and counted).
  bool has_device_pod_uid = false;               // pod_uid on GPU and MIG series too (pod_labels.h).
  std::string currency;                          // The idle-cost label: [report] currency.
  std::string version = "dev";

  bool operator==(const RenderOptions&) const = default;
};

// What the agent's lease service tells /metrics, read at each scrape.
using node::AgentFigures;

struct FamilyDoc {
  std::string name;
  std::string type;
  std::string help;
};

// The labels of tarmac's own per-GPU series: hostname, gpu, uuid, model.
Labels NativeLabels(const node::GpuView& g, const std::string& host);

// Every tarmac_* family /metrics may carry (the docs are checked against
// this list).
const std::vector<FamilyDoc>& NativeFamilies();
// Every dcgm-exporter family it may carry.
const std::vector<FamilyDoc>& DcgmFamilies();

// Everything but the per-scrape family (RenderScrapeDuration), so the page
// can be rendered once per snapshot and shared (page_cache.h).
std::string RenderMetrics(const node::Snapshot& snapshot, const node::SamplerStats& stats,
                          const std::map<std::string, GpuCounters>& counters, const RenderOptions& options);

// The lease families (tarmac_leases, tarmac_lease_queue_length,
// tarmac_backfill_*), rendered per scrape.
std::string RenderLeaseFamilies(const AgentFigures& figures, const std::string& hostname);

// tarmac_gpu_lease: each GPU and MIG instance a lease holds, with its id,
// user and kind (and Slurm job), labelled as the GPU's other series; ""
// when no lease holds one. Rendered per scrape.
std::string RenderLeaseMarks(const node::LeaseMarks& marks, const node::NodeView& node_view,
                             const std::string& hostname);

// tarmac_scrape_duration_seconds: how long the agent took to answer the
// previous /metrics request. Appended to each answer.
std::string RenderScrapeDuration(const node::Snapshot& snapshot, const RenderOptions& options,
                                 double previous_scrape_seconds);

}  // namespace tarmac::metrics
