// SPDX-License-Identifier: Apache-2.0
#include "fleet/fleet_view.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace tarmac::fleet {
namespace {

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// 1024 -> "1,024".
std::string Thousands(int n) {
  std::string digits = std::to_string(n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

}  // namespace

bool ModelMatches(const std::string& model, const std::string& part) {
  return Lower(model).find(Lower(part)) != std::string::npos;
}

FleetView Filter(const FleetView& view, const FleetFilter& filter) {
  FleetView out = view;
  out.nodes.clear();
  bool filters_gpus = !filter.model.empty() || filter.idle_only || filter.held_idle_only;
  for (const FleetNode& node : view.nodes) {
    if (filter.node && !std::regex_match(node.name, *filter.node)) continue;
    FleetNode kept = node;
    kept.gpus.clear();
    for (const FleetGpu& g : node.gpus) {
      if (!ModelMatches(g.model, filter.model)) continue;
      if (filter.idle_only && (!node.is_up || !g.is_idle)) continue;
      if (filter.held_idle_only && (!node.is_up || !g.is_held_idle)) continue;
      kept.gpus.push_back(g);
    }
    if (filters_gpus && kept.gpus.empty()) continue;
    out.nodes.push_back(std::move(kept));
  }
  return out;
}

NodeCounts CountsOf(const FleetNode& node) {
  if (node.counts) return *node.counts;
  NodeCounts c;
  c.gpus = static_cast<int>(node.gpus.size());
  if (!node.is_up) return c;
  double utilization = 0;
  int read = 0;
  for (const FleetGpu& g : node.gpus) {
    c.idle += g.is_idle ? 1 : 0;
    c.held_idle += g.is_held_idle ? 1 : 0;
    c.idle_holders += g.is_held_idle ? g.idle_holders : 0;
    c.leased += g.holders.empty() ? 0 : 1;
    c.lost += g.is_lost ? 1 : 0;
    c.drain += g.verdict == "drain" ? 1 : 0;
    c.degraded += g.verdict == "degraded" ? 1 : 0;
    if (g.utilization_ratio) {
      utilization += *g.utilization_ratio;
      ++read;
    }
  }
  if (read > 0) c.utilization_ratio = utilization / read;
  return c;
}

FleetTotals Totals(const FleetView& view) {
  FleetTotals t;
  for (const FleetNode& node : view.nodes) {
    ++t.nodes;
    if (!node.is_up) ++t.nodes_down;
    NodeCounts c = CountsOf(node);
    t.gpus += c.gpus;
    if (!node.is_up) continue;  // What a down node last said is not now.
    t.gpus_idle += c.idle;
    t.gpus_held_idle += c.held_idle;
    t.idle_holders += c.idle_holders;
    t.gpus_leased += c.leased;
  }
  return t;
}

bool GoesByNode(const std::string& by, std::optional<int> nodes_now) {
  if (!by.empty()) return by == "node";
  return nodes_now && *nodes_now > kNodesListedByGpu;
}

std::string TotalsLine(const FleetTotals& t) {
  std::string line =
      fmt::format("{} of {} GPU{} idle", Thousands(t.gpus_idle), Thousands(t.gpus), t.gpus == 1 ? "" : "s");
  if (t.gpus_held_idle > 0) {
    line += fmt::format("; {} held idle by {} process{}", Thousands(t.gpus_held_idle),
                        Thousands(t.idle_holders), t.idle_holders == 1 ? "" : "es");
  }
  if (t.gpus_leased > 0) line += fmt::format("; {} leased", Thousands(t.gpus_leased));
  if (t.nodes_down > 0) line += fmt::format("; {} node{} down", t.nodes_down, t.nodes_down == 1 ? "" : "s");
  return line;
}

}  // namespace tarmac::fleet
