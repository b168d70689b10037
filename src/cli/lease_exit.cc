// SPDX-License-Identifier: Apache-2.0
#include "cli/lease_exit.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <thread>

#include "common/terminal_text.h"
#include "ipc/unix_server.h"

namespace tarmac::cli {

using nlohmann::json;

int LeaseExit(const std::string& what, const Status& status) {
  std::string message = status.message();
  if (message.rfind("agent: ", 0) == 0) message = message.substr(7);
  std::fprintf(stderr, "tarmac: %s: %s\n", what.c_str(), ForTerminalLines(message).c_str());
  int code = ExitCodeFor(status.code(), Needed::kAgent);
  if (IsNoAgent(code)) std::fprintf(stderr, "%s\n", kAgentHint);
  return code;
}

}  // namespace tarmac::cli
