// SPDX-License-Identifier: Apache-2.0
#include "ipc/server_config.h"

namespace tarmac::ipc {

void ReadApiSection(ConfigSection& section, ServerOptions* out) {
  ReadInteger(section, "max_connections", &out->max_connections, 1, 65536);
  int64_t bytes = out->max_request_bytes;
  section.Bytes("max_request_bytes", &bytes);
  if (bytes < 1024 || bytes > (int64_t{16} << 20)) {
    section.Fail("max_request_bytes", "must be from 1KiB to 16MiB");
  } else {
    out->max_request_bytes = bytes;
  }
  section.Interval("request_timeout", std::chrono::milliseconds(100), std::chrono::milliseconds(600000),
                   &out->request_timeout);
}

}  // namespace tarmac::ipc
