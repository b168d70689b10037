// SPDX-License-Identifier: Apache-2.0
#include "sim/world.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>

#include "common/fs.h"
#include "sim/mig_journal.h"
#include "sim/scenario_parser.h"

namespace tarmac::sim {
namespace {

using std::chrono::system_clock;

// Reads the epoch file, or creates it with `now`. Creation is atomic (write a
// temporary file, then link(2), which fails if another process won), so all
// processes agree on one epoch.
Result<system_clock::time_point> ReadOrCreateEpoch(const std::string& dir, system_clock::time_point now) {
  std::string path = dir + "/epoch";
  for (int attempt = 0; attempt < 2; ++attempt) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      char buf[64] = {};
      ssize_t n = ::read(fd, buf, sizeof buf - 1);
      ::close(fd);
      int64_t ns = 0;
      auto [ptr, ec] = std::from_chars(buf, buf + std::max<ssize_t>(n, 0), ns);
      if (ec != std::errc() || ptr == buf) {
        return Status::Corruption(fmt::format("{}: not a timestamp", path));
      }
      return system_clock::time_point(
          std::chrono::duration_cast<system_clock::duration>(std::chrono::nanoseconds(ns)));
    }
    std::string tmp = fmt::format("{}.{}", path, ::getpid());
    std::string text = fmt::format(
        "{}\n", std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count());
    int out = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (out < 0) return Status::IOError(fmt::format("cannot write {}", tmp), std::strerror(errno));
    bool ok = ::write(out, text.data(), text.size()) == static_cast<ssize_t>(text.size());
    ::close(out);
    int linked = ok ? ::link(tmp.c_str(), path.c_str()) : -1;
    int link_errno = errno;
    ::unlink(tmp.c_str());
    if (!ok || (linked != 0 && link_errno != EEXIST)) {
      return Status::IOError(fmt::format("cannot create {}", path), std::strerror(link_errno));
    }
  }
  return Status::IOError(fmt::format("cannot read {}", path));
}

}  // namespace

Status ResolveWorldOptions(WorldOptions* options) {
  if (options->scenario_path.empty()) {
    if (const char* env = std::getenv("TARMAC_SIM_SCENARIO")) options->scenario_path = env;
  }
  if (options->dir.empty()) {
    const char* env = std::getenv("TARMAC_SIM_DIR");
    options->dir =
        (env != nullptr && *env != '\0') ? std::string(env) : fmt::format("/tmp/tarmac-sim-{}", ::getuid());
  }
  if (!options->now) {
    const char* env = std::getenv("TARMAC_SIM_NOW");
    if (env != nullptr && *env != '\0') {
      std::string_view text(env);
      double seconds = 0;
      auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), seconds);
      if (ec != std::errc() || ptr != text.data() + text.size() || seconds < 0) {
        return Status::InvalidArgument("TARMAC_SIM_NOW: expected Unix seconds", text);
      }
      options->now = system_clock::time_point(
          std::chrono::duration_cast<system_clock::duration>(std::chrono::duration<double>(seconds)));
    }
  }
  return Status::OK();
}

Result<std::unique_ptr<World>> World::Open(WorldOptions options, Clock* clock) {
  Status s = ResolveWorldOptions(&options);
  if (!s.ok()) return s;
  if (options.scenario_path.empty()) {
    return Status::Unavailable(
        "no scenario: pass --scenario FILE or set TARMAC_SIM_SCENARIO (see examples/scenarios/)");
  }
  Result<Scenario> scenario = LoadScenario(options.scenario_path);
  if (!scenario.ok()) return scenario.status();
  s = MakeDirs(options.dir);
  if (!s.ok()) return s.WithContext("sim world");
  system_clock::time_point now = options.now.value_or(clock->WallNow());
  Result<system_clock::time_point> epoch = ReadOrCreateEpoch(options.dir, now);
  if (!epoch.ok()) return epoch.status().WithContext("sim world");
  std::string dir = options.dir;
  std::unique_ptr<World> world(
      new World(std::move(scenario).value(), std::move(dir), epoch.value(), std::move(options), clock));
  MutexLock lock(&world->mu_);
  world->RefreshMigLayouts();
  return world;
}

World::World(Scenario scenario, std::string dir, system_clock::time_point epoch, WorldOptions options,
             Clock* clock)
    : scenario_(std::move(scenario)),
      dir_(std::move(dir)),
      epoch_(epoch),
      options_(std::move(options)),
      clock_(clock),
      registry_(dir_) {
  MutexLock lock(&mu_);
  current_ = &scenario_;
}

