// SPDX-License-Identifier: Apache-2.0
#include "report/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "common/enum_names.h"
#include "store/usage_query.h"

namespace tarmac::report {
namespace {

std::string Money(const std::string& currency, double v) { return fmt::format("{} {:.2f}", currency, v); }

// GPU time in words: hours, or minutes under an hour's tenth.
std::string GpuTime(double hours) {
  if (hours >= 0.1) return fmt::format("{:.1f} GPU-hours", hours);
  double minutes = hours * 60;
  return fmt::format("{:.{}f} GPU-minutes", minutes, minutes < 1 ? 2 : 0);
}

// The report's work on one range, in the steps a report is made of.
struct Builder {
  Builder(store::Db* d, const ReportRequest& r) : db(d), request(r) {}

  store::Db* db;
  const ReportRequest& request;
  Report report;
  int64_t first_hour = request.since_t / 3600;
  int64_t end_hour = (request.until_t + 3599) / 3600;
  std::map<int64_t, size_t> slot;   // gpu_id -> index in report.gpus
  std::map<int64_t, double> price;  // gpu_id -> per GPU-hour

  GpuLine* Gpu(int64_t gpu_id) {
    auto it = slot.find(gpu_id);
    return it == slot.end() ? nullptr : &report.gpus[it->second];
  }

  Status AddGpus() {
    Result<std::vector<store::GpuUsage>> rows = store::QueryGpuUsage(db, first_hour, end_hour);
    if (!rows.ok()) return rows.status();
    for (const store::GpuUsage& r : rows.value()) {
      GpuLine g;
      g.index = r.index;
      g.uuid = r.uuid;
      g.name = r.name;
      double covered = static_cast<double>(r.covered_seconds);
      double unknown = static_cast<double>(r.unknown_seconds);
      double idle = static_cast<double>(r.idle_seconds);
      double known = covered - unknown;  // Read: busy or idle.
      g.covered_hours = covered / 3600;
      g.unknown_hours = unknown / 3600;
      if (known > 0) {
        g.mean_utilization_ratio = static_cast<double>(r.utilization_sum_permille_seconds) / 1000.0 / known;
        g.duty_cycle_ratio = 1.0 - idle / known;
      }
      g.busy_hours = std::max(0.0, known - idle) / 3600;
      g.idle_hours = idle / 3600;
      g.held_idle_hours = static_cast<double>(r.held_idle_seconds) / 3600;
      g.backfill_hours = static_cast<double>(r.backfill_seconds) / 3600;
      g.energy_kwh = static_cast<double>(r.energy_joules) / 3.6e6;
      g.throttle_thermal_hours = static_cast<double>(r.throttle_thermal_seconds) / 3600;
      g.throttle_power_hours = static_cast<double>(r.throttle_power_seconds) / 3600;
      g.throttle_other_hours = static_cast<double>(r.throttle_other_seconds) / 3600;
      price[r.gpu_id] = request.pricing.GpuHourCost(g.name);
      g.idle_cost = g.idle_hours * price[r.gpu_id];
      slot[r.gpu_id] = report.gpus.size();
      report.gpus.push_back(std::move(g));
    }
    for (const auto& [id, p] : price) report.has_costs = report.has_costs || p > 0;
    for (auto [kind, field] : {std::pair{"xid", &GpuLine::xid_count},
                               std::pair{"backfill_preempted", &GpuLine::backfill_preemptions}}) {
      Result<std::map<int64_t, int64_t>> counts =
          store::QueryEventCounts(db, kind, request.since_t, request.until_t);
      if (!counts.ok()) return counts.status();
      for (const auto& [gpu_id, count] : counts.value()) {
        if (GpuLine* g = Gpu(gpu_id)) g->*field = count;
      }
    }
    return Status::OK();
  }

