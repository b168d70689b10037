// SPDX-License-Identifier: Apache-2.0
#include "fleet/fleet_config.h"

namespace tarmac::fleet {

void ReadFleetSection(ConfigSection& section, FleetConfig* out) {
  std::string url = out->prometheus_url;
  section.String("prometheus_url", &url);
  bool is_url = url.empty() || url.rfind("http://", 0) == 0 || url.rfind("https://", 0) == 0;
  if (!is_url) {
    section.Fail("prometheus_url", "expected http://HOST:PORT or https://HOST:PORT[/PATH]");
  } else {
    out->prometheus_url = url;
  }
  section.String("bearer_token_file", &out->bearer_token_file);
  section.String("basic_auth_user", &out->basic_auth_user);
  section.String("basic_auth_password_file", &out->basic_auth_password_file);
  section.String("ca_file", &out->ca_file);
  section.Interval("timeout", std::chrono::milliseconds(100), std::chrono::minutes(10), &out->timeout);
  section.Interval("report_timeout", std::chrono::milliseconds(100), std::chrono::minutes(10),
                   &out->report_timeout);
  int64_t max_answer = out->max_answer_bytes;
  section.Bytes("max_answer_size", &max_answer);
  if (max_answer < (1 << 20) || max_answer > (16ll << 30)) {
    section.Fail("max_answer_size", "expected 1MiB to 16GiB");
  } else {
    out->max_answer_bytes = max_answer;
  }
}

prom::PromOptions PromOptionsOf(const FleetConfig& fleet) {
  prom::PromOptions options;
  options.url = fleet.prometheus_url;
  options.bearer_token_file = fleet.bearer_token_file;
  options.basic_auth_user = fleet.basic_auth_user;
  options.basic_auth_password_file = fleet.basic_auth_password_file;
  options.ca_file = fleet.ca_file;
  options.timeout = fleet.timeout;
  options.max_answer_bytes = fleet.max_answer_bytes;
  return options;
}

}  // namespace tarmac::fleet
