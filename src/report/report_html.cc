// SPDX-License-Identifier: Apache-2.0
//
// The HTML report: one file, readable offline and printable. A GPU x hour
// heatmap of mean utilization and a histogram per GPU, both inline SVG;
// then the tables of the text report.
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "common/html_chart.h"
#include "common/units.h"
#include "report/report_render.h"

namespace tarmac::report {
namespace {

std::string Escape(const std::string& s) { return EscapeHtml(s); }
std::string Color(double ratio) { return UtilizationColor(ratio); }

std::string Heatmap(const Report& r) {
  int64_t first = r.since_t / 3600;
  int64_t last = (r.until_t + 3599) / 3600;
  int64_t hours = std::max<int64_t>(last - first, 1);
  double cell = std::clamp(900.0 / static_cast<double>(hours), 1.0, 24.0);
  int row = 18;
  int left = 60;
  // Wide enough for the two time labels and the legend, however short the range.
  double width = std::max(left + cell * static_cast<double>(hours) + 10, 560.0);
  int height = row * static_cast<int>(r.gpus.size()) + 64;
  std::string svg = fmt::format(
      "<svg class=\"heatmap\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{:.0f}\" height=\"{}\" "
      "role=\"img\" aria-label=\"utilization per GPU and hour\">\n",
      width, height);
  for (size_t i = 0; i < r.gpus.size(); ++i) {
    const GpuLine& g = r.gpus[i];
    int y = static_cast<int>(i) * row;
    svg += fmt::format("<text x=\"0\" y=\"{}\" font-size=\"12\">GPU {}</text>\n", y + 13, g.index);
    for (size_t h = 0; h < g.hourly_utilization.size(); ++h) {
      const auto& [t, u] = g.hourly_utilization[h];
      double held = h < g.hourly_held_idle.size() ? g.hourly_held_idle[h].second : 0;
      bool is_held_idle = held >= kHeldIdleShare;
      double x = left + cell * static_cast<double>(t / 3600 - first);
      svg += fmt::format(
          "<rect class=\"{}\" x=\"{:.1f}\" y=\"{}\" width=\"{:.1f}\" height=\"{}\" fill=\"{}\"><title>GPU {} "
          "{}: "
          "{:.0f}%{}</title></rect>\n",
          is_held_idle ? "held-idle" : "hour", x, y, std::max(cell - 0.5, 0.5), row - 2,
          is_held_idle ? kHeldIdleColor : Color(u), g.index, FormatTime(t), u * 100,
          is_held_idle ? fmt::format(", memory held at 0% SM {:.0f}% of the hour", held * 100) : "");
    }
  }
  int y = static_cast<int>(r.gpus.size()) * row + 16;
  svg += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"11\">{}</text>\n", left, y,
                     Escape(FormatTime(r.since_t)));
  svg += fmt::format("<text x=\"{:.0f}\" y=\"{}\" font-size=\"11\" text-anchor=\"end\">{}</text>\n",
                     width - 10, y, Escape(FormatTime(r.until_t)));
  // The legend: the utilization scale, held idle, and no data.
  svg += HeatmapLegend("utilization", left, y + 14, true);
  return svg + "</svg>\n";
}

std::string Histogram(const GpuLine& g) {
  int64_t most = 1;
  for (int64_t m : g.utilization_histogram_minutes) most = std::max(most, m);
  std::string svg =
      "<svg class=\"histogram\" xmlns=\"http://www.w3.org/2000/svg\" width=\"220\" height=\"90\" "
      "role=\"img\">\n";
  for (size_t i = 0; i < g.utilization_histogram_minutes.size(); ++i) {
    double h = 60.0 * static_cast<double>(g.utilization_histogram_minutes[i]) / static_cast<double>(most);
    svg += fmt::format(
        "<rect x=\"{}\" y=\"{:.1f}\" width=\"18\" height=\"{:.1f}\" fill=\"{}\"><title>{}-{}%: {} "
        "min</title></rect>\n",
        10 + i * 20, 70 - h, h, Color(static_cast<double>(i) / 9.0), i * 10, i * 10 + 10,
        g.utilization_histogram_minutes[i]);
  }
  svg +=
      "<text x=\"10\" y=\"85\" font-size=\"10\">0%</text><text x=\"200\" y=\"85\" font-size=\"10\" "
      "text-anchor=\"end\">100%</text>\n";
  return svg + fmt::format("<text x=\"10\" y=\"10\" font-size=\"11\">GPU {}</text></svg>\n", g.index);
}

}  // namespace

