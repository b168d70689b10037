// SPDX-License-Identifier: Apache-2.0
//
// The `backfill.gpus` answer (docs/protocol.md) both ways: each GPU and MIG
// instance as backfill's gate saw it at the last tick, and the gate's
// rule. The agent encodes from GateReport; clients decode into it.
// Decoding never throws: kCorruption naming the field.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"

namespace tarmac::leases {

struct GateReport {
  struct Device {
    int gpu = 0;              // Its GPU's index.
    std::string uuid;         // The GPU's, or the MIG instance's.
    std::string mig_profile;  // Empty for a whole GPU.
    bool accepts = false;
    std::string why;                          // In words.
    std::optional<double> arrivals_per_hour;  // idle_for auto: what it learned.
    std::optional<double> starts_in_seconds;  // When it would accept, if it can say.
    std::optional<int64_t> starts_at_unix;
    // A GPU a lease that lends holds: the lease, and the delay learned
    // there before it is lent (loans.h), in seconds and words.
    int64_t lender = 0;
    std::optional<double> lend_delay_seconds;
    std::string lend_delay_why;
  };
  std::vector<Device> gpus;
  bool is_auto = false;  // idle_for = "auto" (settle, min_run) or fixed (idle_for_seconds).
  double idle_for_seconds = 0;
  double settle_seconds = 0;
  double min_run_seconds = 0;
};

nlohmann::json GateReportToJson(const GateReport& report);
Result<GateReport> GateReportFromJson(const nlohmann::json& j);

}  // namespace tarmac::leases
