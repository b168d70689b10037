// SPDX-License-Identifier: Apache-2.0
//
// The data model of a simulated machine: its GPUs and a timeline of faults.
// Scenario files (TOML, docs/scenario.md) are parsed into these structs by
// scenario_parser.h. Plain data; no behaviour.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace tarmac::sim {

// Readings a scenario can declare unsupported on a GPU; the backends then
// report NOT_SUPPORTED for them, as a real driver does on boards that lack
// the sensor.
inline constexpr const char* kOptionalFields[] = {
    "serial",
    "fan",
    "power",
    "energy",
    "temperature",
    "ecc",
    "remapped_rows",
    "pcie_counters",
    "process_utilization",
    "clock_event_reasons",
    "performance_state",
    "utilization",
    "numa_node",
    "gpm",
};

// One MIG instance of a layout (a GPU instance with one compute instance
// spanning it, as `nvidia-smi mig -cgi P -C` makes).
struct MigInstanceSpec {
  std::string profile;  // "1g.10gb"
  int gpu_instance_id = 0;
  int compute_instance_id = 0;
  std::string uuid;  // "MIG-...", derived from the GPU's UUID, the layout and the id.
  int64_t memory_total_bytes = 0;
  int compute_slices = 0;  // Of 7.
  // What the UUID derives from with the GPU's UUID and the id: 0 for the
  // spec's layout, n for the n-th mig_reconfigure, the timeline
  // millisecond of its creation for an instance created through NVML.
  int64_t generation = 0;
  // The first of its memory slices (of 8) where it was made at a placement
  // (NVML's nvmlDeviceCreateGpuInstanceWithPlacement); -1: wherever it fits
  // (MigMemoryStarts).
  int memory_start = -1;
};

struct GpuSpec {
  int index = 0;
  std::string model = "NVIDIA H100 80GB HBM3";
  std::string uuid;    // Derived from the seed and index when not given.
  std::string serial;  // Derived when not given.
  int pci_bus = 0;     // PCI bus number; derived when not given.
  int64_t memory_total_bytes = int64_t{80} << 30;
  int64_t memory_reserved_bytes = int64_t{512} << 20;
  double power_idle_watts = 70;
  double power_max_watts = 700;
  double power_limit_watts = 700;
  double ambient_celsius = 30;
  double thermal_celsius_per_watt = 0.07;  // Steady-state rise per watt.
  double slowdown_celsius = 87;
  double shutdown_celsius = 92;
  int sm_clock_max_mhz = 1980;
  int sm_clock_idle_mhz = 345;
  int memory_clock_mhz = 2619;
  int pcie_generation = 5;
  int pcie_width = 16;
  std::vector<int> nvlink_peers;  // Indices of GPUs joined by NVLink.
  int numa_node = 0;
  std::string cpus = "0-31";  // CPU list near this GPU.
  bool has_ecc = true;
  bool has_remapped_rows = true;
  bool is_persistence_mode_enabled = true;
  bool is_mig_enabled = false;
  bool is_mig_pending = false;  // A MIG mode change waits for a GPU reset (pending != current).
  // The MIG instances at t=0 (mig_layout; implies is_mig_enabled). A
  // mig_reconfigure fault replaces them.
  std::vector<MigInstanceSpec> mig_instances;
  // A vGPU in a guest VM (virtualization mode VGPU), and whether its vGPU
  // license is held.
  bool is_vgpu = false;
  bool is_vgpu_licensed = true;
  // NVLink links the GPU has (-1: by model: 18 on H100/H200 SXM, 12 on
  // A100 SXM, else one per peer). Link i joins nvlink_peers[i % peers].
  int nvlink_link_count = -1;
  bool has_no_permission = false;     // Opening the device is refused.
  std::set<std::string> unsupported;  // Names from kOptionalFields.

  bool Supports(const std::string& field) const { return unsupported.count(field) == 0; }
};

enum class FaultKind {
  kThermalThrottle,  // Hardware thermal slowdown from `at` (until `until`).
  kPowerThrottle,    // Power limit lowered to `power_limit_watts`.
  kPcieDowntrain,    // Link width drops to `pcie_width`.
  kEccError,         // `count` ECC errors of `ecc_kind`.
  kXid,              // Xid event `xid`.
  kFallOffBus,       // Xid 79; the GPU is lost from then on.
  kDriverUnloaded,   // NVML reports the driver not loaded (all GPUs).
  kDriverLoaded,     // The driver comes back.
  kNvmlHang,         // Every NVML call on the GPU blocks (until `until`).
  kNvlinkDown,       // NVLink `link` goes down (until `until`).
  kNvlinkErrors,     // `count` NVLink errors of `nvlink_error` (crc, replay, recovery).
  kPcieReplay,       // `count` PCIe replays.
  kMigReconfigure,   // GPU `gpu`'s MIG instances become `mig_instances` (event 0x100).
};

// How many NVLink links a GPU of this spec has (see nvlink_link_count).
int NvlinkLinkCount(const GpuSpec& spec);

// "thermal_throttle", "power_throttle", ...
const char* FaultKindName(FaultKind kind);

struct Fault {
  FaultKind kind = FaultKind::kXid;
  std::chrono::milliseconds at{0};                 // Since the world's epoch.
  std::optional<std::chrono::milliseconds> until;  // End, for throttles.
  int gpu = -1;                                    // -1: every GPU / machine-wide.
  int64_t xid = 0;
  int64_t count = 1;
  bool is_uncorrected = false;  // For ECC errors.
  int pcie_width = 8;
  int link = 0;                      // For nvlink faults.
  std::string nvlink_error = "crc";  // crc, replay, recovery.
  double power_limit_watts = 0;
  std::vector<MigInstanceSpec> mig_instances;  // For mig_reconfigure.
  int line = 0;                                // Source line, for messages.
};

struct Scenario {
  std::string name = "unnamed";
  std::string path;  // File it was read from, if any.
  uint64_t seed = 1;
  std::string driver_version = "580.65.06";
  std::string nvml_version = "13.580.65.06";
  int cuda_driver_version = 13000;
  bool is_driver_loaded = true;  // At t=0.
  // What nvmlInit returns on this machine: "" (success),
  // "lib_rm_version_mismatch" or "no_permission".
  std::string init_error;
  // Versioned structs this driver refuses with ARGUMENT_VERSION_MISMATCH, as
  // a driver built for another struct version does: "memory_v2",
  // "temperature_v1".
  std::set<std::string> rejected_struct_versions;
  std::vector<GpuSpec> gpus;
  std::vector<Fault> faults;  // Sorted by `at`.
};

// The MIG instances of `gpu` at timeline time `t` (the last mig_reconfigure
// fault at or before `t`, else the spec's).
const std::vector<MigInstanceSpec>& MigInstancesAt(const Scenario& scenario, int gpu,
                                                   std::chrono::milliseconds t);

}  // namespace tarmac::sim
