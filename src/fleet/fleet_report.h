// SPDX-License-Identifier: Apache-2.0
//
// `tarmac fleet report`: where the fleet's GPU time and money went over a
// range, from exact counters (increase() of each agent's per-GPU seconds by
// state, energy and idle cost; docs/fleet.md), never from averaged gauges.
// Rows by node, GPU, model, user (the time charged to them), or the
// Kubernetes namespace, pod or Slurm job that held GPUs; the totals; a verdict line. The
// range is sent as a number of seconds the program computed: no user input
// goes into PromQL.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/result.h"
#include "prom/prom_client.h"

namespace tarmac::fleet {

enum class ReportBy { kNode, kGpu, kModel, kUser, kNamespace, kPod, kSlurmJob };

// "node", "gpu", "model", "user", "namespace", "pod", "slurm-job"; false
// for anything else.
bool ParseReportBy(const std::string& text, ReportBy* by);
// Every name ParseReportBy takes, in order (for --by's check and help).
std::vector<std::string> ReportByNames();
// Whether rows are holders (a lease's user, a pod, a namespace, a Slurm
// job): their hours are those they held GPUs, not whole GPUs'.
bool IsHolderGrouping(ReportBy by);

struct ReportRow {
  std::string key;  // The node, "node GPU 3", the model, the user, "namespace/pod", the Slurm job.
  int gpus = 0;     // GPUs counted in the row (by holder: GPUs it held).
  // By pod, namespace or Slurm job: the state of the GPU while it was held
  // (held idle counts as idle).
  double busy_hours = 0;
  double idle_hours = 0;       // Idle, nobody holding memory.
  double held_idle_hours = 0;  // Idle, a process holding memory at 0 % SM.
  double unknown_hours = 0;
  double energy_kwh = 0;
  double idle_cost = 0;
  // By lease kind (by user: its own; else every lease on its GPUs); by pod,
  // namespace or Slurm job: "pod" or "slurm", the time it held GPUs.
  std::map<std::string, double> lease_hours;
  // By user: the GPU time charged to them (node/gpu_charge.h, the rule of
  // `tarmac report --by user`): busy, unknown, and held idle (in
  // held_idle_hours, idle_cost) split by lease and by their processes
  // outside leases; the costs of each.
  double held_idle_by_lease_hours = 0;
  double held_idle_by_process_hours = 0;
  double busy_cost = 0;
  double held_idle_by_lease_cost = 0;
  double held_idle_by_process_cost = 0;
};

// One node's hour in the heatmap: the share of the GPU time read that was
// busy, and that was held idle.
struct HourCell {
  int64_t hour_end_unix = 0;
  double busy_ratio = 0;
  double held_idle_ratio = 0;
};

struct FleetReport {
  int64_t since_unix = 0;
  int64_t until_unix = 0;
  ReportBy by = ReportBy::kNode;
  std::string currency;
  std::vector<ReportRow> rows;  // Most idle (idle + held idle) first.
  ReportRow total;
  int mostly_idle_gpus = 0;  // GPUs idle more than 80 % of the time they were read.
  std::string verdict;
  std::vector<std::string> warnings;
  // The whole hours came from the hourly recording rules' series, the
  // edges from the raw counters (report_pieces.h); else all raw.
  bool read_hourly = false;
  std::map<std::string, std::vector<HourCell>> heatmap;  // By node, hours in order (with_heatmap).
};

// With `with_heatmap`, also one range query per share for the node x hour
// heatmap of the HTML form.
Result<FleetReport> ReadFleetReport(prom::PromClient* client, int64_t since_unix, int64_t until_unix,
                                    ReportBy by, bool with_heatmap = false);

std::string RenderReportText(const FleetReport& report, size_t width);
nlohmann::json ReportToJson(const FleetReport& report);
std::string RenderReportCsv(const FleetReport& report);
// One self-contained page (inline CSS and SVG, nothing fetched): the
// verdict, the node x hour heatmap with its legend, and the rows.
std::string RenderReportHtml(const FleetReport& report);

}  // namespace tarmac::fleet
