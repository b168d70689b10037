// SPDX-License-Identifier: Apache-2.0
//
// tarmacd: the agent (docs/design.md). `tarmac agent` runs it with the same
// flags. A program of its own so that the read commands in `tarmac` do not
// load the HTTP server's libraries.
#include <CLI/CLI.hpp>
#include <malloc.h>

#include "agent/agent.h"
#include "agent/malloc_tunables.h"
#include "common/clock.h"
#include "common/exit_codes.h"
#include "common/log.h"
#include "config/agent_flags.h"

// glibc gives each thread that allocates an arena of its own, up to eight
// per core, and keeps what was freed in each: twenty open console streams
// (a worker thread each, writing each sample's batch) grew the agent by
// 7.4 MiB, against 1.2 MiB with two arenas (bench/web_console.py). The
// agent's threads allocate little and seldom at once; two arenas serve them.
constexpr int kMallocArenas = 2;

int main(int argc, char** argv) {
  // May execute tarmacd again with glibc's per-thread cache off
  // (agent/malloc_tunables.h); the rest runs in that image.
  tarmac::agent::ApplyMallocTunables(argv);
  mallopt(M_ARENA_MAX, kMallocArenas);
  CLI::App app("tarmacd: the tarmac agent. Samples every GPU and process, keeps the history, serves the local "
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
