// SPDX-License-Identifier: Apache-2.0
//
// Plain data that GPU backends produce and everything else consumes: no
// behaviour, no vendor types. Every reading a device may be unable to give is
// a std::optional: empty means "not supported or not available", never zero.
// Units are in the field names; all values are in base units.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tarmac::node {

// Whether a device could be read at all. A lost GPU is a state shown to the
// user, not an error that stops the program.
enum class GpuHealth {
  kOk,
  kLost,             // Fell off the bus (Xid 79) or NVML_ERROR_GPU_IS_LOST.
  kNoPermission,     // NVML_ERROR_NO_PERMISSION for this device.
  kUnresponsive,     // A call on this device did not return in time.
  kDriverNotLoaded,  // The kernel driver went away (unloaded, reloading).
  kError,            // Any other failure to read the device; see `error`.
};

// "ok", "lost", "no_permission", "unresponsive", "driver_not_loaded", "error".
const char* GpuHealthName(GpuHealth health);
// The health a name says; kError for any other text.
GpuHealth GpuHealthNamed(std::string_view name);

// Failed driver calls since the backend opened, by function and by the
// driver's name for the error: {("nvmlDeviceGetPowerUsage", "GPU_IS_LOST"):
// 12}. "Not supported" is a fact about a device, not a failure: not counted.
struct CallError {
  std::string call;
  std::string error;
  auto operator<=>(const CallError&) const = default;
};
using CallErrorCounts = std::map<CallError, int64_t>;

// Facts about the driver stack, read once.
struct SystemInfo {
  std::string driver_version;              // "580.65.06"
  std::string nvml_version;                // "13.580.65.06"
  std::optional<int> cuda_driver_version;  // 13000 means CUDA 13.0
  std::string library_path;                // NVML file loaded, or scenario path
};

// Identity and fixed properties of one GPU, read at Open().
struct GpuInfo {
  int index = 0;
  std::string uuid;        // "GPU-6f1a..."
  std::string name;        // "NVIDIA H100 80GB HBM3"
  std::string pci_bus_id;  // "00000000:18:00.0" (NVML form, upper case)
  std::optional<std::string> serial;
  std::optional<int> minor_number;  // /dev/nvidiaN
  std::optional<int64_t> memory_total_bytes;
  std::optional<int64_t> power_limit_default_milliwatts;
  std::optional<int64_t> sm_clock_max_hertz;
  std::optional<int64_t> memory_clock_max_hertz;
  std::optional<int> pcie_generation_max;
  std::optional<int> pcie_width_max;
  std::optional<int> numa_node;
  std::optional<std::string> cpu_affinity;  // "0-55,112-167"
  std::optional<bool> is_persistence_mode_enabled;
  std::optional<bool> is_mig_enabled;
  std::optional<bool> is_mig_pending;  // A MIG mode change waits for a GPU reset.
  std::optional<double> temperature_slowdown_celsius;
  // PCI bus ids (NVML form) of the GPUs at the other end of this GPU's
  // active NVLinks, each once; empty without NVLink. Topology for placement.
  std::vector<std::string> nvlink_peer_bus_ids;
  GpuHealth health = GpuHealth::kOk;  // Health when opened.
  std::string error;                  // Why health is not kOk.
};

enum class ProcessType { kCompute, kGraphics, kComputeAndGraphics };

// "compute", "graphics", "compute+graphics".
const char* ProcessTypeName(ProcessType type);
// The type a name says; kCompute for any other text.
ProcessType ProcessTypeNamed(std::string_view name);

// One process with a context on a GPU.
struct GpuProcess {
  int64_t pid = 0;
  ProcessType type = ProcessType::kCompute;
  std::optional<int64_t> used_memory_bytes;    // Empty under MIG/WDDM.
  std::optional<double> sm_utilization_ratio;  // 0..1 over the last second; never under MIG.
  // The MIG instance the process runs in (GPU instance, compute instance);
  // empty on a GPU without MIG.
  std::optional<int> gpu_instance_id = std::nullopt;
  std::optional<int> compute_instance_id = std::nullopt;
};

// One MIG device (a GPU instance and its compute instance) on a GPU in MIG
// mode, as NVML's MIG device handle reads it. What NVML does not give per
// instance (utilization rates, per-process utilization) is not here.
struct MigInstance {
  std::string uuid;         // "MIG-..." (what CUDA_VISIBLE_DEVICES takes)
  int gpu_instance_id = 0;  // dcgm-exporter's GPU_I_ID
  int compute_instance_id = 0;
  std::string profile;  // "1g.10gb" (GPU_I_PROFILE)
  std::optional<int64_t> memory_total_bytes;
  std::optional<int64_t> memory_used_bytes;
  // Engine activity of this instance since the previous sample, from GPM
  // (Hopper and newer), 0..1; empty where the GPU has no GPM.
  std::optional<double> graphics_engine_active_ratio;
  std::optional<double> tensor_active_ratio;
  std::optional<double> dram_active_ratio;
};

struct EccCounts {
  std::optional<int64_t> volatile_corrected;
  std::optional<int64_t> volatile_uncorrected;
  std::optional<int64_t> aggregate_corrected;
  std::optional<int64_t> aggregate_uncorrected;
};

