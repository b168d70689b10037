// SPDX-License-Identifier: Apache-2.0
//
// Every node's GPUs as Prometheus last saw them: what `tarmac fleet status`
// shows. Plain data, the filters a user asks for, and the totals line. The
// reading itself is fleet_read.h; the text and JSON forms are
// fleet_render.h.
#pragma once

#include <cstdint>
#include <optional>
#include <regex>
#include <string>
#include <vector>

namespace tarmac::fleet {

// Who holds a GPU (or one of its MIG instances): tarmac_gpu_lease.
struct GpuHolder {
  int64_t lease = 0;
  std::string user;
  std::string kind;       // run, reservation, backfill, pod, slurm
  std::string slurm_job;  // kind slurm
  std::string mig_uuid;   // A MIG instance's lease
};

struct FleetGpu {
  int index = 0;
  std::string uuid;
  std::string model;
  std::optional<double> utilization_ratio;
  std::optional<double> recent_utilization_ratio;  // Mean over the last minute.
  std::optional<double> memory_used_bytes;
  std::optional<double> memory_total_bytes;
  std::optional<double> memory_free_bytes;
  std::optional<double> power_watts;
  std::optional<double> power_limit_watts;
  std::optional<double> temperature_celsius;
  bool is_idle = false;
  bool is_held_idle = false;
  bool is_lost = false;
  // Its health verdict (tarmac_gpu_health: "ok", "degraded", "drain";
  // docs/health.md); empty where the node does not export one.
  std::string verdict;
  std::optional<double> pcie_link_width;  // When below the link's maximum.
  std::optional<double> xid_errors;       // Xids its agent has seen, when any.
  std::optional<double> ecc_uncorrected;  // Uncorrected ECC errors since its last reset, when any.
  std::vector<std::string> throttle_reasons;
  std::vector<GpuHolder> holders;
  // The pod the kubelet allocated the GPU to ("namespace/pod"), running or
  // not (tarmac_gpu_pod_allocated); empty when none.
  std::string pod;
  int idle_holders = 0;  // Processes holding memory at 0 % SM.
  int processes = 0;     // Processes on it (those tarmac_process_* lists).
  // The spells going on now (tarmac_gpu_idle_for_seconds and the rest).
  std::optional<double> idle_for_seconds;
  std::optional<double> idle_for_cost;
  std::string currency;
  std::optional<double> held_idle_for_seconds;
};

// A node's GPUs counted, not listed: what `fleet status --by node` reads,
// the store counting them (a few series a node in its answers, where
// listing them is every GPU's readings).
struct NodeCounts {
  int gpus = 0;
  int idle = 0;
  int held_idle = 0;
  int idle_holders = 0;  // Processes at 0 % SM on the held-idle GPUs.
  int leased = 0;
  int lost = 0;
  int drain = 0;  // Health verdicts (tarmac_gpu_health).
  int degraded = 0;
  std::optional<double> utilization_ratio;  // The mean of its GPUs'.
};

struct FleetNode {
  std::string name;      // The hostname label.
  std::string instance;  // Prometheus' scrape target.
  std::string source;    // "tarmac", or "dcgm-exporter" for a node only it reports
  bool is_up = false;
  std::optional<double> last_seen_unix;  // Its last sample (down nodes: since when).
  std::vector<FleetGpu> gpus;
  // Set when its GPUs were counted rather than listed (ReadParts::by_node):
  // `gpus` is then empty. CountsOf gives a node's counts either way.
  std::optional<NodeCounts> counts;
};

struct FleetView {
  std::string prometheus_url;
  double taken_at_unix = 0;
  std::vector<FleetNode> nodes;  // By name.
  std::vector<std::string> warnings;
  bool is_partial = false;
};

struct FleetFilter {
  std::optional<std::regex> node;  // Matched against the whole node name.
  std::string model;               // A part of the model name, any case.
  bool idle_only = false;
  bool held_idle_only = false;
};

// Whether `model` contains `part`, in any case ("h100" matches "NVIDIA
// H100 80GB HBM3"); an empty `part` matches every model.
bool ModelMatches(const std::string& model, const std::string& part);

// `view` with only the nodes and GPUs `filter` keeps (a node the filter
// leaves no GPU of is left out, unless it is down and only --node asks).
FleetView Filter(const FleetView& view, const FleetFilter& filter);

struct FleetTotals {
  int nodes = 0;
  int nodes_down = 0;
  int gpus = 0;
  int gpus_idle = 0;
  int gpus_held_idle = 0;
  int idle_holders = 0;
  int gpus_leased = 0;
};

FleetTotals Totals(const FleetView& view);

// The node's GPUs counted: its counts when the store counted them, else
// its listed GPUs' (a down node counts GPUs only: what it last said is not
// now).
NodeCounts CountsOf(const FleetNode& node);

// Past this many nodes `fleet status` shows a line a node unless told
// (--by gpu): a block a node is more than a screen holds, and every GPU's
// readings more than the store reads quickly.
inline constexpr int kNodesListedByGpu = 200;

// Whether `fleet status` goes by node: `by` is what --by says ("gpu",
// "node", or "" for not said); `nodes_now`, how many nodes answer, asked
// only when the choice is the command's (text, no GPU filter).
bool GoesByNode(const std::string& by, std::optional<int> nodes_now);

// "412 of 1,024 GPUs idle; 37 held idle by 19 processes; 3 nodes down".
std::string TotalsLine(const FleetTotals& totals);

}  // namespace tarmac::fleet
