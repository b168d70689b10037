// SPDX-License-Identifier: Apache-2.0
#include "report/pricing.h"

namespace tarmac::report {

double Pricing::GpuHourCost(const std::string& model) const {
  auto it = gpu_hour_cost_by_model.find(model);
  return it != gpu_hour_cost_by_model.end() ? it->second : gpu_hour_cost;
}

void ReadReportSection(ConfigSection& section, Pricing* out) {
  section.String("currency", &out->currency);
  section.Number("gpu_hour_cost", &out->gpu_hour_cost, 0, 1e6);
  if (std::unique_ptr<ConfigSection> models =
          section.Table("gpu_hour_cost_by_model", "a table of GPU names and prices")) {
    for (const std::string& model : models->Keys()) {
      double price = 0;
      models->Number(model, &price, 0, 1e6);
      out->gpu_hour_cost_by_model[model] = price;
    }
  }
}

}  // namespace tarmac::report
