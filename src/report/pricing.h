// SPDX-License-Identifier: Apache-2.0
//
// What an idle GPU-hour costs: [report] of the agent's config, used by the
// report and by the agent's idle-cost counters. Keys: currency (default
// "USD"), gpu_hour_cost (0 to 1e6; 0: costs are not shown) and
// gpu_hour_cost_by_model (a table of GPU names, as NVML reports them, and
// prices).
#pragma once

#include <map>
#include <string>

#include "common/config_section.h"

namespace tarmac::report {

struct Pricing {
  std::string currency = "USD";
  double gpu_hour_cost = 0;                              // Per GPU-hour, for any model not listed.
  std::map<std::string, double> gpu_hour_cost_by_model;  // By GPU name.

  // Cost of one GPU-hour of `model` (its own price, else the default).
  double GpuHourCost(const std::string& model) const;

  bool operator==(const Pricing&) const = default;
};

void ReadReportSection(ConfigSection& section, Pricing* out);

}  // namespace tarmac::report