  Status AddCharts() {
    Result<std::vector<store::HourlyUtilization>> hourly =
        store::QueryHourlyUtilization(db, first_hour, end_hour);
    if (!hourly.ok()) return hourly.status();
    for (const store::HourlyUtilization& h : hourly.value()) {
      if (GpuLine* g = Gpu(h.gpu_id)) {
        g->hourly_utilization.emplace_back(h.hour * 3600, h.ratio);
        g->hourly_held_idle.emplace_back(h.hour * 3600, h.held_idle_ratio);
      }
    }
    for (GpuLine& g : report.gpus) g.utilization_histogram_minutes.assign(10, 0);
    Result<std::vector<store::DecileMinutes>> deciles =
        store::QueryUtilizationDeciles(db, first_hour, end_hour);
    if (!deciles.ok()) return deciles.status();
    for (const store::DecileMinutes& d : deciles.value()) {
      if (GpuLine* g = Gpu(d.gpu_id))
        g->utilization_histogram_minutes[static_cast<size_t>(d.decile)] = d.minutes;
    }
    return Status::OK();
  }

  // Owners, and the share of process memory-time on idle processes.
  // Owners by another scheduler's allocations: the pod (or namespace) the
  // kubelet allocated GPUs to, or the Slurm job.
  Status AddAllocationOwners() {
    bool is_slurm = request.by == GroupBy::kSlurmJob;
    Result<std::vector<store::AllocationUsage>> rows =
        store::QueryAllocationUsage(db, is_slurm ? "slurm" : "pod", first_hour, end_hour);
    if (!rows.ok()) return rows.status();
    std::map<std::string, OwnerLine> by_owner;
    std::map<std::string, std::pair<double, double>> utilization;  // permille-seconds, readable seconds.
    for (const store::AllocationUsage& r : rows.value()) {
      std::string owner = is_slurm                            ? fmt::format("job {} ({})", r.name, r.scope)
                          : request.by == GroupBy::kNamespace ? r.scope
                                                              : r.scope + "/" + r.name;
      OwnerLine& o = by_owner[owner];
      o.owner = owner;
      double known = r.allocated_seconds - r.unknown_seconds;
      o.gpu_hours_held += r.allocated_seconds / 3600;
      o.gpu_hours_busy += std::max(0.0, known - r.idle_seconds) / 3600;
      double idle_hours = r.idle_seconds / 3600;
      o.held_idle_hours += idle_hours;
      o.idle_cost += idle_hours * (price.count(r.gpu_id) ? price[r.gpu_id] : 0.0);
      utilization[owner].first += r.utilization_permille_seconds;
      utilization[owner].second += known;
      if (r.memory_max_mib) o.memory_max_mib = std::max(o.memory_max_mib.value_or(0), *r.memory_max_mib);
    }
    for (auto& [name, o] : by_owner) {
      const auto& [permille_seconds, seconds] = utilization[name];
      if (seconds > 0) o.mean_utilization_ratio = permille_seconds / seconds / 1000;
      report.owners.push_back(o);
    }
    std::sort(report.owners.begin(), report.owners.end(), [](const OwnerLine& a, const OwnerLine& b) {
      return a.held_idle_hours != b.held_idle_hours ? a.held_idle_hours > b.held_idle_hours
                                                    : a.owner < b.owner;
    });
    return Status::OK();
  }

