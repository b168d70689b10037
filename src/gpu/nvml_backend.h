// SPDX-License-Identifier: Apache-2.0
//
// NvmlBackend reads GPUs through the NVIDIA management library, dlopen()ed
// at Open() (nvml_api.h). It prefers versioned symbols and falls back as the
// driver requires (docs/nvml.md): memory v2 -> v1, clock event reasons ->
// throttle reasons, TemperatureV -> Temperature, process lists _v3 -> _v2 ->
// v1 with the right entry stride.
//
// Every reading is optional. NOT_SUPPORTED leaves the field empty and is
// remembered per device and field, so an unsupported call is made once.
// GPU_IS_LOST marks the device lost; NO_PERMISSION marks it so; other errors
// are counted per call and leave the field empty.
//
// Thread safety: Open from one thread; after it, Sample may run for
// different GPUs on different threads at once (NVML is thread-safe and each
// GPU's state is its own); calls for one GPU must not overlap.
#pragma once

#include <array>
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "common/clock.h"
#include "common/log.h"
#include "common/mutex.h"
#include "gpu/gpu_backend.h"
#include "gpu/nvml_api.h"

namespace tarmac::gpu {

struct NvmlOptions {
  // Library file to load; empty: TARMAC_NVML_LIBRARY, then the default
  // names libnvidia-ml.so.1 and libnvidia-ml.so.
  std::string library_path;
};

// Readings that may be unsupported; used to remember NOT_SUPPORTED.
enum class NvmlField {
  kUtilization,
  kMemoryV2,
  kMemoryV1,
  kPower,
  kPowerLimit,
  kEnergy,
  kTemperatureV,
  kTemperature,
  kSmClock,
  kMemoryClock,
  kClockEventReasons,
  kThrottleReasons,
  kPerformanceState,
  kFan,
  kPcieGeneration,
  kPcieWidth,
  kPcieCounters,
  kEcc,
  kRemappedRows,
  kNvLink,
  kComputeProcesses,
  kGraphicsProcesses,
  kProcessUtilization,
  kSamples,
  kGpm,
  kErrorCounters,
  kEncoder,
  kDecoder,
  kMemoryAndNvlinkFields,
  kVgpuLicense,
  kMig,
  kCount,
};

class NvmlBackend final : public GpuBackend {
 public:
  NvmlBackend(NvmlOptions options, Clock* clock, Logger* logger);
  ~NvmlBackend() override;

  std::string_view name() const override { return "nvml"; }
  Result<std::vector<node::GpuInfo>> Open() override;
  const node::SystemInfo& system_info() const override { return system_info_; }
  Result<node::GpuSample> Sample(int index, unsigned tiers) override;
  std::optional<double> RecentUtilization(int index, std::chrono::seconds window) override;
  Result<std::vector<node::GpuEvent>> WaitEvents(std::chrono::milliseconds timeout) override;

  node::CallErrorCounts CallErrors() const override;

 private:
  struct DeviceState {
    nvml::Device handle = nullptr;
    node::GpuHealth health = node::GpuHealth::kOk;
    std::string error;
    // Indexed by NvmlField; the extra slot (kCount) collects identity calls.
    std::array<bool, static_cast<size_t>(NvmlField::kCount) + 1> unsupported{};
    unsigned long long last_process_sample_us = 0;
    int nvlink_count = -1;  // Links the device has; probed once.
    // GPM: two samples used in turn; metrics come from the pair.
    nvml::GpmSample gpm_samples[2] = {nullptr, nullptr};
    int gpm_next = 0;               // The sample the next read fills.
    bool has_gpm_previous = false;  // The other one holds the previous read.
    bool is_mig_enabled = false;    // MIG mode at Open (changes only with a reset).
    // GPM per MIG GPU instance (by its id), used like gpm_samples.
    struct MigGpm {
      nvml::GpmSample samples[2] = {nullptr, nullptr};
      int next = 0;
      bool has_previous = false;
    };
    std::map<unsigned, MigGpm> mig_gpm;
    // The request GpmMetricsGet fills, kept (3.9 KiB: not on a worker's
    // stack, nor allocated per call).
    std::shared_ptr<nvml::GpmMetricsGet> gpm_get;  // Null until the first read (copies share nothing then).
  };

