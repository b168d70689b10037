// SPDX-License-Identifier: Apache-2.0
#include "common/html_chart.h"

#include <fmt/format.h>

#include <algorithm>

namespace tarmac {

std::string EscapeHtml(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
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
  std::string svg = fmt::format("<g class=\"legend\" font-size=\"11\"><text x=\"0\" y=\"{}\">{}</text>\n",
                                y + 10, EscapeHtml(label));
  int x = left;
  for (int pct : {0, 25, 50, 75, 100}) {
    svg += fmt::format(
        "<rect x=\"{}\" y=\"{}\" width=\"14\" height=\"12\" fill=\"{}\"/><text x=\"{}\" "
        "y=\"{}\">{}%</text>\n",
        x, y, UtilizationColor(pct / 100.0), x + 17, y + 10, pct);
    x += 52;
  }
  x += 14;  // The scale apart from the marks that are not a level.
  svg += fmt::format(
      "<rect x=\"{}\" y=\"{}\" width=\"14\" height=\"12\" fill=\"{}\"/><text x=\"{}\" y=\"{}\">held "
      "idle</text>\n",
      x, y, kHeldIdleColor, x + 17, y + 10);
  if (with_no_data) {
    x += 75;
    svg += fmt::format(
        "<rect x=\"{}\" y=\"{}\" width=\"14\" height=\"12\" fill=\"#ffffff\" stroke=\"#999999\"/>"
        "<text x=\"{}\" y=\"{}\">no data</text>\n",
        x, y, x + 17, y + 10);
  }
  return svg + "</g>\n";
}

std::string ReportPageStart(const std::string& title, const std::string& verdict,
                            const std::string& extra_css) {
  return fmt::format(R"(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>tarmac {0}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2em; color: #222; }}
h1 {{ font-size: 1.4em; }} h2 {{ font-size: 1.1em; margin-top: 1.6em; }}
.verdict {{ font-size: 1.15em; background: #f3f5f8; padding: .8em 1em; border-left: 4px solid #2a6; }}
table {{ border-collapse: collapse; margin-top: .5em; }}
th, td {{ padding: .25em .7em; border-bottom: 1px solid #ddd; text-align: right; }}
th:first-child, td:first-child, td.text {{ text-align: left; }}
{2}@media print {{ body {{ margin: 0; }} .verdict {{ border-left-color: #000; }} }}
</style></head><body>
<h1>{0}</h1>
<p class="verdict">{1}</p>
)",
                     EscapeHtml(title), EscapeHtml(verdict), extra_css.empty() ? "" : extra_css + "\n");
}

}  // namespace tarmac
