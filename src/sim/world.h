// SPDX-License-Identifier: Apache-2.0
//
// World ties a scenario to its directory on disk (where loads register and
// where the timeline's epoch is kept) and evaluates it. The sim backend, the
// fake libnvidia-ml and tarmac-simload each open a World over the same
// directory and so see the same machine.
//
// Where things come from (flags override the environment):
//   TARMAC_SIM_SCENARIO  scenario file (required)
//   TARMAC_SIM_DIR       world directory (default /tmp/tarmac-sim-<uid>)
//   TARMAC_SIM_NOW       evaluate at this wall time (Unix seconds, may have a
//                        fraction) instead of the clock: freezes the world so
//                        two readers see identical numbers.
//
// Thread safety: State() and the other methods may be called from many
// threads; the cached state is guarded by a mutex.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/mutex.h"
#include "common/result.h"
#include "sim/exit_watch.h"
#include "sim/load.h"
#include "sim/scenario.h"
#include "sim/world_model.h"

namespace tarmac::sim {

struct WorldOptions {
  std::string scenario_path;  // Empty: TARMAC_SIM_SCENARIO.
  std::string dir;            // Empty: TARMAC_SIM_DIR or the default.
  // Evaluate at this wall time instead of the clock. Empty: TARMAC_SIM_NOW
  // or the clock.
  std::optional<std::chrono::system_clock::time_point> now;
  // How long an evaluated state is reused, like a driver's sample period
  // (utilization and the other rates). Not past a load's process exiting
  // or a load registered or ended: a driver shows a process and its memory
  // come and go at once.
  std::chrono::milliseconds cache_for{100};
  // Only the loads that may live (LoadRegistry::ListLive): a program that
  // checks memory at its start (tarmac-simload, tarmac-simengine), whose
  // state then counts no ended load's energy.
  bool live_loads_only = false;

  bool operator==(const WorldOptions&) const = default;
};

// Fills empty fields of `options` from the environment. Returns
// kInvalidArgument when TARMAC_SIM_NOW is malformed.
Status ResolveWorldOptions(WorldOptions* options);

class World {
 public:
  // Loads the scenario, creates the directory and the epoch file if needed.
  // kUnavailable when no scenario is named; the parser's error when the
  // scenario is malformed; kIOError when the directory cannot be used.
  static Result<std::unique_ptr<World>> Open(WorldOptions options, Clock* clock);

  // The scenario with the MIG layout changes made so far through NVML
  // (sim/mig_journal.h) as mig_reconfigure faults. Every version stays
  // alive as long as the world: a reference taken before a change stays
  // valid.
  const Scenario& scenario() const;
  const std::string& dir() const { return dir_; }
  std::chrono::system_clock::time_point epoch() const { return epoch_; }
  LoadRegistry& registry() { return registry_; }

  // The wall time the world is evaluated at: the frozen time or the clock.
  std::chrono::system_clock::time_point Now();
  // Whether the world is evaluated at one fixed time (TARMAC_SIM_NOW).
  bool is_frozen() const { return options_.now.has_value(); }

  // The state now (reused for cache_for).
  std::shared_ptr<const WorldState> State();

  // The state once GPU `gpu` answers: while an nvml_hang fault holds it, the
  // caller blocks, as it would in a hung driver call. REQUIRES: `gpu` is a
  // valid index.
  std::shared_ptr<const WorldState> StateWhenResponsive(int gpu);

  // Mean engine activity of `gpu` between two instants (what a GPM metric
  // over two samples reports); zeros when `to` is not after `from`. With
  // `gpu_instance_id` >= 0, of that MIG instance only.
  EngineActivity MeanEngineActivity(int gpu, std::chrono::system_clock::time_point from,
                                    std::chrono::system_clock::time_point to, int gpu_instance_id = -1);

  // Makes `layout` GPU `gpu`'s MIG layout from now on, for every process of
  // the world (sim/mig_journal.h); the next State() has it. kIOError when
  // the journal cannot be written.
  Status ChangeMigLayout(int gpu, const std::vector<MigInstanceSpec>& layout);

  // Device utilization samples of `gpu`, one per second, for the `window`
  // before now, oldest first: (time, percent).
  std::vector<std::pair<std::chrono::system_clock::time_point, int>> UtilizationHistory(
      int gpu, std::chrono::seconds window);

 private:
  World(Scenario scenario, std::string dir, std::chrono::system_clock::time_point epoch, WorldOptions options,
        Clock* clock);

  // Reads the MIG journal again when it has grown.
  void RefreshMigLayouts() REQUIRES(mu_);
  // Whether the cached state still holds: within cache_for, and (looked at
  // most every millisecond) no load's process has exited and the loads
  // folder has not changed since.
  bool IsCacheFresh(std::chrono::steady_clock::time_point steady) REQUIRES(mu_);

  const Scenario scenario_;  // As loaded.
  std::string dir_;
  std::chrono::system_clock::time_point epoch_;
  WorldOptions options_;
  Clock* clock_;
  LoadRegistry registry_;

  mutable Mutex mu_;
  std::vector<std::unique_ptr<const Scenario>> versions_ GUARDED_BY(mu_);  // With the MIG journal's changes.
  const Scenario* current_ GUARDED_BY(mu_) = nullptr;                      // scenario_ or the last version.
  int64_t journal_size_ GUARDED_BY(mu_) = 0;
  std::shared_ptr<const WorldState> cached_ GUARDED_BY(mu_);
  std::vector<Load> cached_loads_ GUARDED_BY(mu_);
  std::chrono::steady_clock::time_point cached_at_ GUARDED_BY(mu_);
  std::chrono::steady_clock::time_point checked_at_ GUARDED_BY(mu_);
  ExitWatch exits_ GUARDED_BY(mu_);                  // The cached active loads' processes.
  int64_t loads_changed_nanos_ GUARDED_BY(mu_) = 0;  // registry_.ChangedNanos() before they were listed.
};

}  // namespace tarmac::sim