  // Classifies a return code of `call` on device `d`. Returns true on
  // success. NOT_SUPPORTED marks `field` unsupported; GPU_IS_LOST marks the
  // device lost; DRIVER_NOT_LOADED marks it so. Every failure but
  // NOT_SUPPORTED is counted by call and error (CallErrors); the first of
  // each other kind is logged.
  bool Check(DeviceState& d, int index, NvmlField field, const char* call, nvml::Return r);
  bool Supported(const DeviceState& d, NvmlField field) const {
    return !d.unsupported[static_cast<size_t>(field)];
  }
  // Calls `fn(d.handle, args...)` unless the library lacks it, `field` is
  // known unsupported, or the device is gone; whether it succeeded (Check).
  template <typename Fn, typename... Args>
  bool Read(DeviceState& d, int index, NvmlField field, const char* call, Fn fn, Args... args) {
    if (fn == nullptr || !Supported(d, field) || d.health != node::GpuHealth::kOk) return false;
    return Check(d, index, field, call, fn(d.handle, args...));
  }

  void ReadFast(DeviceState& d, int index, node::GpuSample* s);
  void ReadSlow(DeviceState& d, int index, node::GpuSample* s);
  // Parts of the tiers: memory (v2, else v1), temperature (versioned, else
  // the old call), the field-value counters (PCIe bytes, error counters,
  // HBM temperature and NVLink bytes), a vGPU guest's license.
  void ReadMemory(DeviceState& d, int index, node::GpuSample* s);
  void ReadTemperature(DeviceState& d, int index, node::GpuSample* s);
  void ReadFieldValues(DeviceState& d, int index, node::GpuSample* s);
  void ReadVgpuLicense(DeviceState& d, int index, node::GpuSample* s);
  void ReadProcesses(DeviceState& d, int index, node::GpuSample* s);
  // Engine activity over the interval since the previous call (GPM), of
  // the GPU and of each MIG instance in s->mig_instances.
  void ReadGpm(DeviceState& d, int index, node::GpuSample* s);
  // The MIG devices of a GPU in MIG mode (nvml_mig.cc).
  void ReadMigInstances(DeviceState& d, int index, node::GpuSample* s);
  // Frees the GPM samples of `d` (the GPU's and its instances').
  void FreeGpmSamples(DeviceState& d);
  // Two GPM samples used in turn (a GPU's, or one MIG instance's).
  struct GpmPair {
    nvml::GpmSample* samples;  // [2]
    int* next;
    bool* has_previous;
  };
  struct Activity {
    std::optional<double> graphics;
    std::optional<double> tensor;
    std::optional<double> dram;
  };
  // Takes the next sample of `pair` with `take`; true with the activity
  // since the previous one in `out` when there was one.
  bool NextActivity(DeviceState& d, int index, const GpmPair& pair,
                    const std::function<nvml::Return(nvml::GpmSample)>& take, Activity* out);
  // Reads one process list with the size protocol; appends its entries
  // (pid, memory, MIG instance ids).
  bool ReadProcessList(DeviceState& d, int index, bool is_graphics, std::vector<node::GpuProcess>* out);
  Status InitLibrary();
  // Open's steps (nvml_open.cc).
  void ReadSystemInfo();
  void ReadIdentity(DeviceState& d, int index, node::GpuInfo* info);
  void ReadLimits(DeviceState& d, node::GpuInfo* info);
  void ReadTopology(DeviceState& d, node::GpuInfo* info);
  void RegisterEvents();

  NvmlOptions options_;
  Clock* clock_;
  Logger* logger_;
  std::unique_ptr<nvml::Library> library_;
  bool is_initialized_ = false;
  node::SystemInfo system_info_;
  std::vector<DeviceState> devices_;
  // Set by WaitEvents (the events thread) on Xid 79; Sample (a GPU worker)
  // turns it into kLost. Sized once at Open.
  std::unique_ptr<std::atomic<bool>[]> fell_off_bus_;
  mutable Mutex errors_mu_;
  node::CallErrorCounts error_counts_ GUARDED_BY(errors_mu_);
  nvml::EventSet event_set_ = nullptr;
  bool has_event_set_ = false;
};

}  // namespace tarmac::gpu
