// SPDX-License-Identifier: Apache-2.0
#include "leases/backfill_gates_json.h"

#include <fmt/format.h>

#include "common/json_fields.h"

namespace tarmac::leases {

using nlohmann::json;

json GateReportToJson(const GateReport& report) {
  json gpus = json::array();
  for (const GateReport::Device& d : report.gpus) {
    json g = {{"gpu", d.gpu}, {"uuid", d.uuid}, {"accepts", d.accepts}, {"why", d.why}};
    if (d.arrivals_per_hour) g["arrivals_per_hour"] = *d.arrivals_per_hour;
    if (!d.mig_profile.empty()) g["mig_profile"] = d.mig_profile;
    if (d.starts_in_seconds) g["starts_in_seconds"] = *d.starts_in_seconds;
    if (d.starts_at_unix) g["starts_at_unix"] = *d.starts_at_unix;
    if (d.lender != 0) {
      g["lend"] = {{"lender", d.lender}, {"delay_why", d.lend_delay_why}};
      if (d.lend_delay_seconds) g["lend"]["delay_seconds"] = *d.lend_delay_seconds;
    }
    gpus.push_back(std::move(g));
  }
  if (report.is_auto) {
    return {{"gpus", gpus},
            {"idle_for", "auto"},
            {"settle_seconds", report.settle_seconds},
            {"min_run_seconds", report.min_run_seconds}};
  }
  return {{"gpus", gpus}, {"idle_for", "fixed"}, {"idle_for_seconds", report.idle_for_seconds}};
}

Result<GateReport> GateReportFromJson(const json& j) {
  GateReport report;
  JsonFields f(j, "backfill.gpus");
  std::string idle_for;
  f.Get("idle_for", &idle_for);
  report.is_auto = idle_for == "auto";
  f.Optional("idle_for_seconds", &report.idle_for_seconds);
  f.Optional("settle_seconds", &report.settle_seconds);
  f.Optional("min_run_seconds", &report.min_run_seconds);
  if (!f.ok()) return Status::Corruption(f.status().message());
  if (!j.contains("gpus") || !j["gpus"].is_array())
    return Status::Corruption("backfill.gpus.gpus: expected a list");
  for (const json& item : j["gpus"]) {
    GateReport::Device d;
    JsonFields g(item, fmt::format("backfill.gpus.gpus[{}]", report.gpus.size()));
    g.Get("gpu", &d.gpu);
    g.Optional("uuid", &d.uuid);
    g.Optional("mig_profile", &d.mig_profile);
    g.Optional("accepts", &d.accepts);
    g.Optional("why", &d.why);
    g.Optional("arrivals_per_hour", &d.arrivals_per_hour);
    g.Optional("starts_in_seconds", &d.starts_in_seconds);
    g.Optional("starts_at_unix", &d.starts_at_unix);
    if (!g.ok()) return Status::Corruption(g.status().message());
    if (item.contains("lend")) {
      JsonFields lend(item["lend"], fmt::format("backfill.gpus.gpus[{}].lend", report.gpus.size()));
      lend.Get("lender", &d.lender);
      lend.Optional("delay_seconds", &d.lend_delay_seconds);
      lend.Optional("delay_why", &d.lend_delay_why);
      if (!lend.ok()) return Status::Corruption(lend.status().message());
    }
    report.gpus.push_back(std::move(d));
  }
  return report;
}

}  // namespace tarmac::leases