// Pages of GPU memory retired after ECC errors (boards before Ampere; newer
// ones remap rows instead).
struct RetiredPages {
  int64_t single_bit = 0;
  int64_t double_bit = 0;
  bool is_pending = false;  // Retirement waits for a GPU reset.
};

struct RemappedRows {
  int64_t corrected = 0;
  int64_t uncorrected = 0;
  bool is_pending = false;
  bool has_failure = false;
};

// Which groups of readings to take. The agent reads kFast every tick and
// kSlow less often; one-shot commands read both.
enum SampleTier : unsigned {
  kFastTier = 1u << 0,  // utilization, memory, power, temperature, clocks,
                        // clock event reasons, pstate, processes
  kSlowTier = 1u << 1,  // ECC, remapped rows, PCIe link and counters,
                        // NVLink, fan, memory temperature
  kAllTiers = kFastTier | kSlowTier,
};

// Readings of one GPU at one moment.
struct GpuSample {
  int index = 0;
  std::chrono::system_clock::time_point taken_at;
  // When the slow tier was read: taken_at on a slow read, carried with the
  // slow readings on a fast one (CarrySlowTier). Counter rates use it.
  std::chrono::system_clock::time_point slow_taken_at;
  GpuHealth health = GpuHealth::kOk;
  std::string error;  // Why health is not kOk.

  // Fast tier.
  std::optional<double> utilization_gpu_ratio;     // 0..1
  std::optional<double> utilization_memory_ratio;  // 0..1
  std::optional<int64_t> memory_total_bytes;
  std::optional<int64_t> memory_used_bytes;      // Excludes reserved (v2).
  std::optional<int64_t> memory_reserved_bytes;  // Driver/firmware reserve.
  std::optional<int64_t> memory_free_bytes;
  std::optional<int64_t> power_milliwatts;
  std::optional<int64_t> power_limit_milliwatts;  // Enforced limit.
  std::optional<int64_t> energy_millijoules;      // Since driver load.
  std::optional<double> temperature_celsius;
  std::optional<int64_t> sm_clock_hertz;
  std::optional<int64_t> memory_clock_hertz;
  std::optional<uint64_t> clock_event_reasons;      // NVML bit set
  std::optional<int> performance_state;             // 0..15 (P0..P15)
  std::optional<double> encoder_utilization_ratio;  // 0..1 (NVENC)
  std::optional<double> decoder_utilization_ratio;  // 0..1 (NVDEC)
  // Engine activity since the previous sample, from the GPU's performance
  // monitor (GPM: Hopper and newer; empty on the first sample and where
  // unsupported), 0..1: graphics/compute engine, tensor (HMMA) pipes, DRAM.
  std::optional<double> graphics_engine_active_ratio;
  std::optional<double> tensor_active_ratio;
  std::optional<double> dram_active_ratio;
  std::vector<GpuProcess> processes;
  bool has_processes = false;  // False when the process list was unreadable.
  // The MIG devices of a GPU in MIG mode, by GPU instance id; empty without
  // MIG. Read each sample: the layout can change while the agent runs.
  std::vector<MigInstance> mig_instances;
  // True when the MIG devices were read: mig_instances is then the whole
  // layout, even when empty (every instance destroyed).
  bool has_mig_instances = false;

  // Slow tier (node/sample_fields.cc says which tier each field is read in).
  std::optional<double> memory_temperature_celsius;  // HBM (field value 82).
  std::optional<double> fan_speed_ratio;             // 0..1 (may exceed 1 on some boards)
  std::optional<int> pcie_generation;
  std::optional<int> pcie_width;
  std::optional<int64_t> pcie_tx_bytes;  // Counter since driver load.
  std::optional<int64_t> pcie_rx_bytes;  // Counter since driver load.
  EccCounts ecc;
  std::optional<RemappedRows> remapped_rows;
  std::vector<bool> nvlink_active;  // One entry per link the device has.
  // Errors over all NVLinks since the driver loaded (field values 45/52/59).
  std::optional<int64_t> nvlink_crc_errors;
  std::optional<int64_t> nvlink_replay_errors;
  std::optional<int64_t> nvlink_recovery_errors;
  // Bytes over all NVLinks, both directions, since the driver loaded
  // (field values 138/139, NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX/RX).
  std::optional<int64_t> nvlink_bytes;
  // A vGPU in a guest VM: whether its license is held (empty on GPUs that
  // are not vGPUs).
  std::optional<bool> is_vgpu_licensed;
  std::optional<int64_t> pcie_replays;        // Since the driver loaded (field value 94).
  std::optional<RetiredPages> retired_pages;  // Field values 29-31; before Ampere only.
};

inline constexpr uint64_t kEventXidCriticalError = 0x8;
inline constexpr uint64_t kEventMigConfigChange = 0x100;

// An asynchronous event from the driver (Xid, MIG configuration change).
struct GpuEvent {
  int gpu_index = 0;
  uint64_t event_type = 0;  // NVML event type bit (0x8 Xid critical error, 0x100 MIG config change)
  int64_t xid = 0;          // For Xid events; 999 means unknown.
  std::chrono::system_clock::time_point seen_at;
};

}  // namespace tarmac::node
