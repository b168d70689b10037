// SPDX-License-Identifier: Apache-2.0
#include "fleet/fleet_idle.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <map>

#include "common/units.h"
#include "fleet/fleet_render.h"

namespace tarmac::fleet {
namespace {

double Spell(const FleetGpu& g) {
  return std::max(g.idle_for_seconds.value_or(0), g.held_idle_for_seconds.value_or(0));
}

std::string Span(const std::optional<double>& seconds) {
  if (!seconds || *seconds <= 0) return "-";
  return FormatDuration(std::chrono::seconds(static_cast<int64_t>(*seconds)));
}

std::string Who(const FleetGpu& g) {
  if (!g.holders.empty() || !g.pod.empty()) return HolderText(g);
  if (g.processes == 0) return "-";
  constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
  return fmt::format("{} process{}, {:.1f} GiB", g.processes, g.processes == 1 ? "" : "es",
                     g.memory_used_bytes.value_or(0) / kGiB);
}

}  // namespace

std::vector<IdleRow> IdleNow(const FleetView& view) {
  std::vector<IdleRow> rows;
  for (const FleetNode& node : view.nodes) {
    if (!node.is_up) continue;
    for (const FleetGpu& g : node.gpus) {
      if (g.is_idle || g.is_held_idle) rows.push_back({&node, &g});
    }
  }
  std::stable_sort(rows.begin(), rows.end(), [](const IdleRow& a, const IdleRow& b) {
    double ca = a.gpu->idle_for_cost.value_or(0), cb = b.gpu->idle_for_cost.value_or(0);
    if (ca != cb) return ca > cb;
    if (Spell(*a.gpu) != Spell(*b.gpu)) return Spell(*a.gpu) > Spell(*b.gpu);
    if (a.node->name != b.node->name) return a.node->name < b.node->name;
    return a.gpu->index < b.gpu->index;
  });
  return rows;
}

std::string IdleSummary(const std::vector<IdleRow>& rows) {
  int held = 0;
  double hours = 0;
  std::map<std::string, double> cost;  // By currency.
  for (const IdleRow& r : rows) {
    held += r.gpu->is_held_idle ? 1 : 0;
    hours += Spell(*r.gpu) / 3600;
    if (r.gpu->idle_for_cost) cost[r.gpu->currency] += *r.gpu->idle_for_cost;
  }
  std::string line = fmt::format("{} GPU{} idle now", rows.size(), rows.size() == 1 ? "" : "s");
  if (held > 0) line += fmt::format(" ({} held idle)", held);
  line += fmt::format(", {:.1f} GPU-hours so far", hours);
  for (const auto& [currency, amount] : cost) {
    line += fmt::format(", {}{:.2f}", currency.empty() ? "" : currency + " ", amount);
  }
  return line;
}

std::string RenderIdleText(const FleetView& view, size_t width) {
  std::vector<IdleRow> rows = IdleNow(view);
  std::string out = IdleSummary(rows) + "\n";
  if (rows.empty()) return out;
  out += fmt::format("\n{:<14}{:<5}{:<18}{:>10}{:>10}{:>14}  {}\n", "NODE", "GPU", "NAME", "IDLE FOR",
                     "HELD FOR", "COST SO FAR", "HOLDER");
  for (const IdleRow& r : rows) {
    const FleetGpu& g = *r.gpu;
    std::string node = r.node->name.size() > 13 ? r.node->name.substr(0, 12) + "~" : r.node->name;
    std::string model = ShortModel(g.model).substr(0, 17);
    std::string cost = g.idle_for_cost ? fmt::format("{}{:.2f}", g.currency.empty() ? "" : g.currency + " ",
                                                     *g.idle_for_cost)
                                       : "-";
    std::string line = fmt::format("{:<14}{:<5}{:<18}{:>10}{:>10}{:>14}  ", node, g.index, model,
                                   Span(g.is_idle ? g.idle_for_seconds : std::nullopt),
                                   Span(g.is_held_idle ? g.held_idle_for_seconds : std::nullopt), cost);
    std::string who = Who(g);
    if (width > 0 && line.size() + who.size() > width)
      who = who.substr(0, width > line.size() + 1 ? width - line.size() - 1 : 0) + "~";
    out += line + who + "\n";
  }
  return out;
}

nlohmann::json IdleToJson(const FleetView& view) {
  std::vector<IdleRow> rows = IdleNow(view);
  nlohmann::json list = nlohmann::json::array();
  for (const IdleRow& r : rows) {
    const FleetGpu& g = *r.gpu;
    nlohmann::json x = {{"node", r.node->name},    {"index", g.index},  {"uuid", g.uuid},
                        {"model", g.model},        {"idle", g.is_idle}, {"held_idle", g.is_held_idle},
                        {"processes", g.processes}};
    if (g.idle_for_seconds) x["idle_for_seconds"] = *g.idle_for_seconds;
    if (g.held_idle_for_seconds) x["held_idle_for_seconds"] = *g.held_idle_for_seconds;
    if (g.idle_for_cost) {
      x["idle_for_cost"] = *g.idle_for_cost;
      x["currency"] = g.currency;
    }
    if (g.memory_used_bytes) x["memory_used_bytes"] = *g.memory_used_bytes;
    nlohmann::json holders = nlohmann::json::array();
    for (const GpuHolder& h : g.holders)
      holders.push_back({{"lease", h.lease}, {"user", h.user}, {"kind", h.kind}});
    x["holders"] = std::move(holders);
    x["held_by"] = Who(g);  // As the text says it: a lease, a pod, or its processes.
    list.push_back(std::move(x));
  }
  return {{"prometheus", view.prometheus_url}, {"summary", IdleSummary(rows)}, {"gpus", std::move(list)}};
}

}  // namespace tarmac::fleet
