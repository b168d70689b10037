// SPDX-License-Identifier: Apache-2.0
//
// tarmac-backfill-runner --dir DIR --socket PATH: runs one submitted batch
// (backfill/runner.h). The agent starts it, as the batch's user, and
// SIGTERM stops it (resumable); its exit code says how it ended
// (backfill/batch_spec.h).
#include <signal.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdint>
#include <thread>

#include "backfill/runner.h"
#include "common/clock.h"
#include "common/log.h"

int main(int argc, char** argv) {
  tarmac::backfill::RunnerOptions options;
  CLI::App app("tarmac-backfill-runner: runs one submitted backfill batch; the agent starts it.",
               "tarmac-backfill-runner");
  app.add_option("--dir", options.dir, "The batch's directory (holds batch.json)")->required();
  app.add_option("--socket", options.socket, "The agent's socket")->required();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  sigset_t set;
  sigemptyset(&set);
  for (int s : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&set, s);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  signal(SIGPIPE, SIG_IGN);
  int stop_fd = eventfd(0, EFD_CLOEXEC);
  std::thread([&] {
    int sig = 0;
    sigwait(&set, &sig);
    uint64_t one = 1;
    (void)!write(stop_fd, &one, sizeof one);
  }).detach();
  tarmac::Logger logger(tarmac::LogLevel::kInfo);
  return tarmac::backfill::RunBatch(options, stop_fd, tarmac::RealClock(), &logger);
}
