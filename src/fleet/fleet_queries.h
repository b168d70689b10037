// SPDX-License-Identifier: Apache-2.0
//
// The questions ReadFleet asks the store (fleet_read.h), each fixed PromQL
// text asking only the labels read, and what each answer's samples set:
// the GPU list and the readings of tarmac's families, the marks and spells,
// the counts `--by node` reads (the agents' own, else the store's), the
// down nodes' day-long questions (their scrape targets, as the store named
// them, escaped and quoted) and dcgm-exporter's. docs/fleet.md lists them.
// Pure; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "fleet/fleet_read.h"
#include "fleet/fleet_view.h"
#include "prom/prom_client.h"

namespace tarmac::fleet {

// The GPUs of tarmac's nodes that answer now (tarmac_gpu_info), and when
// each node last sampled.
std::string InfoQuery();
std::string LastSampleQuery();
// The same over the down window, for the down nodes `instances` only.
std::string DownInfoQuery(const std::vector<std::string>& instances);
std::string DownLastSampleQuery(const std::vector<std::string>& instances);
// Down nodes a question: a few hundred nodes' day of samples stays far
// below the store's limits even at a 15 s scrape.
inline constexpr size_t kDownNodesAQuery = 200;

// `fleet idle`: the memory used on the GPUs of nodes `instances` (those
// whose idle GPUs have processes), asked once the GPUs are known, a batch
// of kDownNodesAQuery nodes a question; and the nodes whose agents count
// their own GPUs (tarmac_node_gpus{which="all"}): agents that count export
// the spells too (they came first), so their idle GPUs are the spells'.
std::string MemoryUsedQuery(const std::vector<std::string>& instances);
std::string CountingNodesQuery();

// Nodes only dcgm-exporter reports, and their readings.
std::string DcgmInfoQuery();
inline constexpr const char* kDcgmReadingsQuery =
    "{__name__=~\"DCGM_FI_DEV_(GPU_UTIL|FB_USED|FB_FREE|FB_RESERVED|POWER_USAGE|GPU_TEMP)\"}";

// Processes at 0 % SM, and all processes, counted by GPU (instance, uuid).
std::string IdleHoldersQuery();
std::string ProcessesQuery();
// Each GPU's utilization over the last minute (ReadParts::recent_utilization).
std::string RecentQuery();

// `v`, or nothing when it is not finite.
std::optional<double> FiniteOrNone(double v);

// A mark's GPUs where it is 1, and the GPUs in a spell now (its length over
// 0), each named by instance, hostname, gpu, uuid and model.
std::string MarkQuery(const char* family);
std::string SpellQuery(const char* family);

// Which readings ask a family: every one, all but `fleet idle`'s
// (ReadParts::idle_only), or only `fleet idle`'s.
enum class AskedBy { kEvery, kAllButIdle, kIdleOnly };

// One of tarmac's families asked of every GPU, by its node and index.
struct ReadingQuery {
  std::string family;
  std::string promql;
  AskedBy asked_by;
  // Sets what a sample of the family says on its GPU.
  void (*apply)(const prom::Sample& s, FleetGpu* g);

  bool IsAskedFor(const ReadParts& parts) const {
    return asked_by == AskedBy::kEvery || (asked_by == AskedBy::kIdleOnly) == parts.idle_only;
  }
};
const std::vector<ReadingQuery>& ReadingQueries();

// A count of each node's GPUs, and what a sample of it sets.
struct CountQuery {
  std::string promql;
  void (*apply)(const prom::Sample& s, NodeCounts* c);
};
// --by node, from the agents' own counts (metrics/node_render.h):
// tarmac_node_gpus by `which` (ApplyWhich sets a sample's count), and the
// others.
std::string NodeGpusQuery();
void ApplyWhich(const prom::Sample& s, NodeCounts* c);
const std::vector<CountQuery>& NodeSeriesQueries();
// --by node, the store counting the GPUs of agents that do not count their
// own: each node's GPUs by UUID, the counts, and its held-idle GPUs by UUID
// (whose idle holders IdleHoldersQuery counts).
std::string NodeInfoQuery();
const std::vector<CountQuery>& CountQueries();
std::string HeldIdleUuidQuery();

}  // namespace tarmac::fleet