  // Owners by user: the GPU time charged to each, by whom it was held and
  // the GPU's state meanwhile, with its cost.
  Status AddUserCharges() {
    Result<std::vector<store::UserChargeUsage>> rows = store::QueryUserCharges(db, first_hour, end_hour);
    if (!rows.ok()) return rows.status();
    std::map<std::string, OwnerLine> by_user;
    for (const store::UserChargeUsage& r : rows.value()) {
      OwnerLine& o = by_user[r.user];
      o.owner = r.user;
      double hours = static_cast<double>(r.milliseconds) / 3.6e6;
      double cost = hours * (price.count(r.gpu_id) ? price[r.gpu_id] : 0.0);
      o.gpu_hours_held += hours;
      if (r.state == "busy") {
        o.gpu_hours_busy += hours;
        o.busy_cost += cost;
      } else if (r.state == "unknown") {
        o.unknown_hours += hours;
      } else if (r.held_by == "lease") {
        o.held_idle_by_lease_hours += hours;
        o.held_idle_by_lease_cost += cost;
      } else {
        o.held_idle_by_process_hours += hours;
        o.held_idle_by_process_cost += cost;
      }
    }
    for (auto& [name, o] : by_user) {
      o.held_idle_hours = o.held_idle_by_lease_hours + o.held_idle_by_process_hours;
      o.idle_cost = o.held_idle_by_lease_cost + o.held_idle_by_process_cost;
      report.owners.push_back(o);
    }
    return Status::OK();
  }

  // Owners by the workload of each process (container, pod, job).
  void AddWorkloadOwners(const std::vector<store::OwnerUsage>& rows) {
    std::map<std::string, OwnerLine> by_owner;
    for (const store::OwnerUsage& r : rows) {
      OwnerLine& o = by_owner[r.owner];
      o.owner = r.owner;
      o.gpu_hours_held += static_cast<double>(r.seen_seconds) / 3600;
      o.gpu_hours_busy += static_cast<double>(r.busy_seconds) / 3600;
      double idle_hours = static_cast<double>(r.held_idle_seconds) / 3600;
      o.held_idle_hours += idle_hours;
      o.held_idle_by_process_hours += idle_hours;
      o.idle_cost += idle_hours * (price.count(r.gpu_id) ? price[r.gpu_id] : 0.0);
    }
    for (auto& [name, o] : by_owner) report.owners.push_back(o);
  }

  Status AddOwners() {
    if (IsAllocationGrouping(request.by)) return AddAllocationOwners();
    Result<std::vector<store::OwnerUsage>> rows = store::QueryOwnerUsage(
        db, request.by == GroupBy::kContainer ? store::OwnerKey::kWorkload : store::OwnerKey::kUser,
        first_hour, end_hour);
    if (!rows.ok()) return rows.status();
    double memory_time = 0;
    double idle_memory_time = 0;
    for (const store::OwnerUsage& r : rows.value()) {
      memory_time += static_cast<double>(r.memory_mib_seconds);
      idle_memory_time += static_cast<double>(r.held_idle_memory_mib_seconds);
    }
    if (memory_time > 0) report.idle_memory_share = idle_memory_time / memory_time;
    if (request.by == GroupBy::kUser) {
      if (Status s = AddUserCharges(); !s.ok()) return s;
    } else {
      AddWorkloadOwners(rows.value());
    }
    std::sort(report.owners.begin(), report.owners.end(), [](const OwnerLine& a, const OwnerLine& b) {
      return a.held_idle_hours != b.held_idle_hours ? a.held_idle_hours > b.held_idle_hours
                                                    : a.owner < b.owner;
    });

    Result<std::vector<store::HeldIdleSession>> top = store::QueryTopHeldIdle(db, first_hour, end_hour, 10);
    if (!top.ok()) return top.status();
    report.top_held_idle = std::move(top).value();
    return Status::OK();
  }

  Status AddSpan() {
    Result<std::optional<std::pair<int64_t, int64_t>>> span = store::QueryHourSpan(db, first_hour, end_hour);
    if (!span.ok()) return span.status();
    if (span.value()) {
      int64_t since = span.value()->first * 3600;
      int64_t until = (span.value()->second + 1) * 3600;
      // Within the first and last hour, to the minute where the 1-minute
      // rollups still have it ("data from 16:59", not "16:00").
      Result<std::optional<std::pair<int64_t, int64_t>>> first =
          store::QueryMinuteSpan(db, since / 60, since / 60 + 60);
      if (first.ok() && first.value()) since = first.value()->first * 60;
      Result<std::optional<std::pair<int64_t, int64_t>>> last =
          store::QueryMinuteSpan(db, until / 60 - 60, until / 60);
      if (last.ok() && last.value()) until = (last.value()->second + 1) * 60;
      report.data_since_t = std::max(request.since_t, since);
      report.data_until_t = std::min(request.until_t, until);
    }
    return Status::OK();
  }

