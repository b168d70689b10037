// SPDX-License-Identifier: Apache-2.0
#include "report/report_render.h"

#include <fmt/format.h>

#include <ctime>
#include <nlohmann/json.hpp>

#include "common/terminal_text.h"
#include "common/text_wrap.h"
#include "common/time_spec.h"
#include "common/units.h"

namespace tarmac::report {
namespace {

std::string Pct(const std::optional<double>& ratio) {
  return ratio ? fmt::format("{:.0f}%", *ratio * 100) : std::string("-");
}

std::string Cut(const std::string& s, size_t width) {
  return s.size() <= width ? s : s.substr(0, width - 3) + "...";
}

const char* ByName(GroupBy by) { return GroupByName(by); }

// The owner column's heading in the text report.
std::string OwnerHeading(GroupBy by) {
  switch (by) {
    case GroupBy::kUser:
      return "USER";
    case GroupBy::kPod:
      return "NAMESPACE/POD";
    case GroupBy::kNamespace:
      return "NAMESPACE";
    case GroupBy::kSlurmJob:
      return "SLURM JOB (USER)";
    default:
      return "CONTAINER / POD / JOB";
  }
}

// By user: the time charged to each (report.h, OwnerLine), its held idle
// split by lease and by processes outside leases.
std::string RenderUserLines(const Report& r) {
  size_t user_width = r.has_costs ? 24 : 34;
  std::string out = fmt::format("\n{:<{}}{:>10}{:>10}{:>15}{:>16}{:>9}", "USER", user_width, "GPU HELD",
                                "BUSY", "IDLE IN LEASE", "IDLE BY PROCS", "UNKNOWN");
  if (r.has_costs) out += fmt::format("{:>14}", "IDLE COST");
  out += "\n";
  if (r.owners.empty()) out += "(no lease or GPU process held a GPU in this range)\n";
  for (const OwnerLine& o : r.owners) {
    out += fmt::format("{:<{}}{:>10}{:>10}{:>15}{:>16}{:>9}", Cut(o.owner, user_width - 1), user_width,
                       FormatHours(o.gpu_hours_held), FormatHours(o.gpu_hours_busy),
                       FormatHours(o.held_idle_by_lease_hours), FormatHours(o.held_idle_by_process_hours),
                       FormatHours(o.unknown_hours));
    if (r.has_costs) out += fmt::format("{:>14}", fmt::format("{} {:.2f}", r.currency, o.idle_cost));
    out += "\n";
  }
  return out;
}

std::string CsvField(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

}  // namespace

std::string FormatTime(int64_t unix_seconds, bool with_seconds) {
  return FormatUtc(unix_seconds, with_seconds);
}

std::string RenderText(const Report& r) {
  std::string out = fmt::format("GPU report {} to {}\n", FormatTime(r.since_t), FormatTime(r.until_t));
  if (r.data_since_t && r.data_until_t) {
    out += fmt::format("data from {} to {}\n", FormatTime(*r.data_since_t), FormatTime(*r.data_until_t));
  }
  out += fmt::format("\n{}\n\n", WrapText(r.verdict, 100, 0, 0));
  out += fmt::format("{:<4}{:<22}{:>8}{:>7}{:>7}{:>8}{:>10}{:>10}{:>9}{:>10}{:>5}", "GPU", "NAME", "TIME",
                     "UTIL", "DUTY", "IDLE", "UNKNOWN", "HELD-IDLE", "ENERGY", "THROTTLE", "XID");
  out += "\n";
  for (const GpuLine& g : r.gpus) {
    out += fmt::format(
        "{:<4}{:<22}{:>8}{:>7}{:>7}{:>8}{:>10}{:>10}{:>6.1f}kWh{:>10}{:>5}\n", g.index, Cut(g.name, 21),
        FormatHours(g.covered_hours), Pct(g.mean_utilization_ratio), Pct(g.duty_cycle_ratio),
        FormatHours(g.idle_hours), FormatHours(g.unknown_hours), FormatHours(g.held_idle_hours), g.energy_kwh,
        FormatHours(g.throttle_thermal_hours + g.throttle_power_hours + g.throttle_other_hours), g.xid_count);
  }
  // Backfill and idle cost per GPU in a table of their own, so that every
  // line fits 100 columns.
  bool has_backfill = r.backfill_hours > 0 || r.backfill_preemptions > 0;
  if (has_backfill || r.has_costs) {
    out += fmt::format("\n{:<4}{:<22}", "GPU", "NAME");
    if (has_backfill) out += fmt::format("{:>12}{:>9}", "BACKFILL", "PREEMPT");
    if (r.has_costs) out += fmt::format("{:>14}", "IDLE COST");
    out += "\n";
    for (const GpuLine& g : r.gpus) {
      out += fmt::format("{:<4}{:<22}", g.index, Cut(g.name, 21));
      if (has_backfill)
        out += fmt::format("{:>12}{:>9}", FormatHours(g.backfill_hours), g.backfill_preemptions);
      if (r.has_costs) out += fmt::format("{:>14}", fmt::format("{} {:.2f}", r.currency, g.idle_cost));
      out += "\n";
    }
    if (has_backfill) {
      out += fmt::format("{:<26}{:>12}{:>9}\n", "all (backfill, fleet-wide)", FormatHours(r.backfill_hours),
                         r.backfill_preemptions);
    }
  }
  if (r.by == GroupBy::kUser) {
    out += RenderUserLines(r);
  } else if (r.by != GroupBy::kGpu) {
    bool is_allocation = IsAllocationGrouping(r.by);
    // The owner's column gives way to the others within 100 columns.
    size_t owner_width = std::min<size_t>(32, 100 - 38 - (is_allocation ? 23 : 0) - (r.has_costs ? 14 : 0));
    out += fmt::format("\n{:<{}}{:>12}{:>12}{:>14}", OwnerHeading(r.by), owner_width, "GPU HELD", "GPU BUSY",
                       "HELD-IDLE");
    if (is_allocation) out += fmt::format("{:>11}{:>12}", "MEAN UTIL", "PEAK MEM");
    if (r.has_costs) out += fmt::format("{:>14}", "IDLE COST");
    out += "\n";
    if (r.owners.empty()) {
      out += r.by == GroupBy::kSlurmJob ? "(no Slurm job held GPUs in this range)\n"
             : is_allocation            ? "(no GPU allocated to a pod in this range)\n"
                                        : "(no GPU processes in this range)\n";
    }
    for (const OwnerLine& o : r.owners) {
      out += fmt::format("{:<{}}{:>12}{:>12}{:>14}", Cut(o.owner, owner_width - 1), owner_width,
                         FormatHours(o.gpu_hours_held), FormatHours(o.gpu_hours_busy),
                         FormatHours(o.held_idle_hours));
      if (is_allocation) {
        out += fmt::format(
            "{:>11}{:>12}",
            o.mean_utilization_ratio ? fmt::format("{:.0f} %", *o.mean_utilization_ratio * 100) : "-",
            o.memory_max_mib ? fmt::format("{} MiB", *o.memory_max_mib) : "-");
      }
      if (r.has_costs) out += fmt::format("{:>14}", fmt::format("{} {:.2f}", r.currency, o.idle_cost));
      out += "\n";
    }
  }
  if (!r.top_held_idle.empty()) {
    out += "\nProcesses that held GPU memory without computing the longest:\n";
    for (const store::HeldIdleSession& p : r.top_held_idle) {
      // The end as a time of day when it is the same day.
      std::string first = FormatTime(p.first_seen);
      std::string last = FormatTime(p.last_seen);
      if (last.substr(0, 10) == first.substr(0, 10)) last = last.substr(11, 5);
      std::string line = fmt::format("  {:>6}  gpu {}  pid {:<8} {:<10} {:>6} MiB  {} .. {}  ",
                                     FormatHours(HeldIdleHours(p)), p.gpu_index, p.pid,
                                     Cut(ForTerminal(p.user), 10), p.memory_max_mib, first, last);
      // The command in what is left of 100 columns, through the one
      // terminal filter (any user chose it).
      out += line + Cut(ForTerminal(p.command), line.size() + 12 < 100 ? 100 - line.size() : 12) + "\n";
    }
  }
  return out;
}

std::string RenderJson(const Report& r) {
  nlohmann::json j;
  j["since"] = r.since_t;
  j["until"] = r.until_t;
  j["data_since"] = r.data_since_t ? nlohmann::json(*r.data_since_t) : nlohmann::json(nullptr);
  j["data_until"] = r.data_until_t ? nlohmann::json(*r.data_until_t) : nlohmann::json(nullptr);
  j["unknown_hours"] = r.unknown_hours;
  j["backfill_hours"] = r.backfill_hours;
  j["backfill_preemptions"] = r.backfill_preemptions;
  j["verdict"] = r.verdict;
  j["by"] = ByName(r.by);
  if (r.has_costs) j["currency"] = r.currency;
  j["mostly_idle_gpus"] = r.mostly_idle_gpus;
  if (r.idle_memory_share) j["idle_memory_share_ratio"] = *r.idle_memory_share;
  if (r.has_costs) j["idle_cost"] = r.idle_cost;
  j["gpus"] = nlohmann::json::array();
  for (const GpuLine& g : r.gpus) {
    nlohmann::json x = {{"index", g.index},
                        {"uuid", g.uuid},
                        {"name", g.name},
                        {"covered_hours", g.covered_hours},
                        {"busy_hours", g.busy_hours},
                        {"idle_hours", g.idle_hours},
                        {"unknown_hours", g.unknown_hours},
                        {"held_idle_hours", g.held_idle_hours},
                        {"energy_kwh", g.energy_kwh},
                        {"throttle_hours",
                         {{"thermal", g.throttle_thermal_hours},
                          {"power", g.throttle_power_hours},
                          {"other", g.throttle_other_hours}}},
                        {"xid_count", g.xid_count},
                        {"backfill_hours", g.backfill_hours},
                        {"backfill_preemptions", g.backfill_preemptions}};
    if (g.mean_utilization_ratio) x["mean_utilization_ratio"] = *g.mean_utilization_ratio;
    if (g.duty_cycle_ratio) x["duty_cycle_ratio"] = *g.duty_cycle_ratio;
    if (r.has_costs) x["idle_cost"] = g.idle_cost;
    if (!g.hourly_utilization.empty()) {
      nlohmann::json hours = nlohmann::json::array();
      for (const auto& [t, u] : g.hourly_utilization) hours.push_back({t, u});
      x["hourly_utilization"] = hours;
    }
    if (!g.utilization_histogram_minutes.empty())
      x["utilization_histogram_minutes"] = g.utilization_histogram_minutes;
    j["gpus"].push_back(x);
  }
  j["owners"] = nlohmann::json::array();
  for (const OwnerLine& o : r.owners) {
    nlohmann::json x = {{"owner", o.owner},
                        {"gpu_hours_held", o.gpu_hours_held},
                        {"gpu_hours_busy", o.gpu_hours_busy},
                        {"held_idle_hours", o.held_idle_hours}};
    if (r.has_costs) x["idle_cost"] = o.idle_cost;
    if (r.by == GroupBy::kUser) {
      x["held_idle_by_lease_hours"] = o.held_idle_by_lease_hours;
      x["held_idle_by_process_hours"] = o.held_idle_by_process_hours;
      x["unknown_hours"] = o.unknown_hours;
      if (r.has_costs) {
        x["busy_cost"] = o.busy_cost;
        x["held_idle_by_lease_cost"] = o.held_idle_by_lease_cost;
        x["held_idle_by_process_cost"] = o.held_idle_by_process_cost;
      }
    }
    if (o.mean_utilization_ratio) x["mean_utilization_ratio"] = *o.mean_utilization_ratio;
    if (o.memory_max_mib) x["memory_max_mib"] = *o.memory_max_mib;
    j["owners"].push_back(x);
  }
  j["top_held_idle"] = nlohmann::json::array();
  for (const store::HeldIdleSession& p : r.top_held_idle) {
    j["top_held_idle"].push_back({{"pid", p.pid},
                                  {"user", p.user},
                                  {"command", p.command},
                                  {"gpu_index", p.gpu_index},
                                  {"first_seen", p.first_seen},
                                  {"last_seen", p.last_seen},
                                  {"held_idle_hours", HeldIdleHours(p)},
                                  {"memory_max_mib", p.memory_max_mib}});
  }
  return j.dump(2) + "\n";
}

std::string RenderCsv(const Report& r) {
  std::string out;
  if (r.by == GroupBy::kGpu) {
    out =
        "gpu,uuid,name,covered_hours,mean_utilization_ratio,duty_cycle_ratio,idle_hours,held_idle_hours,"
        "energy_kwh,"
        "throttle_thermal_hours,throttle_power_hours,throttle_other_hours,xid_count,idle_cost,busy_hours,"
        "unknown_hours,backfill_hours,backfill_preemptions\n";
    for (const GpuLine& g : r.gpus) {
      out += fmt::format(
          "{},{},{},{:.3f},{},{},{:.3f},{:.3f},{:.3f},{:.3f},{:.3f},{:.3f},{},{},{:.3f},{:.3f},{:.3f},{}\n",
          g.index, g.uuid, CsvField(g.name), g.covered_hours,
          g.mean_utilization_ratio ? fmt::format("{:.4f}", *g.mean_utilization_ratio) : "",
          g.duty_cycle_ratio ? fmt::format("{:.4f}", *g.duty_cycle_ratio) : "", g.idle_hours,
          g.held_idle_hours, g.energy_kwh, g.throttle_thermal_hours, g.throttle_power_hours,
          g.throttle_other_hours, g.xid_count, r.has_costs ? fmt::format("{:.2f}", g.idle_cost) : "",
          g.busy_hours, g.unknown_hours, g.backfill_hours, g.backfill_preemptions);
    }
    return out;
  }
  out = fmt::format(
      "{},gpu_hours_held,gpu_hours_busy,held_idle_hours,idle_cost,mean_utilization_ratio,memory_max_mib,"
      "held_idle_by_lease_hours,held_idle_by_process_hours,unknown_hours\n",
      ByName(r.by));
  for (const OwnerLine& o : r.owners) {
    out += fmt::format("{},{:.3f},{:.3f},{:.3f},{},{},{},{:.3f},{:.3f},{:.3f}\n", CsvField(o.owner),
                       o.gpu_hours_held, o.gpu_hours_busy, o.held_idle_hours,
                       r.has_costs ? fmt::format("{:.2f}", o.idle_cost) : "",
                       o.mean_utilization_ratio ? fmt::format("{:.4f}", *o.mean_utilization_ratio) : "",
                       o.memory_max_mib ? std::to_string(*o.memory_max_mib) : "", o.held_idle_by_lease_hours,
                       o.held_idle_by_process_hours, o.unknown_hours);
  }
  return out;
}

}  // namespace tarmac::report
