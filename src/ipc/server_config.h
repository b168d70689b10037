// SPDX-License-Identifier: Apache-2.0
//
// [api] of the agent's config: limits of the local API socket (defaults in
// ServerOptions): max_connections (1 to 65536; waiting clients included),
// max_request_bytes (1KiB to 16MiB), request_timeout (100ms to 10m).
#pragma once

#include "common/config_section.h"
#include "ipc/unix_server.h"

namespace tarmac::ipc {

void ReadApiSection(ConfigSection& section, ServerOptions* out);

}  // namespace tarmac::ipc