  void AddVerdict();
};

}  // namespace

namespace {
constexpr std::pair<GroupBy, const char*> kGroupByNames[] = {
    {GroupBy::kGpu, "gpu"}, {GroupBy::kUser, "user"},           {GroupBy::kContainer, "container"},
    {GroupBy::kPod, "pod"}, {GroupBy::kNamespace, "namespace"}, {GroupBy::kSlurmJob, "slurm-job"}};
}  // namespace

const char* GroupByName(GroupBy by) { return EnumName(kGroupByNames, by); }

bool ParseGroupBy(std::string_view name, GroupBy* out) { return ParseEnum(kGroupByNames, name, out); }

std::vector<std::string> GroupByNames() { return EnumNames(kGroupByNames); }

const char* OwnerKindText(GroupBy by) {
  switch (by) {
    case GroupBy::kUser:
      return "user";
    case GroupBy::kContainer:
      return "container, pod or job";
    case GroupBy::kPod:
      return "pod (kubelet allocation)";
    case GroupBy::kNamespace:
      return "namespace (kubelet allocation)";
    case GroupBy::kSlurmJob:
      return "Slurm job (prolog to epilog)";
    case GroupBy::kGpu:
      break;
  }
  return "gpu";
}

Result<Report> BuildReport(store::Db* db, const ReportRequest& request) {
  if (request.until_t <= request.since_t) {
    return Status::InvalidArgument("the time range is empty: --until must be after --since");
  }
  Builder b(db, request);
  b.report.since_t = request.since_t;
  b.report.until_t = request.until_t;
  b.report.currency = request.pricing.currency;
  b.report.by = request.by;
  Status s = b.AddGpus();
  if (s.ok() && request.with_charts) s = b.AddCharts();
  if (s.ok()) s = b.AddOwners();
  if (s.ok()) s = b.AddSpan();
  if (!s.ok()) return s;
  b.AddVerdict();
  return std::move(b.report);
}

void Builder::AddVerdict() {
  for (const GpuLine& g : report.gpus) {
    report.idle_cost += g.idle_cost;
    report.unknown_hours += g.unknown_hours;
    report.backfill_hours += g.backfill_hours;
    report.backfill_preemptions += g.backfill_preemptions;
    if (g.duty_cycle_ratio && 1.0 - *g.duty_cycle_ratio > request.mostly_idle_ratio)
      report.mostly_idle_gpus++;
  }
  if (report.gpus.empty()) {
    report.verdict = "No samples in this range.";
  } else {
    report.verdict =
        fmt::format("{} of {} GPUs were idle more than {:.0f} % of the time", report.mostly_idle_gpus,
                    report.gpus.size(), request.mostly_idle_ratio * 100);
    if (report.idle_memory_share) {
      report.verdict += fmt::format("; {:.0f} % of allocated GPU memory sat on idle processes",
                                    *report.idle_memory_share * 100);
    }
    if (report.has_costs)
      report.verdict += fmt::format("; idle cost {}", Money(report.currency, report.idle_cost));
    if (report.backfill_hours > 0) {
      report.verdict += fmt::format("; backfill put {} of idle time to work ({} preemption{})",
                                    GpuTime(report.backfill_hours), report.backfill_preemptions,
                                    report.backfill_preemptions == 1 ? "" : "s");
    }
    if (report.unknown_hours > 0) {
      report.verdict +=
          fmt::format("; {:.1f} GPU-hours could not be read (unknown, counted neither busy nor idle)",
                      report.unknown_hours);
    }
    report.verdict += ".";
  }
}

}  // namespace tarmac::report
