// SPDX-License-Identifier: Apache-2.0
#include "fleet/fleet_render.h"

#include <fmt/format.h>

#include <chrono>
#include <cmath>

#include "common/text_wrap.h"
#include "common/time_spec.h"
#include "common/units.h"

namespace tarmac::fleet {
namespace {

using nlohmann::json;

std::string Pct(const std::optional<double>& ratio) {
  return ratio ? fmt::format("{:.0f}%", *ratio * 100) : std::string("-");
}

std::string Memory(const FleetGpu& g) {
  constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
  if (!g.memory_used_bytes) return "-";
  if (!g.memory_total_bytes) return fmt::format("{:.1f} GiB", *g.memory_used_bytes / kGiB);
  return fmt::format("{:.1f} / {:.1f} GiB", *g.memory_used_bytes / kGiB, *g.memory_total_bytes / kGiB);
}

std::string Power(const FleetGpu& g) {
  if (!g.power_watts) return "-";
  if (!g.power_limit_watts) return fmt::format("{:.0f} W", *g.power_watts);
  return fmt::format("{:.0f} / {:.0f} W", *g.power_watts, *g.power_limit_watts);
}

}  // namespace

std::string HolderText(const FleetGpu& g) {
  if (g.holders.empty()) return g.pod.empty() ? "-" : "pod " + g.pod;
  const GpuHolder& h = g.holders.front();
  std::string text = h.kind == "slurm" && !h.slurm_job.empty()
                         ? fmt::format("job {} ({})", h.slurm_job, h.user)
                         : fmt::format("lease {} ({})", h.lease, h.user);
  if (h.kind == "backfill") text += " backfill";
  if (h.kind == "pod" && !g.pod.empty()) text = fmt::format("pod {}", g.pod);
  if (g.holders.size() > 1) text += fmt::format(" +{}", g.holders.size() - 1);
  return text;
}

std::string ShortModel(const std::string& model) {
  return model.rfind("NVIDIA ", 0) == 0 ? model.substr(7) : model;
}

namespace {

// What status shows in its NOTES column: busy or idle, the holder, the
// idle holders, throttling.
std::string Notes(const FleetGpu& g, bool is_up) {
  if (!is_up) return "";
  if (g.is_lost) return "LOST";
  std::string notes = g.verdict == "drain" ? "DRAIN  " : g.verdict == "degraded" ? "degraded  " : "";
  notes += g.is_idle ? "idle" : "busy";
  if (!g.holders.empty() || !g.pod.empty()) notes += "  " + HolderText(g);
  if (g.is_held_idle) {
    notes += fmt::format("  {} idle holder{}", g.idle_holders, g.idle_holders == 1 ? "" : "s");
  }
  if (!g.throttle_reasons.empty()) {
    std::string reasons = fmt::format("{}", fmt::join(g.throttle_reasons, ", "));
    notes += "  THROTTLED (" + reasons + ")";
  }
  if (g.pcie_link_width) notes += fmt::format("  PCIe x{:.0f}", *g.pcie_link_width);
  if (g.ecc_uncorrected) notes += fmt::format("  ECC {:.0f} uncorrected", *g.ecc_uncorrected);
  if (g.xid_errors) notes += fmt::format("  {:.0f} Xid{}", *g.xid_errors, *g.xid_errors == 1 ? "" : "s");
  return notes;
}

std::string Ago(double seconds) {
  return FormatDuration(std::chrono::seconds(static_cast<int64_t>(std::max(0.0, seconds))));
}

void Put(json* j, const char* key, const std::optional<double>& v) {
  if (v) (*j)[key] = *v;
}

// The lines every view of the fleet starts with: how many nodes, from
// where; the totals; a partial answer and the store's warnings.
std::string FleetHeader(const FleetView& view, size_t width) {
  FleetTotals totals = Totals(view);
  std::string out = fmt::format("fleet: {} node{} via {}\n", totals.nodes, totals.nodes == 1 ? "" : "s",
                                view.prometheus_url);
  out += WrapText(TotalsLine(totals), width, 0, 2) + "\n";
  if (view.is_partial) out += "partial answer: some of Prometheus' stores did not answer\n";
  for (const std::string& w : view.warnings) out += WrapText("warning: " + w, width, 0, 2) + "\n";
  return out;
}

// "DOWN since 2026-12-03 15:02 UTC (3m 10s ago)", or "DOWN".
std::string DownSince(const FleetView& view, const FleetNode& node) {
  return node.last_seen_unix
             ? fmt::format("DOWN since {} ({} ago)", FormatUtc(static_cast<int64_t>(*node.last_seen_unix)),
                           Ago(view.taken_at_unix - *node.last_seen_unix))
             : "DOWN";
}

}  // namespace

std::string RenderFleetText(const FleetView& view, size_t width) {
  std::string out = FleetHeader(view, width);
  for (const FleetNode& node : view.nodes) {
    out += "\n";
    std::string head =
        fmt::format("{}  {} GPU{}", node.name, node.gpus.size(), node.gpus.size() == 1 ? "" : "s");
    if (node.source != "tarmac") head += "  (" + node.source + ")";
    if (!node.is_up) head += "  " + DownSince(view, node);
    out += head + "\n";
    if (!node.is_up) continue;
    out += fmt::format("{:<4}{:<18}{:>5}  {:<17} {:<13}{:>5}  {}\n", "GPU", "NAME", "UTIL", "MEMORY", "POWER",
                       "TEMP", "NOTES");
    for (const FleetGpu& g : node.gpus) {
      std::string model = ShortModel(g.model);
      if (model.size() > 17) model = model.substr(0, 17);
      std::string line = fmt::format(
          "{:<4}{:<18}{:>5}  {:<17} {:<13}{:>5}", g.index, model, Pct(g.utilization_ratio), Memory(g),
          Power(g), g.temperature_celsius ? fmt::format("{:.0f}C", *g.temperature_celsius) : "-");
      std::string notes = Notes(g, node.is_up);
      if (width == 0 || line.size() + 2 + notes.size() <= width) {
        out += line + "  " + notes + "\n";
      } else if (8 + notes.size() <= width) {
        out += line + "\n        " + notes + "\n";  // Notes that do not fit: a line of their own.
      } else {
        out += line + "\n        " + WrapText(notes, width, 8, 8) + "\n";
      }
    }
  }
  return out;
}

namespace {

json NodeToJson(const FleetNode& node) {
  json n = {{"name", node.name}, {"instance", node.instance}, {"source", node.source}, {"up", node.is_up}};
  Put(&n, "last_seen_unix", node.last_seen_unix);
  json gpus = json::array();
  for (const FleetGpu& g : node.gpus) {
    json x = {{"index", g.index}, {"uuid", g.uuid}, {"model", g.model}};
    Put(&x, "utilization_ratio", g.utilization_ratio);
    Put(&x, "memory_used_bytes", g.memory_used_bytes);
    Put(&x, "memory_total_bytes", g.memory_total_bytes);
    Put(&x, "memory_free_bytes", g.memory_free_bytes);
    Put(&x, "power_watts", g.power_watts);
    Put(&x, "power_limit_watts", g.power_limit_watts);
    Put(&x, "temperature_celsius", g.temperature_celsius);
    if (node.is_up) {
      x["idle"] = g.is_idle;
      x["held_idle"] = g.is_held_idle;
      x["lost"] = g.is_lost;
      if (!g.verdict.empty()) x["verdict"] = g.verdict;
      Put(&x, "pcie_link_width", g.pcie_link_width);
      Put(&x, "xid_errors", g.xid_errors);
      Put(&x, "ecc_uncorrected", g.ecc_uncorrected);
      x["idle_holders"] = g.idle_holders;
      x["processes"] = g.processes;
      Put(&x, "idle_for_seconds", g.idle_for_seconds);
      Put(&x, "held_idle_for_seconds", g.held_idle_for_seconds);
      if (g.idle_for_cost) {
        x["idle_for_cost"] = *g.idle_for_cost;
        x["currency"] = g.currency;
      }
      if (g.recent_utilization_ratio) x["utilization_recent_ratio"] = *g.recent_utilization_ratio;
      x["throttle_reasons"] = g.throttle_reasons;
    }
    json holders = json::array();
    for (const GpuHolder& h : g.holders) {
      json hj = {{"lease", h.lease}, {"user", h.user}, {"kind", h.kind}};
      if (!h.slurm_job.empty()) hj["slurm_job"] = h.slurm_job;
      if (!h.mig_uuid.empty()) hj["mig_uuid"] = h.mig_uuid;
      holders.push_back(std::move(hj));
    }
    x["holders"] = std::move(holders);
    if (!g.pod.empty()) x["pod"] = g.pod;
    gpus.push_back(std::move(x));
  }
  n["gpus"] = std::move(gpus);
  return n;
}

// The document with an empty node list, which WriteFleetJson fills.
json FleetHead(const FleetView& view) {
  FleetTotals t = Totals(view);
  return {{"prometheus", view.prometheus_url},
          {"taken_at_unix", view.taken_at_unix},
          {"partial", view.is_partial},
          {"warnings", view.warnings},
          {"totals",
           {{"nodes", t.nodes},
            {"nodes_down", t.nodes_down},
            {"gpus", t.gpus},
            {"gpus_idle", t.gpus_idle},
            {"gpus_held_idle", t.gpus_held_idle},
            {"idle_holders", t.idle_holders},
            {"gpus_leased", t.gpus_leased},
            {"line", TotalsLine(t)}}},
          {"nodes", json::array()}};
}

}  // namespace

json FleetToJson(const FleetView& view) {
  json out = FleetHead(view);
  for (const FleetNode& node : view.nodes) out["nodes"].push_back(NodeToJson(node));
  return out;
}

void WriteFleetJson(const FleetView& view, std::FILE* out) {
  const std::string head = FleetHead(view).dump(2);
  const std::string empty = "\n  \"nodes\": []";  // The top level's, indented once.
  const size_t at = head.find(empty);
  std::string text = head.substr(0, at) + "\n  \"nodes\": [";
  for (size_t i = 0; i < view.nodes.size(); ++i) {
    std::string node = NodeToJson(view.nodes[i]).dump(2);
    text += i == 0 ? "\n    " : ",\n    ";
    // Each of its lines indented twice more, a line at a time.
    for (size_t from = 0; from < node.size();) {
      size_t end = node.find('\n', from);
      end = end == std::string::npos ? node.size() : end + 1;
      text.append(node, from, end - from);
      if (node[end - 1] == '\n') text += "    ";
      from = end;
    }
    std::fwrite(text.data(), 1, text.size(), out);
    text.clear();
  }
  text += view.nodes.empty() ? "]" : "\n  ]";
  text += head.substr(at + empty.size()) + "\n";
  std::fwrite(text.data(), 1, text.size(), out);
}

std::string RenderNodesText(const FleetView& view, size_t width) {
  std::string out = FleetHeader(view, width) + "\n";
  size_t name_width = 4;
  for (const FleetNode& node : view.nodes)
    name_width = std::max(name_width, std::min<size_t>(node.name.size(), 40));
  // A line's columns up to its notes, every cell text.
  auto row = [name_width](const std::string& name, const std::string& gpus, const std::string& idle,
                          const std::string& held_idle, const std::string& leased, const std::string& util) {
    return fmt::format("{:<{}}  {:>5}  {:>5}  {:>9}  {:>6}  {:>5}", name, name_width, gpus, idle, held_idle,
                       leased, util);
  };
  out += row("NODE", "GPUS", "IDLE", "HELD IDLE", "LEASED", "UTIL") + "  NOTES\n";
  for (const FleetNode& node : view.nodes) {
    NodeCounts c = CountsOf(node);
    std::string notes = node.source == "tarmac" ? "" : "(" + node.source + ")  ";
    std::string line;
    if (!node.is_up) {
      line = row(node.name, std::to_string(c.gpus), "-", "-", "-", "-");
      notes += DownSince(view, node);
    } else {
      line = row(node.name, std::to_string(c.gpus), std::to_string(c.idle), std::to_string(c.held_idle),
                 std::to_string(c.leased), Pct(c.utilization_ratio));
      if (c.lost > 0) notes += fmt::format("{} LOST  ", c.lost);
      if (c.drain > 0) notes += fmt::format("{} DRAIN  ", c.drain);
      if (c.degraded > 0) notes += fmt::format("{} degraded  ", c.degraded);
      if (c.idle_holders > 0) {
        notes += fmt::format("{} idle holder{}", c.idle_holders, c.idle_holders == 1 ? "" : "s");
      }
    }
    while (!notes.empty() && notes.back() == ' ') notes.pop_back();
    if (notes.empty()) {
      out += line + "\n";
    } else if (width == 0 || line.size() + 2 + notes.size() <= width) {
      out += line + "  " + notes + "\n";
    } else {
      out += line + "\n        " + WrapText(notes, width, 8, 8) + "\n";
    }
  }
  return out;
}

json NodesToJson(const FleetView& view) {
  json out = FleetHead(view);
  for (const FleetNode& node : view.nodes) {
    NodeCounts c = CountsOf(node);
    json n = {{"name", node.name},
              {"instance", node.instance},
              {"source", node.source},
              {"up", node.is_up},
              {"gpus", c.gpus}};
    Put(&n, "last_seen_unix", node.last_seen_unix);
    if (node.is_up) {  // What a down node last said is not now.
      n["idle"] = c.idle;
      n["held_idle"] = c.held_idle;
      n["idle_holders"] = c.idle_holders;
      n["leased"] = c.leased;
      n["lost"] = c.lost;
      n["drain"] = c.drain;
      n["degraded"] = c.degraded;
      Put(&n, "utilization_ratio", c.utilization_ratio);
    }
    out["nodes"].push_back(std::move(n));
  }
  return out;
}

}  // namespace tarmac::fleet
