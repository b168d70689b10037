// SPDX-License-Identifier: Apache-2.0
//
// The report as text (for a terminal), JSON, CSV (the per-GPU table, or the
// per-owner table with --by user|container) and HTML (one self-contained
// file: inline CSS and SVG, no network; report_html.cc). Pure functions.
#pragma once

#include <string>

#include "report/report.h"

namespace tarmac::report {

std::string RenderText(const Report& report);
std::string RenderJson(const Report& report);
std::string RenderCsv(const Report& report);
std::string RenderHtml(const Report& report);

// "2026-12-01 14:05 UTC" (with seconds: "2026-12-01 14:05:09 UTC").
std::string FormatTime(int64_t unix_seconds, bool with_seconds = false);

}  // namespace tarmac::report