const Scenario& World::scenario() const {
  MutexLock lock(&mu_);
  return *current_;
}

void World::RefreshMigLayouts() {
  int64_t size = MigJournalSize(dir_);
  if (size == journal_size_) return;
  Result<std::vector<Fault>> changes = ReadMigLayouts(dir_, scenario_);
  if (!changes.ok()) return;  // A line being written: read again next time.
  journal_size_ = size;
  auto next = std::make_unique<Scenario>(scenario_);
  for (Fault& f : changes.value()) next->faults.push_back(std::move(f));
  std::stable_sort(next->faults.begin(), next->faults.end(),
                   [](const Fault& a, const Fault& b) { return a.at < b.at; });
  current_ = next.get();
  versions_.push_back(std::move(next));
}

Status World::ChangeMigLayout(int gpu, const std::vector<MigInstanceSpec>& layout) {
  std::chrono::milliseconds at = std::chrono::duration_cast<std::chrono::milliseconds>(Now() - epoch_);
  Status s = AppendMigLayout(dir_, at, gpu, layout);
  if (!s.ok()) return s;
  MutexLock lock(&mu_);
  cached_ = nullptr;  // The next State() reads the journal and evaluates afresh.
  return Status::OK();
}

system_clock::time_point World::Now() { return options_.now.value_or(clock_->WallNow()); }

bool World::IsCacheFresh(std::chrono::steady_clock::time_point steady) {
  if (cached_ == nullptr || steady - cached_at_ >= options_.cache_for) return false;
  if (steady - checked_at_ < std::chrono::milliseconds(1)) return true;
  checked_at_ = steady;
  return !exits_.AnyExited() && registry_.ChangedNanos() == loads_changed_nanos_;
}

std::shared_ptr<const WorldState> World::State() {
  MutexLock lock(&mu_);
  std::chrono::steady_clock::time_point steady = clock_->SteadyNow();
  if (!IsCacheFresh(steady)) {
    RefreshMigLayouts();
    // Read before the loads: a change while they are listed shows next time.
    loads_changed_nanos_ = registry_.ChangedNanos();
    cached_loads_ = options_.live_loads_only ? registry_.ListLive() : registry_.List();
    std::vector<int64_t> running;
    for (const Load& load : cached_loads_) {
      if (!load.ended_at) running.push_back(load.pid);
    }
    exits_.Watch(running);
    cached_ = std::make_shared<const WorldState>(EvaluateWorld(*current_, cached_loads_, epoch_, Now()));
    cached_at_ = checked_at_ = steady;
  }
  return cached_;
}

std::shared_ptr<const WorldState> World::StateWhenResponsive(int gpu) {
  std::shared_ptr<const WorldState> state = State();
  while (state->gpus[static_cast<size_t>(gpu)].is_hung) {
    clock_->SleepUntil(clock_->SteadyNow() + std::chrono::milliseconds(100), std::stop_token());
    state = State();
  }
  return state;
}

EngineActivity World::MeanEngineActivity(int gpu, system_clock::time_point from, system_clock::time_point to,
                                         int gpu_instance_id) {
  EngineActivity mean;
  if (to <= from) return mean;
  (void)State();  // Refreshes the loads.
  MutexLock lock(&mu_);
  // The midpoints of equal slices: exact for steady loads, close for the rest.
  constexpr int kSlices = 16;
  for (int i = 0; i < kSlices; ++i) {
    system_clock::time_point at = from + (to - from) * (2 * i + 1) / (2 * kSlices);
    EngineActivity a = EngineActivityAt(*current_, gpu, cached_loads_, epoch_, at, gpu_instance_id);
    mean.graphics += a.graphics / kSlices;
    mean.tensor += a.tensor / kSlices;
    mean.dram += a.dram / kSlices;
  }
  return mean;
}

std::vector<std::pair<system_clock::time_point, int>> World::UtilizationHistory(int gpu,
                                                                                std::chrono::seconds window) {
  std::shared_ptr<const WorldState> state = State();  // Refreshes the loads.
  MutexLock lock(&mu_);
  std::vector<std::pair<system_clock::time_point, int>> samples;
  system_clock::time_point now = state->evaluated_at;
  for (int64_t back = window.count() - 1; back >= 0; --back) {
    system_clock::time_point at = now - std::chrono::seconds(back);
    if (at < epoch_) continue;
    samples.emplace_back(at, UtilizationPercentAt(*current_, gpu, cached_loads_, epoch_, at));
  }
  return samples;
}

}  // namespace tarmac::sim
