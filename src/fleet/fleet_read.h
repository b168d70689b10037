// SPDX-License-Identifier: Apache-2.0
//
// The fleet as Prometheus holds it, read in a handful of instant queries
// (never one per node or GPU): the GPUs every tarmac agent reported within
// a day (tarmac_gpu_info), which scrape targets are up now, their readings,
// marks and lease holders; and the nodes only dcgm-exporter reports, with
// the columns it has. The queries are fixed text: no user input goes into
// PromQL (filters apply to the answer, fleet_view.h); only the down
// nodes' scrape targets, as the store's series API names them, go into the
// day-long queries for them, escaped and quoted.
#pragma once

#include "common/result.h"
#include "fleet/fleet_view.h"
#include "prom/prom_client.h"

namespace tarmac::fleet {

// How far back a node that stopped reporting is still listed (as down).
inline constexpr const char* kDownWindow = "1d";
inline constexpr double kDownWindowSeconds = 86400;

// What a reading includes beyond the view's every-command fields.
struct ReadParts {
  // Each GPU's utilization over the last minute (FleetGpu::
  // recent_utilization_ratio: what `fleet pick` judges by); one more query
  // over every GPU's samples of that minute.
  bool recent_utilization = false;
  // Only what `fleet idle` shows: the spells of idle and held-idle GPUs,
  // their memory, processes and holders (not utilization, power,
  // temperature, loss or throttling: eight families fewer), of the nodes
  // that answer now. The spells name the GPUs (every tarmac family carries
  // the GPU's UUID and model), and the marks those of agents that export no
  // spells: tarmac_gpu_info, the largest answer, is not read, nor the down
  // nodes; only nodes with an idle or held-idle GPU are in the view.
  bool idle_only = false;
  // Each node's GPUs counted, not listed: what `fleet status --by node`
  // shows (FleetNode::counts). Agents count their own (tarmac_node_gpus and
  // the rest: a few series a node); the store counts those of agents that
  // do not (every GPU's series of the families counted). Nodes down, and
  // those only dcgm-exporter reports, are listed as before.
  bool by_node = false;
};

Result<FleetView> ReadFleet(prom::PromClient* client, const ReadParts& parts = {});

// How many tarmac nodes answer now (their last-sample series): one small
// question, asked before `fleet status` chooses how to show the fleet.
Result<int> CountNodesNow(prom::PromClient* client);

}  // namespace tarmac::fleet
