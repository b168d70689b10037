// SPDX-License-Identifier: Apache-2.0
//
// tarmacd: the agent (docs/design.md). `tarmac agent` runs it with the same
// flags. A program of its own so that the read commands in `tarmac` do not
// load the HTTP server's libraries.
#include <CLI/CLI.hpp>
#include <cstdlib>

#include "agent/agent.h"
#include "agent/malloc_tunables.h"
#include "common/clock.h"
#include "common/exit_codes.h"
#include "common/log.h"
#include "config/agent_flags.h"

int main(int argc, char** argv) {
  // May execute tarmacd again with glibc's per-thread cache off
  // (agent/malloc_tunables.h); the rest runs in that image, with two arenas
  // and large blocks mapped on their own.
  tarmac::agent::ApplyMallocTunables(argv);
  tarmac::agent::SetMallocOptions(std::getenv("GLIBC_TUNABLES"));
  CLI::App app(
      "tarmacd: the tarmac agent. Samples every GPU and process, keeps the history, serves the local "
      "API (docs/protocol.md) and HTTP (docs/metrics.md). Flags override the config file.",
      "tarmacd");
  tarmac::agent::AgentFlags flags;
  tarmac::config::AddAgentFlags(&app, &flags);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? tarmac::kExitOk : tarmac::kExitUsage;
  }
  tarmac::Logger logger(tarmac::LogLevel::kInfo);
  tarmac::Status s = tarmac::agent::RunAgent(flags, tarmac::RealClock(), &logger);
  if (!s.ok()) return tarmac::ExitWith(s.WithContext("agent"));
  return tarmac::kExitOk;
}
