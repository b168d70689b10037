// SPDX-License-Identifier: Apache-2.0
//
// tarmac-simload stands in for a CUDA program on the simulated world: it
// takes the GPUs in CUDA_VISIBLE_DEVICES (as CUDA reads it), claims memory on
// each and runs a utilization pattern until --seconds pass or it is
// signalled. It vanishes from the GPUs when the process ends, even by
// SIGKILL, because readers check that its PID (and start time) still live.
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>

#include "common/clock.h"
#include "common/units.h"
#include "sim/cuda_context.h"
#include "sim/load.h"
#include "sim/process_title.h"
#include "sim/world.h"
#include "sim_options.h"

namespace {

int Fail(const std::string& message, int code = 1) {
  std::fprintf(stderr, "tarmac-simload: %s\n", message.c_str());
  return code;
}

// The command line's values.
struct Options {
  std::string memory = "1GiB";
  double util_percent = 50;
  double tensor_percent = 0;
  std::string pattern_name = "steady";
  double seconds = 0;
  tarmac::sim::WorldOptions world;
  std::string title;  // --title: the command line /proc shows.
};

void AddOptions(CLI::App* app_, Options* options) {
  CLI::App& app = *app_;
  Options& o = *options;
  app.add_option("--memory", o.memory, "Memory to claim on each GPU, e.g. 20GiB")->default_str("1GiB");
  app.add_option("--util", o.util_percent, "Peak SM utilization in percent")
      ->check(CLI::Range(0.0, 100.0))
      ->default_str("50");
  app.add_option("--tensor", o.tensor_percent,
                 "Share of its busy time in tensor pipes, in percent (what GPM counts)")
      ->check(CLI::Range(0.0, 100.0))
      ->default_str("0");
  app.add_option("--pattern", o.pattern_name,
                 "steady, bursty (on 8 s of every 20) or idle (holds memory only)")
      ->check(CLI::IsMember({"steady", "bursty", "idle"}))
      ->default_str("steady");
  app.add_option("--seconds", o.seconds, "Run this long, then exit (default: until signalled)")
      ->check(CLI::NonNegativeNumber);
  tarmac::sim::AddStandInOptions(&app, &o.world, &o.title, "python3 train.py");
}

}  // namespace

int main(int argc, char** argv) {
  using namespace tarmac;  // NOLINT: main only.
  CLI::App app(
      "tarmac-simload: a stand-in for a CUDA program on tarmac's simulated GPUs.\n"
      "Uses the GPUs in CUDA_VISIBLE_DEVICES (indices, GPU UUIDs or MIG- UUIDs; unset means all).",
      "tarmac-simload");
  Options o;
  AddOptions(&app, &o);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  // What the load file says the process is (read before the title overwrites argv).
  Result<std::string> titled = sim::TakeTitle(argc, argv, o.title);
  if (!titled.ok()) return Fail("--title: " + titled.status().message(), 2);
  const std::string command = titled.value();

  Result<int64_t> bytes = ParseBytes(o.memory);
  if (!bytes.ok()) return Fail("--memory: " + bytes.status().message(), 2);
  sim::LoadPattern pattern = sim::LoadPattern::kSteady;
  sim::ParseLoadPattern(o.pattern_name, &pattern);

  Clock* clock = RealClock();
  o.world.live_loads_only = true;  // Its memory check needs no ended load.
  Result<std::unique_ptr<sim::World>> world = sim::World::Open(o.world, clock);
  if (!world.ok()) return Fail(world.status().message());
  sim::World& w = *world.value();

  Result<sim::CudaDevices> visible = sim::VisibleDevices(w);
  if (!visible.ok()) return Fail(visible.status().message());
  std::vector<int> gpus = visible.value().gpus;
  Status fits = sim::CheckMemoryFits(*w.State(), visible.value(), bytes.value());
  if (!fits.ok()) return Fail(fits.message());

  // Signals are taken synchronously in the wait below.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigprocmask(SIG_BLOCK, &set, nullptr);

  sim::Load load;
  load.pid = getpid();
  std::optional<int64_t> ticks = sim::ProcessStartTicks(load.pid);
  if (!ticks) return Fail("cannot read own start time from /proc");
  load.start_ticks = *ticks;
  load.gpus = gpus;
  load.mig_uuids = visible.value().mig_uuids;
  load.memory_bytes = bytes.value();
  load.utilization_ratio = o.util_percent / 100.0;
  load.tensor_ratio = o.tensor_percent / 100.0;
  load.pattern = pattern;
  load.started_at = clock->WallNow();
  load.command = command;
  Result<std::string> path = w.registry().Register(load);
  if (!path.ok()) return Fail(path.status().message());

  std::string names;
  for (int gpu : gpus) names += (names.empty() ? "" : ",") + std::to_string(gpu);
  for (const std::string& mig : load.mig_uuids) names += " " + mig;
  std::fprintf(stderr, "tarmac-simload: pid %d on GPU %s: %s each, %.0f%% %s\n", getpid(), names.c_str(),
               FormatBytes(bytes.value()).c_str(), o.util_percent, o.pattern_name.c_str());

  std::chrono::steady_clock::time_point end =
      clock->SteadyNow() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                               std::chrono::duration<double>(o.seconds));
  for (;;) {
    w.registry().Heartbeat(path.value()).IgnoreError();
    std::chrono::steady_clock::duration wait = std::chrono::seconds(1);
    if (o.seconds > 0) {
      std::chrono::steady_clock::duration left = end - clock->SteadyNow();
      if (left <= std::chrono::steady_clock::duration::zero()) break;
      wait = std::min(wait, left);
    }
    timespec timeout{};
    auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(wait).count();
    timeout.tv_sec = static_cast<time_t>(ns / 1000000000);
    timeout.tv_nsec = static_cast<long>(ns % 1000000000);
    if (sigtimedwait(&set, nullptr, &timeout) > 0) break;  // Signalled.
  }
  w.registry().Heartbeat(path.value()).IgnoreError();
  return 0;
}