std::string RenderHtml(const Report& r) {
  std::string html =
      ReportPageStart(fmt::format("GPU report: {} to {}", FormatTime(r.since_t), FormatTime(r.until_t)),
                      r.verdict, ".histograms svg { margin-right: .5em; }");
  html += "<h2>Utilization per GPU and hour</h2>\n";
  html += Heatmap(r);
  html += "<h2>Utilization histograms (minutes at each level)</h2>\n<div class=\"histograms\">\n";
  for (const GpuLine& g : r.gpus) html += Histogram(g);
  html +=
      "</div>\n<h2>GPUs</h2>\n<table><tr><th>GPU</th><th>Name</th><th>Covered</th><th>Mean util</th><th>Duty "
      "cycle</th><th>Idle</th><th>Held idle</th><th>Energy kWh</th><th>Throttled</th><th>Xid</th>";
  bool has_backfill = r.backfill_hours > 0 || r.backfill_preemptions > 0;
  if (has_backfill) html += "<th>Backfill</th><th>Preemptions</th>";
  if (r.has_costs) html += "<th>Idle cost</th>";
  html += "</tr>\n";
  auto pct = [](const std::optional<double>& v) {
    return v ? fmt::format("{:.0f}%", *v * 100) : std::string("-");
  };
  for (const GpuLine& g : r.gpus) {
    html += fmt::format(
        "<tr><td>{}</td><td class=\"text\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
        "<td>{:.1f}</td><td>{}</td><td>{}</td>",
        g.index, Escape(g.name), FormatHours(g.covered_hours), pct(g.mean_utilization_ratio),
        pct(g.duty_cycle_ratio), FormatHours(g.idle_hours), FormatHours(g.held_idle_hours), g.energy_kwh,
        FormatHours(g.throttle_thermal_hours + g.throttle_power_hours + g.throttle_other_hours), g.xid_count);
    if (has_backfill)
      html += fmt::format("<td>{}</td><td>{}</td>", FormatHours(g.backfill_hours), g.backfill_preemptions);
    if (r.has_costs) html += fmt::format("<td>{} {:.2f}</td>", Escape(r.currency), g.idle_cost);
    html += "</tr>\n";
  }
  html += "</table>\n";
  if (r.by != GroupBy::kGpu) {
    html += fmt::format(
        "<h2>By {}</h2>\n<table><tr><th>{}</th><th>GPU time held</th><th>GPU time busy</th><th>Held "
        "idle</th>{}{}</tr>\n",
        OwnerKindText(r.by), r.by == GroupBy::kUser ? "User" : "Owner",
        r.by == GroupBy::kUser ? "<th>of it in a lease</th><th>by processes outside leases</th>" : "",
        r.has_costs ? "<th>Idle cost</th>" : "");
    for (const OwnerLine& o : r.owners) {
      html += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td>", Escape(o.owner),
                          FormatHours(o.gpu_hours_held), FormatHours(o.gpu_hours_busy),
                          FormatHours(o.held_idle_hours));
      if (r.by == GroupBy::kUser) {
        html += fmt::format("<td>{}</td><td>{}</td>", FormatHours(o.held_idle_by_lease_hours),
                            FormatHours(o.held_idle_by_process_hours));
      }
      if (r.has_costs) html += fmt::format("<td>{} {:.2f}</td>", Escape(r.currency), o.idle_cost);
      html += "</tr>\n";
    }
    html += "</table>\n";
  }
  if (!r.top_held_idle.empty()) {
    html +=
        "<h2>Processes that held GPU memory without computing</h2>\n<table><tr><th>Held idle</th><th>GPU</th>"
        "<th>PID</th><th>User</th><th>Memory MiB</th><th>From</th><th>To</th><th>Command</th></tr>\n";
    for (const store::HeldIdleSession& p : r.top_held_idle) {
      html += fmt::format(
          "<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"text\">{}</td><td>{}</td><td>{}</td><td>{}</td>"
          "<td class=\"text\">{}</td></tr>\n",
          FormatHours(HeldIdleHours(p)), p.gpu_index, p.pid, Escape(p.user), p.memory_max_mib,
          Escape(FormatTime(p.first_seen)), Escape(FormatTime(p.last_seen)), Escape(p.command));
    }
    html += "</table>\n";
  }
  return html + "</body></html>\n";
}

}  // namespace tarmac::report
