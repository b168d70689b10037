// SPDX-License-Identifier: Apache-2.0
#include "gpu/nvml_backend.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fmt/format.h>
#include <fstream>

#include "common/cpu_list.h"

namespace tarmac::gpu {
namespace {

using nvml::Return;

constexpr int kMaxListAttempts = 5;

std::string CString(const char* buf, size_t size) {
  return std::string(buf, strnlen(buf, size));
}

// NUMA node of a discrete GPU from sysfs (NVML's own call answers only on
// platforms where GPUs are NUMA nodes).
std::optional<int> NumaNodeFromSysfs(const std::string& nvml_bus_id) {
  // NVML "00000000:18:00.0" -> sysfs "0000:18:00.0", lower case.
  if (nvml_bus_id.size() < 12) return std::nullopt;
  std::string bus = nvml_bus_id.substr(nvml_bus_id.size() - 12);
  for (char& c : bus) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::ifstream in("/sys/bus/pci/devices/" + bus + "/numa_node");
  int node = -1;
  if (!(in >> node) || node < 0) return std::nullopt;
  return node;
}

}  // namespace

NvmlBackend::NvmlBackend(NvmlOptions options, Clock* clock, Logger* logger)
    : options_(std::move(options)), clock_(clock), logger_(logger) {}

NvmlBackend::~NvmlBackend() {
  if (library_ == nullptr) return;
  if (has_event_set_ && library_->api().EventSetFree != nullptr) {
    library_->api().EventSetFree(event_set_);
  }
  for (DeviceState& d : devices_) {
    for (nvml::GpmSample& sample : d.gpm_samples) {
      if (sample != nullptr && library_->api().GpmSampleFree != nullptr) library_->api().GpmSampleFree(sample);
      sample = nullptr;
    }
  }
  if (is_initialized_) library_->api().Shutdown();
}

Status NvmlBackend::InitLibrary() {
  std::string path = options_.library_path;
  if (path.empty()) {
    if (const char* env = std::getenv("TARMAC_NVML_LIBRARY"); env != nullptr) path = env;
  }
  Result<std::unique_ptr<nvml::Library>> library = nvml::Library::Load(path);
  if (!library.ok()) return library.status();
  library_ = std::move(library).value();
  logger_->Log(LogLevel::kInfo, "nvml: loaded {}", library_->path());
  const nvml::Api& api = library_->api();
  // NO_GPUS lets tarmac start on a node whose GPUs are absent or failing.
  const char* call = api.InitWithFlags != nullptr ? "nvmlInitWithFlags" : "nvmlInit_v2";
  Return r = api.InitWithFlags != nullptr ? api.InitWithFlags(nvml::kInitFlagNoGpus) : api.InitV2();
  if (r == nvml::kSuccess) {
    is_initialized_ = true;
    return Status::OK();
  }
  std::string what = fmt::format("nvml: {}: {}", call, library_->ErrorText(r));
  switch (r) {
    case nvml::kErrorDriverNotLoaded:
      return Status::Unavailable(what, "the NVIDIA kernel driver is not loaded");
    case nvml::kErrorLibRmVersionMismatch:
      return Status::Unavailable(
          what, "the NVML library and the kernel driver are different versions; reboot or "
                "reload the nvidia modules");
    case nvml::kErrorNoPermission:
      return Status::PermissionDenied(what, "no permission to open the NVIDIA devices");
    default:
      return Status::Unavailable(what);
  }
}

bool NvmlBackend::Check(DeviceState& d, int index, NvmlField field, const char* call, Return r) {
  if (r == nvml::kSuccess) return true;
  if (r == nvml::kErrorNotSupported || r == nvml::kErrorFunctionNotFound) {
    if (Supported(d, field)) {
      logger_->Log(LogLevel::kInfo, "nvml: {}(gpu {}): not supported; field left empty", call, index);
    }
    d.unsupported[static_cast<size_t>(field)] = true;
    return false;
  }
  int64_t count = 0;
  {
    MutexLock lock(&errors_mu_);
    count = error_counts_[fleet::CallError{call, nvml::ReturnName(r)}]++;
  }
  if (r == nvml::kErrorDriverNotLoaded) {
    d.health = fleet::GpuHealth::kDriverNotLoaded;
    d.error = fmt::format("nvml: {}(gpu {}): {}", call, index, library_->ErrorText(r));
    return false;
  }
  if (r == nvml::kErrorGpuIsLost) {
    d.health = fleet::GpuHealth::kLost;
    d.error = fmt::format("nvml: {}(gpu {}): {}", call, index, library_->ErrorText(r));
    return false;
  }
  if (count == 0) {
    logger_->Log(LogLevel::kWarning, "nvml: {}(gpu {}): {}", call, index, library_->ErrorText(r));
  }
  return false;
}

fleet::CallErrorCounts NvmlBackend::CallErrors() const {
  MutexLock lock(&errors_mu_);
  return error_counts_;
}

Result<std::vector<fleet::GpuInfo>> NvmlBackend::Open() {
  Status s = InitLibrary();
  if (!s.ok()) return s;
  const nvml::Api& api = library_->api();
  system_info_.library_path = library_->path();
  char buf[nvml::kSystemDriverVersionBufferSize] = {};
  if (api.SystemGetDriverVersion != nullptr &&
      api.SystemGetDriverVersion(buf, sizeof buf) == nvml::kSuccess) {
    system_info_.driver_version = CString(buf, sizeof buf);
  }
  if (api.SystemGetNVMLVersion != nullptr &&
      api.SystemGetNVMLVersion(buf, sizeof buf) == nvml::kSuccess) {
    system_info_.nvml_version = CString(buf, sizeof buf);
  }
  int cuda = 0;
  if (api.SystemGetCudaDriverVersion != nullptr &&
      api.SystemGetCudaDriverVersion(&cuda) == nvml::kSuccess) {
    system_info_.cuda_driver_version = cuda;
  }

  unsigned count = 0;
  Return r = api.DeviceGetCountV2(&count);
  if (r != nvml::kSuccess) {
    return Status::Unavailable(fmt::format("nvml: nvmlDeviceGetCount_v2: {}", library_->ErrorText(r)));
  }
  std::vector<fleet::GpuInfo> gpus;
  devices_.assign(count, DeviceState{});
  fell_off_bus_ = std::make_unique<std::atomic<bool>[]>(count);
  for (unsigned i = 0; i < count; ++i) {
    DeviceState& d = devices_[i];
    int index = static_cast<int>(i);
    fleet::GpuInfo info;
    info.index = index;
    r = api.DeviceGetHandleByIndexV2(i, &d.handle);
    if (r != nvml::kSuccess) {
      d.health = r == nvml::kErrorNoPermission ? fleet::GpuHealth::kNoPermission
                 : r == nvml::kErrorGpuIsLost  ? fleet::GpuHealth::kLost
                                               : fleet::GpuHealth::kError;
      d.error = fmt::format("nvml: nvmlDeviceGetHandleByIndex_v2(gpu {}): {}", i,
                            library_->ErrorText(r));
      info.health = d.health;
      info.error = d.error;
      gpus.push_back(std::move(info));
      continue;
    }
    char text[nvml::kDeviceNameBufferSize] = {};
    if (api.DeviceGetUUID != nullptr &&
        Check(d, index, NvmlField::kCount, "nvmlDeviceGetUUID",
              api.DeviceGetUUID(d.handle, text, sizeof text))) {
      info.uuid = CString(text, sizeof text);
    }
    if (api.DeviceGetName != nullptr &&
        Check(d, index, NvmlField::kCount, "nvmlDeviceGetName",
              api.DeviceGetName(d.handle, text, sizeof text))) {
      info.name = CString(text, sizeof text);
    }
    char serial[nvml::kDeviceSerialBufferSize] = {};
    if (api.DeviceGetSerial != nullptr &&
        api.DeviceGetSerial(d.handle, serial, sizeof serial) == nvml::kSuccess) {
      info.serial = CString(serial, sizeof serial);
    }
    nvml::PciInfo pci{};
    if (api.DeviceGetPciInfoV3 != nullptr &&
        Check(d, index, NvmlField::kCount, "nvmlDeviceGetPciInfo_v3",
              api.DeviceGetPciInfoV3(d.handle, &pci))) {
      info.pci_bus_id = CString(pci.busId, sizeof pci.busId);
    }
    unsigned value = 0;
    if (api.DeviceGetMinorNumber != nullptr &&
        api.DeviceGetMinorNumber(d.handle, &value) == nvml::kSuccess) {
      info.minor_number = static_cast<int>(value);
    }
    if (api.DeviceGetPowerManagementDefaultLimit != nullptr &&
        api.DeviceGetPowerManagementDefaultLimit(d.handle, &value) == nvml::kSuccess) {
      info.power_limit_default_milliwatts = value;
    }
    if (api.DeviceGetMaxClockInfo != nullptr &&
        api.DeviceGetMaxClockInfo(d.handle, nvml::kClockSm, &value) == nvml::kSuccess) {
      info.sm_clock_max_hertz = int64_t{value} * 1000000;
    }
    if (api.DeviceGetMaxClockInfo != nullptr &&
        api.DeviceGetMaxClockInfo(d.handle, nvml::kClockMem, &value) == nvml::kSuccess) {
      info.memory_clock_max_hertz = int64_t{value} * 1000000;
    }
    if (api.DeviceGetMaxPcieLinkGeneration != nullptr &&
        api.DeviceGetMaxPcieLinkGeneration(d.handle, &value) == nvml::kSuccess) {
      info.pcie_generation_max = static_cast<int>(value);
    }
    if (api.DeviceGetMaxPcieLinkWidth != nullptr &&
        api.DeviceGetMaxPcieLinkWidth(d.handle, &value) == nvml::kSuccess) {
      info.pcie_width_max = static_cast<int>(value);
    }
    if (api.DeviceGetNumaNodeId != nullptr &&
        api.DeviceGetNumaNodeId(d.handle, &value) == nvml::kSuccess) {
      info.numa_node = static_cast<int>(value);
    } else if (!info.pci_bus_id.empty()) {
      info.numa_node = NumaNodeFromSysfs(info.pci_bus_id);
    }
    if (api.DeviceGetCpuAffinity != nullptr) {
      std::vector<unsigned long> words(64, 0);
      if (api.DeviceGetCpuAffinity(d.handle, static_cast<unsigned>(words.size()), words.data()) ==
          nvml::kSuccess) {
        std::vector<uint64_t> mask(words.begin(), words.end());
        info.cpu_affinity = FormatCpuList(mask);
      }
    }
    if (api.DeviceGetNvLinkState != nullptr && api.DeviceGetNvLinkRemotePciInfoV2 != nullptr) {
      for (unsigned link = 0; link < nvml::kNvLinkMaxLinks; ++link) {
        int active = 0;
        if (api.DeviceGetNvLinkState(d.handle, link, &active) != nvml::kSuccess) break;  // No such link.
        nvml::PciInfo peer{};
        if (active != 1 || api.DeviceGetNvLinkRemotePciInfoV2(d.handle, link, &peer) != nvml::kSuccess) continue;
        std::string bus = CString(peer.busId, sizeof peer.busId);
        if (std::find(info.nvlink_peer_bus_ids.begin(), info.nvlink_peer_bus_ids.end(), bus) ==
            info.nvlink_peer_bus_ids.end()) {
          info.nvlink_peer_bus_ids.push_back(bus);
        }
      }
    }
    int mode = 0;
    if (api.DeviceGetPersistenceMode != nullptr &&
        api.DeviceGetPersistenceMode(d.handle, &mode) == nvml::kSuccess) {
      info.is_persistence_mode_enabled = mode == 1;
    }
    unsigned current = 0;
    unsigned pending = 0;
    if (api.DeviceGetMigMode != nullptr &&
        api.DeviceGetMigMode(d.handle, &current, &pending) == nvml::kSuccess) {
      info.is_mig_enabled = current == 1;
    }
    if (api.DeviceGetTemperatureThreshold != nullptr &&
        api.DeviceGetTemperatureThreshold(d.handle, nvml::kTemperatureThresholdSlowdown, &value) ==
            nvml::kSuccess) {
      info.temperature_slowdown_celsius = value;
    }
    // Total memory is static; v1 reports the same total as v2.
    nvml::MemoryV1 memory{};
    if (api.DeviceGetMemoryInfo != nullptr && api.DeviceGetMemoryInfo(d.handle, &memory) == nvml::kSuccess) {
      info.memory_total_bytes = static_cast<int64_t>(memory.total);
    }
    info.health = d.health;
    info.error = d.error;
    gpus.push_back(std::move(info));
  }

  if (api.EventSetCreate != nullptr && api.DeviceRegisterEvents != nullptr &&
      api.EventSetCreate(&event_set_) == nvml::kSuccess) {
    has_event_set_ = true;
    for (size_t i = 0; i < devices_.size(); ++i) {
      if (devices_[i].handle == nullptr) continue;
      // Registering an unsupported type registers nothing, so ask first.
      unsigned long long wanted = nvml::kEventXidCriticalError | nvml::kEventDoubleBitEccError;
      unsigned long long supported = 0;
      if (api.DeviceGetSupportedEventTypes != nullptr &&
          api.DeviceGetSupportedEventTypes(devices_[i].handle, &supported) == nvml::kSuccess) {
        wanted &= supported;
      }
      if (wanted != 0) api.DeviceRegisterEvents(devices_[i].handle, wanted, event_set_);
    }
  }
  return gpus;
}

Result<fleet::GpuSample> NvmlBackend::Sample(int index, unsigned tiers) {
  if (index < 0 || index >= static_cast<int>(devices_.size())) {
    return Status::InvalidArgument(fmt::format("nvml: no gpu {}", index));
  }
  DeviceState& d = devices_[static_cast<size_t>(index)];
  fleet::GpuSample s;
  s.index = index;
  s.taken_at = clock_->WallNow();
  if (fell_off_bus_[static_cast<size_t>(index)].load() && d.health == fleet::GpuHealth::kOk) {
    d.health = fleet::GpuHealth::kLost;
    d.error = fmt::format("nvml: gpu {}: Xid 79: GPU has fallen off the bus", index);
  }
  if (d.health == fleet::GpuHealth::kNoPermission || d.handle == nullptr) {
    s.health = d.health;
    s.error = d.error;
    return s;
  }
  if (d.health != fleet::GpuHealth::kOk) {  // Lost or driver gone: stays so until re-opened.
    s.health = d.health;
    s.error = d.error;
    return s;
  }
  if (tiers & fleet::kFastTier) ReadFast(d, index, &s);
  if ((tiers & fleet::kSlowTier) && d.health == fleet::GpuHealth::kOk) ReadSlow(d, index, &s);
  if (d.health != fleet::GpuHealth::kOk) {
    // The device went away mid-sample: report the state, not half readings.
    fleet::GpuSample lost;
    lost.index = index;
    lost.taken_at = s.taken_at;
    lost.health = d.health;
    lost.error = d.error;
    return lost;
  }
  return s;
}

void NvmlBackend::ReadFast(DeviceState& d, int index, fleet::GpuSample* s) {
  const nvml::Api& api = library_->api();
  nvml::Device h = d.handle;
  auto ok = [&](NvmlField field, const char* call, auto fn, auto... args) {
    if (fn == nullptr || !Supported(d, field) || d.health != fleet::GpuHealth::kOk) return false;
    return Check(d, index, field, call, fn(h, args...));
  };

  nvml::Utilization utilization{};
  if (ok(NvmlField::kUtilization, "nvmlDeviceGetUtilizationRates", api.DeviceGetUtilizationRates,
         &utilization)) {
    s->utilization_gpu_ratio = utilization.gpu / 100.0;
    s->utilization_memory_ratio = utilization.memory / 100.0;
  }

  // Memory: v2 separates reserved from used (as nvidia-smi shows it); v1's
  // `used` includes the reserve on R510+ drivers.
  nvml::MemoryV2 memory{};
  memory.version = nvml::kMemoryV2Version;
  bool has_memory = false;
  if (api.DeviceGetMemoryInfoV2 != nullptr && Supported(d, NvmlField::kMemoryV2) &&
      d.health == fleet::GpuHealth::kOk) {
    Return r = api.DeviceGetMemoryInfoV2(h, &memory);
    if (r == nvml::kErrorArgumentVersionMismatch) {
      logger_->Log(LogLevel::kInfo,
                   "nvml: nvmlDeviceGetMemoryInfo_v2(gpu {}): struct version {:#x} refused; "
                   "using nvmlDeviceGetMemoryInfo",
                   index, nvml::kMemoryV2Version);
      d.unsupported[static_cast<size_t>(NvmlField::kMemoryV2)] = true;
    } else if (Check(d, index, NvmlField::kMemoryV2, "nvmlDeviceGetMemoryInfo_v2", r)) {
      s->memory_total_bytes = static_cast<int64_t>(memory.total);
      s->memory_reserved_bytes = static_cast<int64_t>(memory.reserved);
      s->memory_used_bytes = static_cast<int64_t>(memory.used);
      s->memory_free_bytes = static_cast<int64_t>(memory.free);
      has_memory = true;
    }
  }
  nvml::MemoryV1 memory_v1{};
  if (!has_memory &&
      ok(NvmlField::kMemoryV1, "nvmlDeviceGetMemoryInfo", api.DeviceGetMemoryInfo, &memory_v1)) {
    s->memory_total_bytes = static_cast<int64_t>(memory_v1.total);
    s->memory_used_bytes = static_cast<int64_t>(memory_v1.used);
    s->memory_free_bytes = static_cast<int64_t>(memory_v1.free);
  }

  unsigned value = 0;
  if (ok(NvmlField::kPower, "nvmlDeviceGetPowerUsage", api.DeviceGetPowerUsage, &value)) {
    s->power_milliwatts = value;
  }
  if (ok(NvmlField::kPowerLimit, "nvmlDeviceGetEnforcedPowerLimit", api.DeviceGetEnforcedPowerLimit,
         &value)) {
    s->power_limit_milliwatts = value;
  }
  unsigned long long energy = 0;
  if (ok(NvmlField::kEnergy, "nvmlDeviceGetTotalEnergyConsumption",
         api.DeviceGetTotalEnergyConsumption, &energy)) {
    s->energy_millijoules = static_cast<int64_t>(energy);
  }

  nvml::TemperatureV1 temperature{};
  temperature.version = nvml::kTemperatureV1Version;
  temperature.sensorType = nvml::kTemperatureGpu;
  bool has_temperature = false;
  if (api.DeviceGetTemperatureV != nullptr && Supported(d, NvmlField::kTemperatureV) &&
      d.health == fleet::GpuHealth::kOk) {
    Return r = api.DeviceGetTemperatureV(h, &temperature);
    if (r == nvml::kErrorArgumentVersionMismatch) {
      d.unsupported[static_cast<size_t>(NvmlField::kTemperatureV)] = true;
    } else if (r == nvml::kErrorNotSupported) {
      // The sensor itself is absent: the old call will not do better.
      d.unsupported[static_cast<size_t>(NvmlField::kTemperatureV)] = true;
      d.unsupported[static_cast<size_t>(NvmlField::kTemperature)] = true;
    } else if (Check(d, index, NvmlField::kTemperatureV, "nvmlDeviceGetTemperatureV", r)) {
      s->temperature_celsius = temperature.temperature;
      has_temperature = true;
    }
  }
  if (!has_temperature && ok(NvmlField::kTemperature, "nvmlDeviceGetTemperature",
                             api.DeviceGetTemperature, nvml::kTemperatureGpu, &value)) {
    s->temperature_celsius = value;
  }

  if (ok(NvmlField::kSmClock, "nvmlDeviceGetClockInfo", api.DeviceGetClockInfo, nvml::kClockSm,
         &value)) {
    s->sm_clock_hertz = int64_t{value} * 1000000;
  }
  if (ok(NvmlField::kMemoryClock, "nvmlDeviceGetClockInfo", api.DeviceGetClockInfo,
         nvml::kClockMem, &value)) {
    s->memory_clock_hertz = int64_t{value} * 1000000;
  }

  unsigned long long reasons = 0;
  if (api.DeviceGetCurrentClocksEventReasons != nullptr) {
    if (ok(NvmlField::kClockEventReasons, "nvmlDeviceGetCurrentClocksEventReasons",
           api.DeviceGetCurrentClocksEventReasons, &reasons)) {
      s->clock_event_reasons = reasons;
    }
  } else if (ok(NvmlField::kThrottleReasons, "nvmlDeviceGetCurrentClocksThrottleReasons",
                api.DeviceGetCurrentClocksThrottleReasons, &reasons)) {
    s->clock_event_reasons = reasons;
  }

  int pstate = 0;
  if (ok(NvmlField::kPerformanceState, "nvmlDeviceGetPerformanceState",
         api.DeviceGetPerformanceState, &pstate) &&
      pstate != nvml::kPstateUnknown) {
    s->performance_state = pstate;
  }
  ReadProcesses(d, index, s);
  ReadGpm(d, index, s);
}

bool NvmlBackend::ReadProcessList(DeviceState& d, int index, bool is_graphics,
                                  std::vector<std::pair<int64_t, std::optional<int64_t>>>* out) {
  const nvml::Api& api = library_->api();
  using ListFn = Return (*)(nvml::Device, unsigned*, void*);
  ListFn fn = nullptr;
  const char* call = nullptr;
  size_t stride = sizeof(nvml::ProcessInfoV2);
  ListFn v3 = is_graphics ? api.DeviceGetGraphicsRunningProcessesV3 : api.DeviceGetComputeRunningProcessesV3;
  ListFn v2 = is_graphics ? api.DeviceGetGraphicsRunningProcessesV2 : api.DeviceGetComputeRunningProcessesV2;
  ListFn v1 = is_graphics ? api.DeviceGetGraphicsRunningProcesses : api.DeviceGetComputeRunningProcesses;
  if (v3 != nullptr) {
    fn = v3;
    call = is_graphics ? "nvmlDeviceGetGraphicsRunningProcesses_v3" : "nvmlDeviceGetComputeRunningProcesses_v3";
    // Drivers 535.43..535.86 wrote 32-byte entries from _v3; they are the
    // ones exporting ConfComputeMemSizeInfo without RunningProcessDetailList.
    if (api.DeviceGetConfComputeMemSizeInfo != nullptr && api.DeviceGetRunningProcessDetailList == nullptr) {
      stride = nvml::kProcessInfoCcStride;
    }
  } else if (v2 != nullptr) {
    fn = v2;
    call = is_graphics ? "nvmlDeviceGetGraphicsRunningProcesses_v2" : "nvmlDeviceGetComputeRunningProcesses_v2";
  } else if (v1 != nullptr) {
    fn = v1;
    call = is_graphics ? "nvmlDeviceGetGraphicsRunningProcesses" : "nvmlDeviceGetComputeRunningProcesses";
    stride = sizeof(nvml::ProcessInfoV1);
  }
  NvmlField field = is_graphics ? NvmlField::kGraphicsProcesses : NvmlField::kComputeProcesses;
  if (fn == nullptr || !Supported(d, field)) return false;

  // Size protocol: ask with count 0; INSUFFICIENT_SIZE gives the count;
  // retry with headroom, as processes may start between the calls.
  unsigned count = 0;
  Return r = fn(d.handle, &count, nullptr);
  if (r == nvml::kSuccess) return true;  // No processes.
  std::vector<unsigned char> buffer;
  for (int attempt = 0; attempt < kMaxListAttempts && r == nvml::kErrorInsufficientSize; ++attempt) {
    count = count * 2 + 5;
    buffer.assign(static_cast<size_t>(count) * stride, 0);
    r = fn(d.handle, &count, buffer.data());
  }
  if (!Check(d, index, field, call, r)) return false;
  for (unsigned i = 0; i < count; ++i) {
    const unsigned char* entry = buffer.data() + static_cast<size_t>(i) * stride;
    unsigned pid = 0;
    unsigned long long used = 0;
    std::memcpy(&pid, entry, sizeof pid);
    std::memcpy(&used, entry + 8, sizeof used);
    std::optional<int64_t> memory;
    if (used != nvml::kValueNotAvailableUll) memory = static_cast<int64_t>(used);
    out->emplace_back(pid, memory);
  }
  return true;
}

void NvmlBackend::ReadProcesses(DeviceState& d, int index, fleet::GpuSample* s) {
  std::vector<std::pair<int64_t, std::optional<int64_t>>> compute;
  std::vector<std::pair<int64_t, std::optional<int64_t>>> graphics;
  bool has_compute = ReadProcessList(d, index, false, &compute);
  bool has_graphics = ReadProcessList(d, index, true, &graphics);
  if (d.health != fleet::GpuHealth::kOk) return;
  s->has_processes = has_compute || has_graphics;
  // Merge by PID: a process with both contexts appears once.
  for (const auto& [pid, memory] : compute) {
    s->processes.push_back(fleet::GpuProcess{pid, fleet::ProcessType::kCompute, memory, std::nullopt});
  }
  for (const auto& [pid, memory] : graphics) {
    bool merged = false;
    for (fleet::GpuProcess& p : s->processes) {
      if (p.pid != pid) continue;
      p.type = fleet::ProcessType::kComputeAndGraphics;
      if (memory && (!p.used_memory_bytes || *memory > *p.used_memory_bytes)) p.used_memory_bytes = memory;
      merged = true;
    }
    if (!merged) s->processes.push_back(fleet::GpuProcess{pid, fleet::ProcessType::kGraphics, memory, std::nullopt});
  }
  std::sort(s->processes.begin(), s->processes.end(),
            [](const fleet::GpuProcess& a, const fleet::GpuProcess& b) { return a.pid < b.pid; });

  const nvml::Api& api = library_->api();
  if (api.DeviceGetProcessUtilization == nullptr || !Supported(d, NvmlField::kProcessUtilization) ||
      s->processes.empty()) {
    return;
  }
  // Ask only for samples newer than the last seen one; the first time, for
  // the last second (0 would return stale averages and dead PIDs).
  unsigned long long now_us = static_cast<unsigned long long>(
      std::chrono::duration_cast<std::chrono::microseconds>(s->taken_at.time_since_epoch()).count());
  unsigned long long last_seen =
      d.last_process_sample_us != 0 ? d.last_process_sample_us : now_us - 1000000;
  unsigned count = 0;
  Return r = api.DeviceGetProcessUtilization(d.handle, nullptr, &count, last_seen);
  std::vector<nvml::ProcessUtilizationSample> samples;
  if (r == nvml::kErrorInsufficientSize) {
    samples.resize(count + 5);
    count = static_cast<unsigned>(samples.size());
    r = api.DeviceGetProcessUtilization(d.handle, samples.data(), &count, last_seen);
  }
  // NOT_FOUND means no new samples: the processes did not compute.
  if (r != nvml::kErrorNotFound && r != nvml::kSuccess) {
    Check(d, index, NvmlField::kProcessUtilization, "nvmlDeviceGetProcessUtilization", r);
    return;
  }
  if (r == nvml::kSuccess) samples.resize(std::min<size_t>(count, samples.size()));
  if (r == nvml::kErrorNotFound) samples.clear();
  for (fleet::GpuProcess& p : s->processes) p.sm_utilization_ratio = 0.0;
  for (const nvml::ProcessUtilizationSample& sample : samples) {
    if (sample.smUtil > 100) continue;  // Garbage entries seen on some drivers.
    d.last_process_sample_us = std::max(d.last_process_sample_us, sample.timeStamp);
    for (fleet::GpuProcess& p : s->processes) {
      if (p.pid == sample.pid) p.sm_utilization_ratio = sample.smUtil / 100.0;
    }
  }
}

void NvmlBackend::ReadSlow(DeviceState& d, int index, fleet::GpuSample* s) {
  const nvml::Api& api = library_->api();
  nvml::Device h = d.handle;
  auto ok = [&](NvmlField field, const char* call, auto fn, auto... args) {
    if (fn == nullptr || !Supported(d, field) || d.health != fleet::GpuHealth::kOk) return false;
    return Check(d, index, field, call, fn(h, args...));
  };
  unsigned value = 0;
  if (ok(NvmlField::kFan, "nvmlDeviceGetFanSpeed", api.DeviceGetFanSpeed, &value)) {
    s->fan_speed_ratio = value / 100.0;
  }
  if (ok(NvmlField::kPcieGeneration, "nvmlDeviceGetCurrPcieLinkGeneration",
         api.DeviceGetCurrPcieLinkGeneration, &value)) {
    s->pcie_generation = static_cast<int>(value);
  }
  if (ok(NvmlField::kPcieWidth, "nvmlDeviceGetCurrPcieLinkWidth", api.DeviceGetCurrPcieLinkWidth,
         &value)) {
    s->pcie_width = static_cast<int>(value);
  }
  // PCIe traffic from the byte counters (field values), never from the
  // blocking 20 ms nvmlDeviceGetPcieThroughput.
  if (api.DeviceGetFieldValues != nullptr && Supported(d, NvmlField::kPcieCounters) &&
      d.health == fleet::GpuHealth::kOk) {
    nvml::FieldValue fields[2] = {};
    fields[0].fieldId = nvml::kFieldPcieCountTxBytes;
    fields[1].fieldId = nvml::kFieldPcieCountRxBytes;
    if (Check(d, index, NvmlField::kPcieCounters, "nvmlDeviceGetFieldValues",
              api.DeviceGetFieldValues(h, 2, fields))) {
      // Call-level success only means some entries were filled.
      if (fields[0].nvmlReturn == nvml::kSuccess) s->pcie_tx_bytes = static_cast<int64_t>(fields[0].value.ullVal);
      if (fields[1].nvmlReturn == nvml::kSuccess) s->pcie_rx_bytes = static_cast<int64_t>(fields[1].value.ullVal);
      if (fields[0].nvmlReturn == nvml::kErrorNotSupported &&
          fields[1].nvmlReturn == nvml::kErrorNotSupported) {
        d.unsupported[static_cast<size_t>(NvmlField::kPcieCounters)] = true;
      }
    }
  }
  unsigned long long count = 0;
  auto ecc = [&](int type, int counter, std::optional<int64_t>* out) {
    if (ok(NvmlField::kEcc, "nvmlDeviceGetTotalEccErrors", api.DeviceGetTotalEccErrors, type,
           counter, &count)) {
      *out = static_cast<int64_t>(count);
    }
  };
  ecc(nvml::kMemoryErrorCorrected, nvml::kEccCounterVolatile, &s->ecc.volatile_corrected);
  ecc(nvml::kMemoryErrorUncorrected, nvml::kEccCounterVolatile, &s->ecc.volatile_uncorrected);
  ecc(nvml::kMemoryErrorCorrected, nvml::kEccCounterAggregate, &s->ecc.aggregate_corrected);
  ecc(nvml::kMemoryErrorUncorrected, nvml::kEccCounterAggregate, &s->ecc.aggregate_uncorrected);

  unsigned corrected = 0, uncorrected = 0, pending = 0, failure = 0;
  if (ok(NvmlField::kRemappedRows, "nvmlDeviceGetRemappedRows", api.DeviceGetRemappedRows,
         &corrected, &uncorrected, &pending, &failure)) {
    s->remapped_rows = fleet::RemappedRows{corrected, uncorrected, pending != 0, failure != 0};
  }

  if (api.DeviceGetNvLinkState != nullptr && Supported(d, NvmlField::kNvLink)) {
    // Links are numbered densely; the first INVALID_ARGUMENT or
    // NOT_SUPPORTED past the last one ends the scan (probed once).
    unsigned limit = d.nvlink_count >= 0 ? static_cast<unsigned>(d.nvlink_count) : nvml::kNvLinkMaxLinks;
    for (unsigned link = 0; link < limit; ++link) {
      int active = 0;
      Return r = api.DeviceGetNvLinkState(h, link, &active);
      if (r != nvml::kSuccess) {
        if (r == nvml::kErrorGpuIsLost) Check(d, index, NvmlField::kNvLink, "nvmlDeviceGetNvLinkState", r);
        break;
      }
      s->nvlink_active.push_back(active == 1);
    }
    if (d.nvlink_count < 0) d.nvlink_count = static_cast<int>(s->nvlink_active.size());
  }
}

std::optional<double> NvmlBackend::RecentUtilization(int index, std::chrono::seconds window) {
  if (index < 0 || index >= static_cast<int>(devices_.size())) return std::nullopt;
  DeviceState& d = devices_[static_cast<size_t>(index)];
  const nvml::Api& api = library_->api();
  if (d.handle == nullptr || d.health != fleet::GpuHealth::kOk || api.DeviceGetSamples == nullptr ||
      !Supported(d, NvmlField::kSamples)) {
    return std::nullopt;
  }
  // Take the driver's whole buffer and keep the samples within `window` of
  // its newest one: anchored to the device's own sample clock.
  int value_type = 0;
  unsigned count = 0;
  Return r = api.DeviceGetSamples(d.handle, nvml::kSamplingGpuUtilization, 0, &value_type, &count, nullptr);
  if (r != nvml::kSuccess && r != nvml::kErrorInsufficientSize) {
    if (r != nvml::kErrorNotFound) Check(d, index, NvmlField::kSamples, "nvmlDeviceGetSamples", r);
    return std::nullopt;
  }
  if (count == 0) return std::nullopt;
  std::vector<nvml::Sample> samples(count);
  r = api.DeviceGetSamples(d.handle, nvml::kSamplingGpuUtilization, 0, &value_type, &count, samples.data());
  if (!Check(d, index, NvmlField::kSamples, "nvmlDeviceGetSamples", r) || count == 0) return std::nullopt;
  samples.resize(std::min<size_t>(count, samples.size()));
  unsigned long long newest = 0;
  for (const nvml::Sample& sample : samples) newest = std::max(newest, sample.timeStamp);
  unsigned long long window_us = static_cast<unsigned long long>(window.count()) * 1000000ULL;
  double sum = 0;
  int n = 0;
  for (const nvml::Sample& sample : samples) {
    if (newest - sample.timeStamp >= window_us) continue;
    double v = 0;
    switch (value_type) {
      case nvml::kValueTypeDouble: v = sample.sampleValue.dVal; break;
      case nvml::kValueTypeUnsignedInt: v = sample.sampleValue.uiVal; break;
      case nvml::kValueTypeUnsignedLong: v = static_cast<double>(sample.sampleValue.ulVal); break;
      case nvml::kValueTypeUnsignedLongLong: v = static_cast<double>(sample.sampleValue.ullVal); break;
      case nvml::kValueTypeSignedLongLong: v = static_cast<double>(sample.sampleValue.sllVal); break;
      case nvml::kValueTypeSignedInt: v = sample.sampleValue.siVal; break;
      default: continue;
    }
    sum += v;
    ++n;
  }
  if (n == 0) return std::nullopt;
  return sum / n / 100.0;
}

Result<std::vector<fleet::GpuEvent>> NvmlBackend::WaitEvents(std::chrono::milliseconds timeout) {
  std::vector<fleet::GpuEvent> events;
  if (!has_event_set_ || library_->api().EventSetWaitV2 == nullptr) {
    return Status::Unavailable("nvml: events are not supported by this driver");
  }
  unsigned wait_ms = static_cast<unsigned>(timeout.count());
  for (;;) {
    nvml::EventData data{};
    Return r = library_->api().EventSetWaitV2(event_set_, &data, wait_ms);
    if (r == nvml::kErrorTimeout) break;
    if (r != nvml::kSuccess) {
      if (events.empty()) {
        return Status::Unavailable(fmt::format("nvml: nvmlEventSetWait_v2: {}", library_->ErrorText(r)));
      }
      break;
    }
    fleet::GpuEvent e;
    e.gpu_index = -1;
    for (size_t i = 0; i < devices_.size(); ++i) {
      if (devices_[i].handle == data.device) e.gpu_index = static_cast<int>(i);
    }
    e.event_type = data.eventType;
    e.xid = static_cast<int64_t>(data.eventData);
    e.seen_at = clock_->WallNow();
    if (e.xid == 79 && e.gpu_index >= 0) fell_off_bus_[static_cast<size_t>(e.gpu_index)].store(true);
    events.push_back(e);
    wait_ms = 0;  // Drain what is queued without waiting again.
  }
  return events;
}

}  // namespace tarmac::gpu
