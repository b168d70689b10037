// SPDX-License-Identifier: Apache-2.0
//
// [fleet]: where `tarmac fleet` finds the Prometheus that scrapes the
// agents (docs/config.md), and where the agent's web console reads its
// fleet page from (an explicit prometheus_url only). It is read from the
// same tarmac.toml so an operator sets it once per machine. Flags and
// TARMAC_PROMETHEUS_URL override it for `tarmac fleet`.
#pragma once

#include <chrono>
#include <string>

#include "common/config_section.h"
#include "prom/prom_client.h"

namespace tarmac::fleet {

struct FleetConfig {
  std::string prometheus_url;  // Empty: TARMAC_PROMETHEUS_URL, else http://127.0.0.1:9090.
  std::string bearer_token_file;
  std::string basic_auth_user;
  std::string basic_auth_password_file;
  std::string ca_file;
  std::chrono::milliseconds timeout{10000};
  // One answer of `tarmac fleet report` (a long range of every node: the
  // week of ten thousand nodes asks the store for over 10 s an answer).
  std::chrono::milliseconds report_timeout{120000};
  int64_t max_answer_bytes = 64ll << 20;  // One answer's body at most (http/bounded_fetch.h).

  bool operator==(const FleetConfig&) const = default;
};

void ReadFleetSection(ConfigSection& section, FleetConfig* out);

// The Prometheus client's options as [fleet] gives them (the URL as set:
// the agent takes no default; `tarmac fleet` fills one in).
prom::PromOptions PromOptionsOf(const FleetConfig& fleet);

}  // namespace tarmac::fleet
