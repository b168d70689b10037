// SPDX-License-Identifier: Apache-2.0
//
// The HTTP endpoint's keys of [http] in the agent's config: listen
// (HOST:PORT, port 0 picks a free one, or "off"; default in HttpOptions),
// auth (the token file's absolute path), allow_anonymous, and tls_cert and
// tls_key (absolute paths, both or neither).
// The section's other keys shape the metrics page (metrics/metrics_config.h).
#pragma once

#include "common/config_section.h"
#include "http/server.h"

namespace tarmac::http {

// `listen` set to this: no HTTP endpoint.
inline constexpr const char* kListenOff = "off";

void ReadHttpSection(ConfigSection& section, HttpOptions* out);

// [web]: what the web console and /api/v1/ show (docs/web.md).
struct WebOptions {
  // Processes' and leases' full command lines (they can carry secrets);
  // without it they are left out, names and users shown.
  bool show_command_lines = false;
  // Event streams one client may hold at once (of the 32 in all): a local
  // user as the kernel names them, else an address (http/peer_identity.h).
  int max_streams_per_client = 8;

  bool operator==(const WebOptions&) const = default;
};

void ReadWebSection(ConfigSection& section, WebOptions* out);

}  // namespace tarmac::http
