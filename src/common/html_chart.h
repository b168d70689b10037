// SPDX-License-Identifier: Apache-2.0
//
// What tarmac's HTML reports (report, fleet report) draw the same way:
// text made safe for HTML, the utilization colour scale, the held-idle
// colour, and the heatmap legend under it. Pure.
#pragma once

#include <string>

namespace tarmac {

// `s` with &, <, > and " escaped for HTML text and attribute values.
std::string EscapeHtml(const std::string& s);

// An hour's colour for a utilization `ratio` (0-1): grey-blue when idle,
// deep green when busy.
std::string UtilizationColor(double ratio);

// An hour in which a process held memory at 0 % SM for at least this share
// of the time is held idle, drawn in kHeldIdleColor.
inline constexpr double kHeldIdleShare = 0.5;
inline constexpr const char* kHeldIdleColor = "#e8912d";

// The legend (an SVG <g class="legend">) at `y`: `label`, then the scale at
// 0, 25, 50, 75 and 100 %, then held idle; "no data" after it when
// `with_no_data`. Its swatches start at x = `left`.
std::string HeatmapLegend(const std::string& label, int left, int y, bool with_no_data);

// A report page from its start through its verdict: the title (a heading
// too), the shared style (a verdict box, right-aligned tables whose first
// column and td.text are left-aligned, a clean print) with `extra_css`
// after it, and the verdict paragraph. Every text is escaped here.
std::string ReportPageStart(const std::string& title, const std::string& verdict,
                            const std::string& extra_css = "");

}  // namespace tarmac
