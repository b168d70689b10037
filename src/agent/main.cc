// SPDX-License-Identifier: Apache-2.0
//
// tarmacd: the agent (docs/design.md). `tarmac agent` runs it with the same
// flags. A program of its own so that the read commands in `tarmac` do not
// load the HTTP server's libraries.
#include <CLI/CLI.hpp>

#include "agent/agent.h"
#include "cli/agent_command.h"
#include "cli/options.h"
#include "common/clock.h"
#include "common/log.h"

int main(int argc, char** argv) {
  CLI::App app("tarmacd: the tarmac agent. Samples every GPU and process, keeps the history, serves the local "
               "API (docs/protocol.md) and HTTP (docs/metrics.md). Flags override the config file.",
               "tarmacd");
  tarmac::agent::AgentFlags flags;
  tarmac::cli::AddAgentFlags(&app, &flags);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? tarmac::cli::kExitOk : tarmac::cli::kExitUsage;
  }
  tarmac::Logger logger(tarmac::LogLevel::kInfo);
  tarmac::Status s = tarmac::agent::RunAgent(flags, tarmac::RealClock(), &logger);
  if (!s.ok()) return tarmac::cli::ExitWith(s.WithContext("agent"));
  return tarmac::cli::kExitOk;
}
