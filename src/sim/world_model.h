// SPDX-License-Identifier: Apache-2.0
//
// The physics of the simulated world, as pure functions of (scenario, loads,
// time). Given the same inputs every caller gets the same numbers, which is
// how the sim backend, the fake libnvidia-ml and tarmac-simload agree by
// construction.
//
// Values are kept in the units and precision the NVML driver reports them
// (integer percent, milliwatts, whole degrees, MHz), so a backend that reads
// the world directly and one that reads it through the NVML ABI report
// exactly the same numbers.
//
// The models, in short (docs/scenario.md has the details):
// - device utilization is the sum of the attached loads' patterns, capped at
//   100 %; each process gets its share;
// - power = idle + (max - idle) * utilization, capped at the enforced limit
//   (then clocks drop and sw_power_cap is set);
// - temperature = ambient + power * thermal_c_per_w (steady state); at the
//   slowdown threshold clocks drop and sw_thermal_slowdown is set;
// - energy and PCIe byte counters integrate each load's mean rate over the
//   time it was active, so they are monotonic and survive a load's death.
#pragma once

#include <chrono>
#include <cstdint>
#include <vector>

#include "sim/load.h"
#include "sim/scenario.h"

namespace tarmac::sim {

struct ProcessState {
  int64_t pid = 0;
  int64_t used_memory_bytes = 0;
  int sm_utilization_percent = 0;  // Of its device (its MIG instance under MIG).
  int gpu_instance_id = -1;        // Its MIG instance; -1 without MIG.
  int compute_instance_id = -1;
};

// A MIG instance now: its spec (in the scenario, which outlives the state)
// and what its processes use.
struct MigInstanceState {
  const MigInstanceSpec* spec = nullptr;
  int64_t memory_used_bytes = 0;
  int utilization_percent = 0;  // Sum of its processes' shares, capped at 100.
};

struct GpuState {
  bool is_lost = false;
  bool is_hung = false;  // NVML calls on it block (nvml_hang fault).
  int utilization_gpu_percent = 0;
  int utilization_memory_percent = 0;
  int64_t memory_total_bytes = 0;
  int64_t memory_reserved_bytes = 0;
  int64_t memory_used_bytes = 0;  // Excluding reserved.
  int64_t memory_free_bytes = 0;
  int64_t power_milliwatts = 0;
  int64_t power_limit_milliwatts = 0;
  int64_t energy_millijoules = 0;
  int temperature_celsius = 0;
  int sm_clock_mhz = 0;
  int memory_clock_mhz = 0;
  uint64_t clock_event_reasons = 0;
  // Time the clocks were held down by the scenario's thermal_throttle
  // faults since the epoch (NVML's thermal violation time); heat from the
  // load alone is not counted.
  int64_t thermal_violation_ms = 0;
  int performance_state = 8;
  int fan_percent = 0;
  int pcie_generation = 0;
  int pcie_width = 0;
  int64_t pcie_tx_bytes = 0;
  int64_t pcie_rx_bytes = 0;
  int64_t pcie_tx_kilobytes_per_second = 0;
  int64_t pcie_rx_kilobytes_per_second = 0;
  int64_t ecc_corrected = 0;
  int64_t ecc_uncorrected = 0;
  int64_t remapped_rows_corrected = 0;
  int64_t remapped_rows_uncorrected = 0;
  bool is_remap_pending = false;
  std::vector<bool> nvlink_active;  // One per link (NvlinkLinkCount).
  int64_t nvlink_crc_errors = 0;    // Totals over the links since the driver loaded.
  int64_t nvlink_replay_errors = 0;
  int64_t nvlink_recovery_errors = 0;
  int64_t pcie_replays = 0;
  int64_t retired_pages_single_bit = 0;  // Boards without row remapping retire pages instead.
  int64_t retired_pages_double_bit = 0;
  bool is_retire_pending = false;
  std::vector<ProcessState> processes;          // Ordered by PID.
  std::vector<MigInstanceState> mig_instances;  // In layout order; empty without MIG.
};

struct WorldState {
  std::chrono::system_clock::time_point evaluated_at;
  bool is_driver_loaded = true;
  std::vector<GpuState> gpus;  // One per scenario GPU.
};

struct WorldEvent {
  std::chrono::system_clock::time_point at;
  int gpu = 0;
  uint64_t event_type = 0;  // NVML event type bit.
  int64_t xid = 0;
};

// The state of every GPU at wall time `now`. `epoch` is the wall time at
// which the scenario's timeline starts. A load counts on a GPU when
// started_at <= now and it had not ended by `now`.
WorldState EvaluateWorld(const Scenario& scenario, const std::vector<Load>& loads,
                         std::chrono::system_clock::time_point epoch,
                         std::chrono::system_clock::time_point now);

// Device utilization of GPU `gpu` at `at`, in percent: the same number
// EvaluateWorld gives, computed alone (used for recent-history queries).
int UtilizationPercentAt(const Scenario& scenario, int gpu, const std::vector<Load>& loads,
                         std::chrono::system_clock::time_point epoch,
                         std::chrono::system_clock::time_point at);

// How busy GPU `gpu`'s engines are at `at`, in 0..1, as its performance
// monitor (GPM, Hopper and newer) counts them: the graphics/compute engine
// (the device utilization, unrounded), the tensor pipes (each load's share
// times its tensor_ratio) and DRAM (0.55 of the engine, as
// utilization_memory). Under MIG, whole-GPU figures weigh each instance by
// its compute slices of 7; `gpu_instance_id` >= 0 gives that instance's own
// (zeros when it has no such instance).
struct EngineActivity {
  double graphics = 0;
  double tensor = 0;
  double dram = 0;
};
EngineActivity EngineActivityAt(const Scenario& scenario, int gpu, const std::vector<Load>& loads,
                                std::chrono::system_clock::time_point epoch,
                                std::chrono::system_clock::time_point at, int gpu_instance_id = -1);

// Driver events with from < at <= to, oldest first.
std::vector<WorldEvent> EventsBetween(const Scenario& scenario, std::chrono::system_clock::time_point epoch,
                                      std::chrono::system_clock::time_point from,
                                      std::chrono::system_clock::time_point to);

// The utilization one load puts on a GPU at timeline time `t`, in 0..1.
double LoadUtilizationAt(const Load& load, std::chrono::milliseconds t);

}  // namespace tarmac::sim
