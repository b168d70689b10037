// SPDX-License-Identifier: Apache-2.0
#include "report/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace tarmac::report {
namespace {

using store::Stmt;

// Steps through `stmt`, calling `row` for each; returns the first error.
Status ForEachRow(Result<Stmt>& stmt, const std::function<void(const Stmt&)>& row) {
  if (!stmt.ok()) return stmt.status();
  for (;;) {
    Result<bool> r = stmt.value().Step();
    if (!r.ok()) return r.status();
    if (!r.value()) return Status::OK();
    row(stmt.value());
  }
}

std::string Money(const std::string& currency, double v) { return fmt::format("{} {:.2f}", currency, v); }

}  // namespace

Result<Report> BuildReport(store::Db* db, const ReportRequest& request) {
  if (request.until_t <= request.since_t) {
    return Status::InvalidArgument("the time range is empty: --until must be after --since");
  }
  Report report;
  report.since_t = request.since_t;
  report.until_t = request.until_t;
  report.currency = request.currency;
  report.by = request.by;
  int64_t first_hour = request.since_t / 3600;
  int64_t end_hour = (request.until_t + 3599) / 3600;
  std::map<int64_t, size_t> slot;  // gpu_id -> index in report.gpus
  std::map<int64_t, double> price;  // gpu_id -> per GPU-hour

  Result<Stmt> gpus = db->Prepare(
      "SELECT g.gpu_id, g.gpu_index, g.uuid, g.name, SUM(r.covered_seconds), SUM(r.utilization_sum_permille_seconds), "
      "SUM(r.idle_seconds), SUM(r.held_idle_seconds), SUM(r.energy_joules), SUM(r.throttle_thermal_seconds), "
      "SUM(r.throttle_power_seconds), SUM(r.throttle_other_seconds), SUM(r.unknown_seconds) "
      "FROM gpu_rollup_1h r JOIN gpus g USING (gpu_id) WHERE r.hour >= ? AND r.hour < ? "
      "GROUP BY g.gpu_id ORDER BY g.gpu_index, g.uuid");
  if (gpus.ok()) gpus.value().Bind(1, first_hour).Bind(2, end_hour);
  Status s = ForEachRow(gpus, [&](const Stmt& r) {
    GpuLine g;
    g.index = static_cast<int>(r.Int(1));
    g.uuid = r.Text(2);
    g.name = r.Text(3);
    double covered = static_cast<double>(r.Int(4));
    double unknown = static_cast<double>(r.Int(12));
    double known = covered - unknown;  // Read: busy or idle.
    g.covered_hours = covered / 3600;
    g.unknown_hours = unknown / 3600;
    if (known > 0) {
      g.mean_utilization_ratio = static_cast<double>(r.Int(5)) / 1000.0 / known;
      g.duty_cycle_ratio = 1.0 - static_cast<double>(r.Int(6)) / known;
    }
    g.busy_hours = std::max(0.0, known - static_cast<double>(r.Int(6))) / 3600;
    g.idle_hours = static_cast<double>(r.Int(6)) / 3600;
    g.held_idle_hours = static_cast<double>(r.Int(7)) / 3600;
    g.energy_kwh = static_cast<double>(r.Int(8)) / 3.6e6;
    g.throttle_thermal_hours = static_cast<double>(r.Int(9)) / 3600;
    g.throttle_power_hours = static_cast<double>(r.Int(10)) / 3600;
    g.throttle_other_hours = static_cast<double>(r.Int(11)) / 3600;
    price[r.Int(0)] = request.gpu_hour_cost(g.name);
    g.idle_cost = g.idle_hours * price[r.Int(0)];
    slot[r.Int(0)] = report.gpus.size();
    report.gpus.push_back(std::move(g));
  });
  if (!s.ok()) return s;
  for (const auto& [id, p] : price) report.has_costs = report.has_costs || p > 0;

  Result<Stmt> xids = db->Prepare("SELECT gpu_id, COUNT(*) FROM events WHERE kind = 'xid' AND t >= ? AND t < ? GROUP BY gpu_id");
  if (xids.ok()) xids.value().Bind(1, request.since_t).Bind(2, request.until_t);
  s = ForEachRow(xids, [&](const Stmt& r) {
    if (auto it = slot.find(r.Int(0)); it != slot.end()) report.gpus[it->second].xid_count = r.Int(1);
  });
  if (!s.ok()) return s;

  if (request.with_charts) {
    Result<Stmt> hourly = db->Prepare(
        "SELECT gpu_id, hour, utilization_sum_permille_seconds * 1.0 / MAX(covered_seconds, 1) / 1000.0 "
        "FROM gpu_rollup_1h WHERE hour >= ? AND hour < ? ORDER BY gpu_id, hour");
    if (hourly.ok()) hourly.value().Bind(1, first_hour).Bind(2, end_hour);
    s = ForEachRow(hourly, [&](const Stmt& r) {
      if (auto it = slot.find(r.Int(0)); it != slot.end()) {
        report.gpus[it->second].hourly_utilization.emplace_back(r.Int(1) * 3600, r.Double(2));
      }
    });
    if (!s.ok()) return s;
    for (GpuLine& g : report.gpus) g.utilization_histogram_minutes.assign(10, 0);
    Result<Stmt> histogram = db->Prepare(
        "SELECT gpu_id, MIN(utilization_mean_permille / 100, 9), COUNT(*) FROM gpu_rollup_1m "
        "WHERE minute >= ? AND minute < ? AND utilization_mean_permille IS NOT NULL GROUP BY 1, 2");
    if (histogram.ok()) histogram.value().Bind(1, first_hour * 60).Bind(2, end_hour * 60);
    s = ForEachRow(histogram, [&](const Stmt& r) {
      if (auto it = slot.find(r.Int(0)); it != slot.end()) {
        report.gpus[it->second].utilization_histogram_minutes[static_cast<size_t>(r.Int(1))] = r.Int(2);
      }
    });
    if (!s.ok()) return s;
  }

  // Owners, and the share of process memory-time on idle processes.
  const char* owner_sql = request.by == GroupBy::kContainer
                              ? "CASE WHEN s.pod_uid != '' THEN 'pod ' || s.pod_uid WHEN s.container_id != '' THEN "
                                "'container ' || substr(s.container_id, 1, 12) WHEN s.slurm_job_id != '' THEN "
                                "'slurm job ' || s.slurm_job_id WHEN s.systemd_unit != '' THEN s.systemd_unit "
                                "ELSE 'host: ' || s.user END"
                              : "s.user";
  Result<Stmt> owners = db->Prepare(fmt::format(
      "SELECT {}, s.gpu_id, SUM(p.seen_seconds), SUM(p.busy_seconds), SUM(p.held_idle_seconds), "
      "SUM(p.memory_mib_seconds), SUM(p.held_idle_memory_mib_seconds) "
      "FROM process_rollup_1h p JOIN process_sessions s USING (session_id) WHERE p.hour >= ? AND p.hour < ? "
      "GROUP BY 1, 2",
      owner_sql));
  if (owners.ok()) owners.value().Bind(1, first_hour).Bind(2, end_hour);
  std::map<std::string, OwnerLine> by_owner;
  double memory_time = 0;
  double idle_memory_time = 0;
  s = ForEachRow(owners, [&](const Stmt& r) {
    OwnerLine& o = by_owner[r.Text(0)];
    o.owner = r.Text(0);
    o.gpu_hours_held += static_cast<double>(r.Int(2)) / 3600;
    o.gpu_hours_busy += static_cast<double>(r.Int(3)) / 3600;
    double idle_hours = static_cast<double>(r.Int(4)) / 3600;
    o.held_idle_hours += idle_hours;
    o.idle_cost += idle_hours * (price.count(r.Int(1)) ? price[r.Int(1)] : 0.0);
    memory_time += static_cast<double>(r.Int(5));
    idle_memory_time += static_cast<double>(r.Int(6));
  });
  if (!s.ok()) return s;
  for (auto& [name, o] : by_owner) report.owners.push_back(o);
  std::sort(report.owners.begin(), report.owners.end(), [](const OwnerLine& a, const OwnerLine& b) {
    return a.held_idle_hours != b.held_idle_hours ? a.held_idle_hours > b.held_idle_hours : a.owner < b.owner;
  });
  if (memory_time > 0) report.idle_memory_share = idle_memory_time / memory_time;

  Result<Stmt> top = db->Prepare(
      "SELECT s.pid, s.user, s.command, g.gpu_index, s.first_seen, s.last_seen, SUM(p.held_idle_seconds), "
      "MAX(p.memory_max_mib) FROM process_rollup_1h p JOIN process_sessions s USING (session_id) "
      "JOIN gpus g ON g.gpu_id = s.gpu_id WHERE p.hour >= ? AND p.hour < ? GROUP BY s.session_id "
      "HAVING SUM(p.held_idle_seconds) > 0 ORDER BY 7 DESC LIMIT 10");
  if (top.ok()) top.value().Bind(1, first_hour).Bind(2, end_hour);
  s = ForEachRow(top, [&](const Stmt& r) {
    report.top_held_idle.push_back(HeldIdleProcess{r.Int(0), r.Text(1), r.Text(2), static_cast<int>(r.Int(3)),
                                                   r.Int(4), r.Int(5), static_cast<double>(r.Int(6)) / 3600,
                                                   r.Int(7)});
  });
  if (!s.ok()) return s;

  Result<Stmt> span = db->Prepare("SELECT MIN(hour), MAX(hour) FROM gpu_rollup_1h WHERE hour >= ? AND hour < ?");
  if (span.ok()) span.value().Bind(1, first_hour).Bind(2, end_hour);
  s = ForEachRow(span, [&](const Stmt& r) {
    if (r.IsNull(0)) return;
    report.data_since_t = std::max(request.since_t, r.Int(0) * 3600);
    report.data_until_t = std::min(request.until_t, (r.Int(1) + 1) * 3600);
  });
  if (!s.ok()) return s;

  for (const GpuLine& g : report.gpus) {
    report.idle_cost += g.idle_cost;
    report.unknown_hours += g.unknown_hours;
    if (g.duty_cycle_ratio && 1.0 - *g.duty_cycle_ratio > request.mostly_idle_ratio) report.mostly_idle_gpus++;
  }
  if (report.gpus.empty()) {
    report.verdict = "No samples in this range.";
  } else {
    report.verdict = fmt::format("{} of {} GPUs were idle more than {:.0f} % of the time", report.mostly_idle_gpus,
                                 report.gpus.size(), request.mostly_idle_ratio * 100);
    if (report.idle_memory_share) {
      report.verdict += fmt::format("; {:.0f} % of allocated GPU memory sat on idle processes",
                                    *report.idle_memory_share * 100);
    }
    if (report.has_costs) report.verdict += fmt::format("; idle cost {}", Money(report.currency, report.idle_cost));
    if (report.unknown_hours > 0) {
      report.verdict += fmt::format("; {:.1f} GPU-hours could not be read (unknown, counted neither busy nor idle)",
                                    report.unknown_hours);
    }
    report.verdict += ".";
  }
  return report;
}

}  // namespace tarmac::report
