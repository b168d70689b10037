// SPDX-License-Identifier: Apache-2.0
//
// The "grounded fleet" report: where GPU time and money went over a range,
// per GPU and per owner (user, or container / pod / Slurm job), with a
// verdict in plain words. Built from the store's hourly rollups (the range
// is taken in whole hours) and rendered by report_render.h.
//
// Thread safety: one thread per Db.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "report/pricing.h"
#include "store/sqlite_db.h"
#include "store/usage_query.h"

namespace tarmac::report {

// Owners by user, by workload (container, pod or Slurm job of a process),
// by the pod / namespace the kubelet allocated GPUs to ([kubernetes]), or
// by the Slurm job whose prolog recorded them: for those, held =
// allocated, busy = allocated and above the idle threshold, held idle =
// allocated and idle, whether or not a process ran.
enum class GroupBy { kGpu, kUser, kContainer, kPod, kNamespace, kSlurmJob };
// Whether owners are another scheduler's allocations.
inline bool IsAllocationGrouping(GroupBy by) {
  return by == GroupBy::kPod || by == GroupBy::kNamespace || by == GroupBy::kSlurmJob;
}

// "gpu", "user", "container", "pod", "namespace"; and back (false: unknown).
const char* GroupByName(GroupBy by);
bool ParseGroupBy(std::string_view name, GroupBy* out);
// Every name ParseGroupBy takes.
std::vector<std::string> GroupByNames();
// What an owner line is, for headings: "user", "container, pod or job", ...
const char* OwnerKindText(GroupBy by);

struct ReportRequest {
  int64_t since_t = 0;
  int64_t until_t = 0;
  GroupBy by = GroupBy::kUser;
  Pricing pricing;           // A price of 0: costs are not shown.
  bool with_charts = false;  // Heatmap and histograms (HTML, JSON).
  // A GPU idle more than this share of its time counts as "mostly idle".
  double mostly_idle_ratio = 0.8;
};

struct GpuLine {
  int index = 0;
  std::string uuid;
  std::string name;
  double covered_hours = 0;  // Sampled: busy + idle + unknown.
  // Of the time the GPU was read (busy + idle); unknown time is in neither.
  std::optional<double> mean_utilization_ratio;
  std::optional<double> duty_cycle_ratio;  // Share of read time above the idle threshold.
  double busy_hours = 0;
  double idle_hours = 0;
  double unknown_hours = 0;  // It could not be read (lost, hung, unreadable).
  double held_idle_hours = 0;
  double energy_kwh = 0;
  double throttle_thermal_hours = 0;
  double throttle_power_hours = 0;
  double throttle_other_hours = 0;
  int64_t xid_count = 0;
  // Time a backfill lease held the GPU: idle time put to work (it was idle
  // when the lease began: backfill_gate.h), and how often a real
  // request took the GPU back.
  double backfill_hours = 0;
  int64_t backfill_preemptions = 0;
  double idle_cost = 0;
  // Charts: mean utilization per hour (hour start, ratio); minutes per
  // utilization decile.
  std::vector<std::pair<int64_t, double>> hourly_utilization;
  // The share of each hour a process held memory at 0 % SM (same hours).
  std::vector<std::pair<int64_t, double>> hourly_held_idle;
  std::vector<int64_t> utilization_histogram_minutes;
};

// By user, the GPU time charged to each (node/gpu_charge.h: a lease of
// theirs, else their compute processes, a GPU shared by several users
// split evenly among them): held = busy + held idle + unknown, held idle =
// by lease + by processes outside leases. By container: the time a process
// of theirs was on a GPU, computing (SM above 0), holding memory at 0 % SM.
struct OwnerLine {
  std::string owner;
  double gpu_hours_held = 0;
  double gpu_hours_busy = 0;
  double held_idle_hours = 0;
  double idle_cost = 0;  // Of the held-idle time.
  // By user only.
  double held_idle_by_lease_hours = 0;
  double held_idle_by_process_hours = 0;
  double unknown_hours = 0;  // Held, the GPU unreadable.
  double busy_cost = 0;
  double held_idle_by_lease_cost = 0;
  double held_idle_by_process_cost = 0;
  // Allocation groupings: mean utilization of its GPUs while allocated
  // (readable time), and the most memory used on one of them in a minute.
  std::optional<double> mean_utilization_ratio;
  std::optional<int64_t> memory_max_mib;
};

// A process that held memory idle (store::QueryTopHeldIdle), in hours.
inline double HeldIdleHours(const store::HeldIdleSession& p) {
  return static_cast<double>(p.held_idle_seconds) / 3600;
}

struct Report {
  int64_t since_t = 0;
  int64_t until_t = 0;
  std::string host;
  std::string currency;
  bool has_costs = false;
  GroupBy by = GroupBy::kUser;
  std::vector<GpuLine> gpus;
  std::vector<OwnerLine> owners;
  std::vector<store::HeldIdleSession> top_held_idle;
  // The data the range holds: first and last hour with samples (empty: none).
  std::optional<int64_t> data_since_t;
  std::optional<int64_t> data_until_t;
  double unknown_hours = 0;   // All GPUs.
  double backfill_hours = 0;  // All GPUs.
  int64_t backfill_preemptions = 0;
  int mostly_idle_gpus = 0;
  std::optional<double> idle_memory_share;  // Of process memory-time, on idle processes.
  double idle_cost = 0;
  std::string verdict;
};

Result<Report> BuildReport(store::Db* db, const ReportRequest& request);

}  // namespace tarmac::report
