// SPDX-License-Identifier: Apache-2.0
#include "fleet/fleet_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <set>

#include "common/enum_names.h"
#include "common/text_wrap.h"
#include "common/time_spec.h"
#include "common/units.h"
#include "fleet/fleet_render.h"
#include "fleet/report_pieces.h"
#include "node/metric_families.h"

namespace tarmac::fleet {
namespace {

using prom::QueryResult;
using prom::Sample;

constexpr double kHour = 3600;

// Each grouping's name (--by) and its column's heading.
constexpr std::pair<ReportBy, const char*> kByNames[] = {
    {ReportBy::kNode, "node"},           {ReportBy::kGpu, "gpu"},
    {ReportBy::kModel, "model"},         {ReportBy::kUser, "user"},
    {ReportBy::kNamespace, "namespace"}, {ReportBy::kPod, "pod"},
    {ReportBy::kSlurmJob, "slurm-job"}};
constexpr std::pair<ReportBy, const char*> kByHeadings[] = {
    {ReportBy::kNode, "NODE"},           {ReportBy::kGpu, "GPU"},
    {ReportBy::kModel, "MODEL"},         {ReportBy::kUser, "USER"},
    {ReportBy::kNamespace, "NAMESPACE"}, {ReportBy::kPod, "POD"},
    {ReportBy::kSlurmJob, "SLURM JOB"}};

const char* ByName(ReportBy by) { return EnumName(kByNames, by); }
const char* Heading(ReportBy by) { return EnumName(kByHeadings, by); }

std::string GpuKey(const Sample& s) { return s.Label("hostname") + " GPU " + s.Label("gpu"); }

std::string RowKey(const Sample& s, ReportBy by) {
  switch (by) {
    case ReportBy::kNode:
      return s.Label("hostname");
    case ReportBy::kGpu:
      return GpuKey(s);
    case ReportBy::kModel:
      return s.Label("model");
    case ReportBy::kUser:
      return s.Label("user");
    case ReportBy::kNamespace:
      return s.Label("namespace");
    case ReportBy::kPod:
      return s.Label("pod").empty() ? "" : s.Label("namespace") + "/" + s.Label("pod");
    case ReportBy::kSlurmJob:
      return s.Label("slurm_job");
  }
  return "";
}

double Finite(double v) { return std::isfinite(v) ? v : 0; }

// By user: the time charged to them.
double UserHeldHours(const ReportRow& row) {
  return row.busy_hours + row.held_idle_hours + row.unknown_hours;
}

double LeasedHours(const ReportRow& row) {
  double h = 0;
  for (const auto& [kind, hours] : row.lease_hours) h += hours;
  return h;
}

}  // namespace

bool IsHolderGrouping(ReportBy by) {
  return by != ReportBy::kNode && by != ReportBy::kGpu && by != ReportBy::kModel;
}

bool ParseReportBy(const std::string& text, ReportBy* by) { return ParseEnum(kByNames, text, by); }

std::vector<std::string> ReportByNames() { return EnumNames(kByNames); }

namespace {

using Rows = std::map<std::string, ReportRow>;

// Busy, idle, held-idle and unknown hours, per row and in all, from the
// states' seconds by node (and model, or GPU) and state.
void FoldStates(const std::vector<Sample>& states, ReportBy by, FleetReport* r, Rows* rows) {
  for (const Sample& s : states) {
    double hours = Finite(s.value) / kHour;
    const std::string& state = s.Label("state");
    auto add = [&](ReportRow& row) {
      if (state == "busy") row.busy_hours += hours;
      if (state == "idle") row.idle_hours += hours;
      if (state == "held_idle") row.held_idle_hours += hours;
      if (state == "unknown") row.unknown_hours += hours;
    };
    add(r->total);
    if (!IsHolderGrouping(by)) {
      std::string key = RowKey(s, by);
      (*rows)[key].key = key;
      add((*rows)[key]);
    }
  }
}

// Each GPU the margins name (by UUID): its mostly-idle margin over the
// range (kMostlyIdleMarginSeries: positive exactly when it was idle more
// than 80 % of the time it was known) and the hostnames it is under.
struct GpuSeen {
  double margin = 0;
  std::set<std::string> hosts;
};
using GpusSeen = std::map<std::string, GpuSeen>;

GpusSeen GpusOf(const std::vector<Sample>& margins) {
  GpusSeen gpus;
  for (const Sample& s : margins) {
    GpuSeen& g = gpus[s.Label("uuid")];
    g.margin += Finite(s.value);
    if (!s.Label("hostname").empty()) g.hosts.insert(s.Label("hostname"));
  }
  return gpus;
}

// The GPUs, of each row and in all, and those mostly idle.
void FoldGpus(const std::vector<Sample>& margins, const GpusSeen& gpus, ReportBy by, FleetReport* r,
              Rows* rows) {
  for (const auto& [uuid, g] : gpus) {
    if (g.margin > 0) ++r->mostly_idle_gpus;
  }
  r->total.gpus = static_cast<int>(gpus.size());
  if (IsHolderGrouping(by)) return;
  std::map<std::string, std::set<std::string>> gpus_of_row;
  for (const Sample& s : margins) gpus_of_row[RowKey(s, by)].insert(s.Label("uuid"));
  for (auto& [key, of_row] : gpus_of_row) {
    (*rows)[key].key = key;
    (*rows)[key].gpus = static_cast<int>(of_row.size());
  }
}

void FoldEnergyAndCost(const std::vector<Sample>& energy, const std::vector<Sample>& cost, ReportBy by,
                       FleetReport* r, Rows* rows) {
  for (const Sample& s : energy) {
    double kwh = Finite(s.value) / 3.6e6;
    r->total.energy_kwh += kwh;
    auto it = rows->find(RowKey(s, by));
    if (it != rows->end()) it->second.energy_kwh += kwh;
  }
  for (const Sample& s : cost) {
    r->currency = s.Label("currency");
    r->total.idle_cost += Finite(s.value);
    auto it = rows->find(RowKey(s, by));
    if (it != rows->end()) it->second.idle_cost += Finite(s.value);
  }
}

// Lease hours by kind; for rows of holders (users, pods, namespaces, Slurm
// jobs) the rows themselves, with the seconds each held GPUs by the GPU's
// state meanwhile.
void FoldHolders(const std::vector<Sample>& leases, const std::vector<Sample>* jobs, ReportBy by,
                 FleetReport* r, Rows* rows) {
  std::map<std::string, std::set<std::string>> gpus_of_holder;
  for (const Sample& s : leases) {
    double hours = Finite(s.value) / kHour;
    if (hours <= 0) continue;
    r->total.lease_hours[s.Label("kind")] += hours;
    std::string key = RowKey(s, by);
    auto it = rows->find(key);
    if (it != rows->end()) it->second.lease_hours[s.Label("kind")] += hours;
  }
  for (size_t i = 0; jobs != nullptr && i < jobs->size(); ++i) {
    const Sample& s = (*jobs)[i];
    double hours = Finite(s.value) / kHour;
    std::string key = RowKey(s, by);
    if (hours <= 0 || key.empty()) continue;
    ReportRow& row = (*rows)[key];
    row.key = key;
    const std::string& state = s.Label("state");
    if (state == "busy") row.busy_hours += hours;
    if (state == "idle") row.idle_hours += hours;
    if (state == "unknown") row.unknown_hours += hours;
    row.lease_hours[by == ReportBy::kSlurmJob ? "slurm" : "pod"] += hours;
    gpus_of_holder[key].insert(s.Label("uuid"));
  }
  for (auto& [holder, gpus] : gpus_of_holder) (*rows)[holder].gpus = static_cast<int>(gpus.size());
}

// By user: the GPU time and its cost charged to each, by who held it and
// the GPU's state meanwhile.
void FoldUserCharges(const std::vector<Sample>& seconds, const std::vector<Sample>& costs, FleetReport* r,
                     Rows* rows) {
  std::map<std::string, std::set<std::string>> gpus_of_user;
  auto add = [&](const Sample& s, double value, bool is_cost) {
    const std::string& user = s.Label("user");
    if (value <= 0 || user.empty()) return;
    ReportRow& row = (*rows)[user];
    row.key = user;
    const std::string& state = s.Label("state");
    bool is_lease = s.Label("held_by") == "lease";
    if (is_cost) {  // Of busy and idle time (unknown time is priced as neither).
      r->currency = s.Label("currency");
      if (state == "busy") row.busy_cost += value;
      if (state == "idle") (is_lease ? row.held_idle_by_lease_cost : row.held_idle_by_process_cost) += value;
      return;
    }
    double hours = value / kHour;
    gpus_of_user[user].insert(s.Label("uuid"));
    if (state == "busy") row.busy_hours += hours;
    if (state == "unknown") row.unknown_hours += hours;
    if (state == "idle") (is_lease ? row.held_idle_by_lease_hours : row.held_idle_by_process_hours) += hours;
  };
  for (const Sample& s : seconds) add(s, Finite(s.value), false);
  for (const Sample& s : costs) add(s, Finite(s.value), true);
  for (auto& [user, row] : *rows) {
    row.held_idle_hours = row.held_idle_by_lease_hours + row.held_idle_by_process_hours;
    row.idle_cost = row.held_idle_by_lease_cost + row.held_idle_by_process_cost;
    row.gpus = static_cast<int>(gpus_of_user[user].size());
  }
}

// The node x hour heatmap: each hour's end from the first whole hour after
// `since` (or `until` alone for a shorter range), the hour before it; from
// the hourly series, each evaluation hour the report read from them.
Status ReadHeatmap(prom::PromClient* client, int64_t since_unix, int64_t until_unix, const Increases& read,
                   FleetReport* r) {
  const bool hourly = read.read_hourly;
  double start = std::min<double>(static_cast<double>(since_unix) + kHour, static_cast<double>(until_unix));
  double end = static_cast<double>(until_unix);
  if (hourly) {
    end = static_cast<double>(read.last_evaluation_ms) / 1000;
    start = end - static_cast<double>(read.evaluation_hours - 1) * kHour;
  }
  std::map<std::string, std::map<int64_t, std::array<double, 3>>> sums;  // Node, hour: busy, held idle, read.
  const char* shares[] = {"{state=\"busy\"}", "{state=\"held_idle\"}", "{state!=\"unknown\"}"};
  for (size_t k = 0; k < 3; ++k) {
    // Each hour from the roll-ups per node where the store keeps them (one
    // sample per node, model and hour, at the times asked), else from the
    // raw counter.
    std::string hour =
        hourly ? NodeHourlySeriesOf(node::family::kGpuStateSecondsTotal) + shares[k]
               : fmt::format("increase({}{}[1h])", node::family::kGpuStateSecondsTotal, shares[k]);
    Result<prom::RangeResult> range =
        QueryRangeInPieces(client, fmt::format("sum by (hostname) ({})", hour), start, end, kHour);
    if (!range.ok()) return range.status();
    for (const std::string& w : range.value().warnings) r->warnings.push_back(w);
    for (const prom::Series& series : range.value().series) {
      for (const auto& [t, v] : series.points)
        sums[series.Label("hostname")][static_cast<int64_t>(t)][k] = Finite(v);
    }
  }
  for (const auto& [node, hours] : sums) {
    for (const auto& [t, v] : hours) {
      double read = v[2];
      r->heatmap[node].push_back(HourCell{t, read > 0 ? v[0] / read : 0, read > 0 ? v[1] / read : 0});
    }
  }
  return Status::OK();
}

// Each GPU is under one hostname (GpusOf), and each
// node's seconds by state add up to at most its GPUs times the range: more
// means the store holds a GPU twice (an agent scraped by two jobs, or two
// agents reporting one GPU), and every total would count it twice.
Status EachGpuOnce(const std::vector<Sample>& states, const GpusSeen& gpus, int64_t range_seconds) {
  std::map<std::string, std::pair<double, int>> of_host;  // Seconds, GPUs.
  for (const auto& [uuid, g] : gpus) {
    if (g.hosts.size() > 1) {
      std::string names;
      for (const std::string& h : g.hosts) names += (names.empty() ? "" : ", ") + h;
      return Status::InvalidArgument(fmt::format(
          "{} is in the store under more than one hostname ({}): its totals would be counted twice. Scrape "
          "each agent once (one job, one target), or give each node its own [http] hostname",
          uuid, names));
    }
    ++of_host[g.hosts.empty() ? "" : *g.hosts.begin()].second;
  }
  for (const Sample& s : states) of_host[s.Label("hostname")].first += Finite(s.value);
  // increase() extrapolates by up to half a scrape at each end of each piece.
  const double most = static_cast<double>(range_seconds) * 1.05 + 600;
  for (const auto& [host, of] : of_host) {
    const auto& [seconds, count] = of;
    if (seconds > most * std::max(count, 1)) {
      return Status::InvalidArgument(fmt::format(
          "node {} is in the store with {:.0f} s of GPU time for its {} GPU{} in a range of {} s: its "
          "totals would be counted twice. Scrape each agent once (one job, one target), or give each node "
          "its own [http] hostname",
          host, seconds, count, count == 1 ? "" : "s", range_seconds));
    }
  }
  return Status::OK();
}

// The rows in order (most idle first, or most held for holders) and the
// verdict.
void Conclude(Rows rows, FleetReport* r) {
  const ReportBy by = r->by;
  for (auto& [key, row] : rows) r->rows.push_back(std::move(row));
  auto idle = [](const ReportRow& row) { return row.idle_hours + row.held_idle_hours; };
  auto held = LeasedHours;
  // Users as `tarmac report --by user` orders them: most held idle first.
  auto key = [&](const ReportRow& row) {
    return by == ReportBy::kUser ? row.held_idle_hours : IsHolderGrouping(by) ? held(row) : idle(row);
  };
  std::stable_sort(r->rows.begin(), r->rows.end(), [&](const ReportRow& a, const ReportRow& b) {
    double ka = key(a), kb = key(b);
    return ka != kb ? ka > kb : a.key < b.key;
  });
  double read = r->total.busy_hours + idle(r->total);
  r->verdict = fmt::format(
      "{} of {} GPUs were idle more than 80 % of the time; {} of {} GPU-hours read were idle "
      "({} held idle by a process)",
      r->mostly_idle_gpus, r->total.gpus, FormatHours(idle(r->total)), FormatHours(read),
      FormatHours(r->total.held_idle_hours));
  if (r->total.idle_cost > 0)
    r->verdict += fmt::format("; the idle time cost {} {:.2f}", r->currency, r->total.idle_cost);
}

}  // namespace

Result<FleetReport> ReadFleetReport(prom::PromClient* client, int64_t since_unix, int64_t until_unix,
                                    ReportBy by, bool with_heatmap) {
  FleetReport r;
  r.since_unix = since_unix;
  r.until_unix = until_unix;
  r.by = by;
  // Per node (and model), with only the labels the rows need, from the
  // roll-ups per node and model; by GPU, per GPU. Each GPU's margin alone
  // is read per GPU: a week of ten thousand 8-GPU nodes is 320,000 series
  // of states, 80,000 of margins and 40,000 of the nodes' states.
  const bool per_gpu = by == ReportBy::kGpu;
  const std::string row_labels = per_gpu                  ? "hostname, gpu, uuid"
                                 : by == ReportBy::kNode  ? "hostname"
                                 : by == ReportBy::kModel ? "model"
                                                          : "";
  auto with = [&](const std::string& labels) {
    return row_labels.empty() ? labels : row_labels + ", " + labels;
  };
  // The states keep the hostname for EachGpuOnce.
  const std::string state_labels = per_gpu                  ? "hostname, gpu, uuid, state"
                                   : by == ReportBy::kModel ? "hostname, model, state"
                                                            : "hostname, state";
  auto rolled_up = [&](const char* raw) { return per_gpu ? std::string() : NodeHourlySeriesOf(raw); };
  const bool by_job = by == ReportBy::kNamespace || by == ReportBy::kPod || by == ReportBy::kSlurmJob;
  // In this order: states, margins, leases, then energy and cost (GPU rows)
  // or the user's seconds and cost (by user), then jobs (job rows). Read in
  // pieces, all at once (report_pieces.h). By GPU the states come in four
  // answers, each a quarter of the GPU-states.
  namespace f = node::family;
  std::vector<IncreaseQuery> queries = {
      {f::kGpuStateSecondsTotal, state_labels,
       per_gpu ? std::vector<std::string>{"{state=\"busy\"}", "{state=\"idle\"}", "{state=\"held_idle\"}",
                                          "{state!~\"busy|idle|held_idle\"}"}
               : std::vector<std::string>{},
       rolled_up(f::kGpuStateSecondsTotal)},
      {f::kGpuStateSecondsTotal,
       "hostname, gpu, uuid, model",
       {},
       kMostlyIdleMarginSeries,
       MostlyIdleMarginWeights()},
      // By user, each user's (from the series per GPU: the roll-ups keep
      // the kind alone); else by kind.
      by == ReportBy::kUser
          ? IncreaseQuery{f::kGpuLeaseSecondsTotal, "user, kind"}
          : IncreaseQuery{f::kGpuLeaseSecondsTotal, with("kind"), {}, rolled_up(f::kGpuLeaseSecondsTotal)}};
  if (!IsHolderGrouping(by)) {
    queries.push_back({f::kGpuEnergyJoulesTotal, row_labels, {}, rolled_up(f::kGpuEnergyJoulesTotal)});
    queries.push_back({f::kGpuIdleCostTotal, with("currency"), {}, rolled_up(f::kGpuIdleCostTotal)});
  }
  if (by == ReportBy::kUser) {
    queries.push_back({f::kGpuUserSecondsTotal, "uuid, user, held_by, state"});
    queries.push_back({f::kGpuUserCostTotal, "user, held_by, state, currency"});
  }
  if (by_job) queries.push_back({f::kGpuJobSecondsTotal, "hostname, uuid, namespace, pod, slurm_job, state"});
  Result<Increases> read = ReadIncreases(client, queries, since_unix, until_unix);
  if (!read.ok()) return read.status();
  r.warnings = read.value().warnings;
  r.read_hourly = read.value().read_hourly;
  std::vector<std::vector<Sample>>& samples = read.value().samples;
  const GpusSeen gpus = GpusOf(samples[1]);
  if (Status once = EachGpuOnce(samples[0], gpus, until_unix - since_unix); !once.ok()) return once;
  Rows rows;
  FoldStates(samples[0], by, &r, &rows);
  FoldGpus(samples[1], gpus, by, &r, &rows);
  if (!IsHolderGrouping(by)) FoldEnergyAndCost(samples[3], samples[4], by, &r, &rows);
  if (by == ReportBy::kUser) FoldUserCharges(samples[3], samples[4], &r, &rows);
  FoldHolders(samples[2], by_job ? &samples.back() : nullptr, by, &r, &rows);
  if (with_heatmap) {
    if (Status heat = ReadHeatmap(client, since_unix, until_unix, read.value(), &r); !heat.ok()) return heat;
  }
  Conclude(std::move(rows), &r);
  return r;
}

std::string RenderReportText(const FleetReport& r, size_t width) {
  std::string out = fmt::format("fleet report {} to {}\n\n{}\n\n", FormatUtc(r.since_unix),
                                FormatUtc(r.until_unix), WrapText(r.verdict, width, 0, 0));
  // What the store said, and why the raw counters were read.
  for (const std::string& w : r.warnings) out += WrapText("warning: " + w, width, 0, 2) + "\n";
  if (!r.warnings.empty()) out += "\n";
  if (r.by == ReportBy::kUser) {
    // The columns of `tarmac report --by user`.
    size_t user_width = r.currency.empty() ? 28 : 18;
    out += fmt::format("{:<{}}{:>6}{:>10}{:>10}{:>15}{:>16}{:>9}", "USER", user_width, "GPUS", "GPU HELD",
                       "BUSY", "IDLE IN LEASE", "IDLE BY PROCS", "UNKNOWN");
    if (!r.currency.empty()) out += fmt::format("{:>14}", "IDLE COST");
    out += "\n";
    for (const ReportRow& row : r.rows) {
      out += fmt::format("{:<{}}{:>6}{:>10}{:>10}{:>15}{:>16}{:>9}", row.key.substr(0, user_width - 1),
                         user_width, row.gpus, FormatHours(UserHeldHours(row)), FormatHours(row.busy_hours),
                         FormatHours(row.held_idle_by_lease_hours),
                         FormatHours(row.held_idle_by_process_hours), FormatHours(row.unknown_hours));
      if (!r.currency.empty())
        out += fmt::format("{:>14}", fmt::format("{} {:.2f}", r.currency, row.idle_cost));
      out += "\n";
    }
    if (r.rows.empty()) out += "(no lease or GPU process held a GPU in this range)\n";
    return out;
  }
  if (IsHolderGrouping(r.by)) {
    out += fmt::format("{:<40}{:>6}{:>10}{:>10}{:>10}{:>10}\n", Heading(r.by), "GPUS", "HELD", "BUSY", "IDLE",
                       "UNKNOWN");
    for (const ReportRow& row : r.rows) {
      out += fmt::format("{:<40}{:>6}{:>10}{:>10}{:>10}{:>10}\n", row.key.substr(0, 39), row.gpus,
                         FormatHours(LeasedHours(row)), FormatHours(row.busy_hours),
                         FormatHours(row.idle_hours), FormatHours(row.unknown_hours));
    }
    if (r.rows.empty()) out += fmt::format("(no {} held a GPU in this range)\n", ByName(r.by));
    return out;
  }
  std::string heading = Heading(r.by);
  auto line = [&](const ReportRow& row, const std::string& key) {
    std::string text = fmt::format("{:<26}{:>5}{:>9}{:>9}{:>10}{:>9}{:>9}{:>8.1f}kWh", key.substr(0, 25),
                                   row.gpus, FormatHours(row.busy_hours), FormatHours(row.idle_hours),
                                   FormatHours(row.held_idle_hours), FormatHours(row.unknown_hours),
                                   FormatHours(LeasedHours(row)), row.energy_kwh);
    if (!r.currency.empty())
      text += fmt::format("{:>12}", fmt::format("{} {:.2f}", r.currency, row.idle_cost));
    return text + "\n";
  };
  out += fmt::format("{:<26}{:>5}{:>9}{:>9}{:>10}{:>9}{:>9}{:>11}", heading, "GPUS", "BUSY", "IDLE",
                     "HELD-IDLE", "UNKNOWN", "LEASED", "ENERGY");
  if (!r.currency.empty()) out += fmt::format("{:>12}", "IDLE COST");
  out += "\n";
  for (const ReportRow& row : r.rows) out += line(row, row.key);
  out += line(r.total, "all");
  return out;
}

nlohmann::json ReportToJson(const FleetReport& r) {
  auto row_json = [&](const ReportRow& row) {
    nlohmann::json j = {{"key", row.key},
                        {"gpus", row.gpus},
                        {"busy_hours", row.busy_hours},
                        {"idle_hours", row.idle_hours},
                        {"held_idle_hours", row.held_idle_hours},
                        {"unknown_hours", row.unknown_hours},
                        {"energy_kwh", row.energy_kwh},
                        {"lease_hours", row.lease_hours}};
    if (!r.currency.empty()) j["idle_cost"] = row.idle_cost;
    if (r.by == ReportBy::kUser) {
      j["gpu_hours_held"] = UserHeldHours(row);
      j["held_idle_by_lease_hours"] = row.held_idle_by_lease_hours;
      j["held_idle_by_process_hours"] = row.held_idle_by_process_hours;
      if (!r.currency.empty()) {
        j["busy_cost"] = row.busy_cost;
        j["held_idle_by_lease_cost"] = row.held_idle_by_lease_cost;
        j["held_idle_by_process_cost"] = row.held_idle_by_process_cost;
      }
    }
    return j;
  };
  nlohmann::json rows = nlohmann::json::array();
  for (const ReportRow& row : r.rows) rows.push_back(row_json(row));
  nlohmann::json j = {{"since", r.since_unix},
                      {"until", r.until_unix},
                      {"by", ByName(r.by)},
                      {"verdict", r.verdict},
                      {"rows", std::move(rows)},
                      {"total", row_json(r.total)},
                      {"mostly_idle_gpus", r.mostly_idle_gpus},
                      {"warnings", r.warnings},
                      {"read_from", r.read_hourly ? "hourly series" : "raw counters"}};
  if (!r.currency.empty()) j["currency"] = r.currency;
  return j;
}

std::string RenderReportCsv(const FleetReport& r) {
  auto quoted = [](const std::string& s) {
    if (s.find_first_of(",\"\n") == std::string::npos) return s;
    std::string out = "\"";
    for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
    return out + "\"";
  };
  std::string out = fmt::format(
      "{},gpus,busy_hours,idle_hours,held_idle_hours,unknown_hours,lease_hours,energy_kwh,idle_cost,"
      "held_idle_by_lease_hours,held_idle_by_process_hours\n",
      ByName(r.by));
  for (const ReportRow& row : r.rows) {
    double leased = LeasedHours(row);
    out += fmt::format("{},{},{:.3f},{:.3f},{:.3f},{:.3f},{:.3f},{:.3f},{:.2f},{:.3f},{:.3f}\n",
                       quoted(row.key), row.gpus, row.busy_hours, row.idle_hours, row.held_idle_hours,
                       row.unknown_hours, leased, row.energy_kwh, row.idle_cost, row.held_idle_by_lease_hours,
                       row.held_idle_by_process_hours);
  }
  return out;
}

}  // namespace tarmac::fleet
