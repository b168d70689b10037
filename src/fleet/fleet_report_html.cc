// SPDX-License-Identifier: Apache-2.0
//
// fleet report as one HTML file: the verdict, a node x hour heatmap (the
// share of the GPU time read that was busy; an hour held idle half the
// time or more in orange), its legend, and the rows' table. Inline CSS and
// SVG: it opens offline and prints.
#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "common/html_chart.h"
#include "common/time_spec.h"
#include "common/units.h"
#include "fleet/fleet_render.h"
#include "fleet/fleet_report.h"

namespace tarmac::fleet {
namespace {

std::string Escape(const std::string& s) { return EscapeHtml(s); }

std::string Heatmap(const FleetReport& r) {
  std::set<int64_t> hours;
  for (const auto& [node, cells] : r.heatmap) {
    for (const HourCell& c : cells) hours.insert(c.hour_end_unix);
  }
  if (hours.empty()) return "<p>(no node reported in this range)</p>\n";
  std::vector<int64_t> columns(hours.begin(), hours.end());
  int left = 160, row = 18;
  double cell = std::clamp(800.0 / static_cast<double>(columns.size()), 2.0, 24.0);
  double width = std::max(left + cell * static_cast<double>(columns.size()) + 10, 620.0);
  int height = row * static_cast<int>(r.heatmap.size()) + 64;
  std::string svg = fmt::format(
      "<svg class=\"heatmap\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{:.0f}\" height=\"{}\" "
      "role=\"img\" "
      "aria-label=\"busy share per node and hour\">\n",
      width, height);
  int y = 0;
  for (const auto& [node, cells] : r.heatmap) {
    svg += fmt::format("<text x=\"0\" y=\"{}\" font-size=\"12\">{}</text>\n", y + 13,
                       Escape(node.size() > 24 ? node.substr(0, 23) + "~" : node));
    for (const HourCell& c : cells) {
      size_t at = static_cast<size_t>(std::lower_bound(columns.begin(), columns.end(), c.hour_end_unix) -
                                      columns.begin());
      bool is_held = c.held_idle_ratio >= kHeldIdleShare;
      svg += fmt::format(
          "<rect class=\"{}\" x=\"{:.1f}\" y=\"{}\" width=\"{:.1f}\" height=\"{}\" fill=\"{}\"><title>{} "
          "hour to {}: "
          "{:.0f}% busy, {:.0f}% held idle</title></rect>\n",
          is_held ? "held-idle" : "hour", left + cell * static_cast<double>(at), y, std::max(cell - 0.5, 0.5),
          row - 2, is_held ? kHeldIdleColor : UtilizationColor(c.busy_ratio), Escape(node),
          Escape(FormatUtc(c.hour_end_unix)), c.busy_ratio * 100, c.held_idle_ratio * 100);
    }
    y += row;
  }
  y += 16;
  svg += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"11\">{}</text>\n", left, y,
                     Escape(FormatUtc(r.since_unix)));
  svg += fmt::format("<text x=\"{:.0f}\" y=\"{}\" font-size=\"11\" text-anchor=\"end\">{}</text>\n",
                     width - 10, y, Escape(FormatUtc(r.until_unix)));
  svg += HeatmapLegend("busy share", left, y + 14, false);
  return svg + "</svg>\n";
}

}  // namespace

std::string RenderReportHtml(const FleetReport& r) {
  std::string html = ReportPageStart(
      fmt::format("Fleet report: {} to {}", FormatUtc(r.since_unix), FormatUtc(r.until_unix)), r.verdict);
  html += "<h2>Busy share per node and hour</h2>\n";
  html += Heatmap(r);
  html +=
      "<h2>Rows</h2>\n<table><tr><th>Row</th><th>GPUs</th><th>Busy</th><th>Idle</th><th>Held idle</th>"
      "<th>Unknown</th><th>Leased</th><th>Energy kWh</th>";
  if (!r.currency.empty()) html += "<th>Idle cost</th>";
  html += "</tr>\n";
  auto line = [&](const ReportRow& row, const std::string& key) {
    double leased = 0;
    for (const auto& [kind, hours] : row.lease_hours) leased += hours;
    std::string text = fmt::format(
        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.1f}</td>",
        Escape(key), row.gpus, FormatHours(row.busy_hours), FormatHours(row.idle_hours),
        FormatHours(row.held_idle_hours), FormatHours(row.unknown_hours), FormatHours(leased),
        row.energy_kwh);
    if (!r.currency.empty()) text += fmt::format("<td>{} {:.2f}</td>", Escape(r.currency), row.idle_cost);
    return text + "</tr>\n";
  };
  for (const ReportRow& row : r.rows) html += line(row, row.key);
  html += line(r.total, "all");
  return html + "</table>\n</body></html>\n";
}

}  // namespace tarmac::fleet
