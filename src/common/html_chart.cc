// SPDX-License-Identifier: Apache-2.0
#include "common/html_chart.h"

#include <fmt/format.h>

#include <algorithm>

namespace tarmac {

std::string EscapeHtml(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string UtilizationColor(double ratio) {
  ratio = std::clamp(ratio, 0.0, 1.0);
  int r = static_cast<int>(226 - ratio * (226 - 20));
  int g = static_cast<int>(232 - ratio * (232 - 120));
  int b = static_cast<int>(240 - ratio * (240 - 60));
  return fmt::format("#{:02x}{:02x}{:02x}", r, g, b);
}

std::string HeatmapLegend(const std::string& label, int left, int y, bool with_no_data) {
  std::string svg = fmt::format("<g class=\"legend\" font-size=\"11\"><text x=\"0\" y=\"{}\">{}</text>\n", y + 10,
                                EscapeHtml(label));
  int x = left;
  for (int pct : {0, 25, 50, 75, 100}) {
    svg += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"14\" height=\"12\" fill=\"{}\"/><text x=\"{}\" y=\"{}\">{}%</text>\n",
                       x, y, UtilizationColor(pct / 100.0), x + 17, y + 10, pct);
    x += 52;
  }
  x += 14;  // The scale apart from the marks that are not a level.
  svg += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"14\" height=\"12\" fill=\"{}\"/><text x=\"{}\" y=\"{}\">held "
                     "idle</text>\n",
                     x, y, kHeldIdleColor, x + 17, y + 10);
  if (with_no_data) {
    x += 75;
    svg += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"14\" height=\"12\" fill=\"#ffffff\" stroke=\"#999999\"/>"
                       "<text x=\"{}\" y=\"{}\">no data</text>\n",
                       x, y, x + 17, y + 10);
  }
  return svg + "</g>\n";
}

}  // namespace tarmac
