// SPDX-License-Identifier: Apache-2.0
//
// NvmlBackend::Open: the driver and each GPU as found at start (identity,
// limits, topology), and the event set the events thread waits on.
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "common/cpu_list.h"
#include "common/proc_files.h"
#include "gpu/nvml_backend.h"
#include "gpu/nvml_text.h"

namespace tarmac::gpu {

using nvml::Return;
using nvml_text::CString;

namespace {

// NUMA node of a discrete GPU from sysfs (NVML's own call answers only on
// platforms where GPUs are NUMA nodes).
std::optional<int> NumaNodeFromSysfs(const std::string& nvml_bus_id) {
  // NVML "00000000:18:00.0" -> sysfs "0000:18:00.0", lower case.
  if (nvml_bus_id.size() < 12) return std::nullopt;
  std::string bus = nvml_bus_id.substr(nvml_bus_id.size() - 12);
  for (char& c : bus) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::string text;
  if (!ReadSmallFile("/sys/bus/pci/devices/" + bus + "/numa_node", &text, 32)) return std::nullopt;
  char* end = nullptr;
  long node = std::strtol(text.c_str(), &end, 10);
  if (end == text.c_str() || node < 0 || node > 4096) return std::nullopt;
  return static_cast<int>(node);
}

}  // namespace

Result<std::vector<node::GpuInfo>> NvmlBackend::Open() {
  Status s = InitLibrary();
  if (!s.ok()) return s;
  const nvml::Api& api = library_->api();
  system_info_.library_path = library_->path();
  ReadSystemInfo();

  unsigned count = 0;
  Return r = api.DeviceGetCountV2(&count);
  if (r != nvml::kSuccess) {
    return Status::Unavailable(fmt::format("nvml: nvmlDeviceGetCount_v2: {}", library_->ErrorText(r)));
  }
  std::vector<node::GpuInfo> gpus;
  devices_.assign(count, DeviceState{});
  fell_off_bus_ = std::make_unique<std::atomic<bool>[]>(count);
  for (unsigned i = 0; i < count; ++i) {
    DeviceState& d = devices_[i];
    int index = static_cast<int>(i);
    node::GpuInfo info;
    info.index = index;
    r = api.DeviceGetHandleByIndexV2(i, &d.handle);
    if (r != nvml::kSuccess) {
      d.health = r == nvml::kErrorNoPermission ? node::GpuHealth::kNoPermission
                 : r == nvml::kErrorGpuIsLost  ? node::GpuHealth::kLost
                                               : node::GpuHealth::kError;
      d.error = fmt::format("nvml: nvmlDeviceGetHandleByIndex_v2(gpu {}): {}", i, library_->ErrorText(r));
      info.health = d.health;
      info.error = d.error;
      gpus.push_back(std::move(info));
      continue;
    }
    ReadIdentity(d, index, &info);
    ReadLimits(d, &info);
    ReadTopology(d, &info);
    info.health = d.health;
    info.error = d.error;
    gpus.push_back(std::move(info));
  }

  RegisterEvents();
  return gpus;
}

void NvmlBackend::ReadSystemInfo() {
  const nvml::Api& api = library_->api();
  char buf[nvml::kSystemDriverVersionBufferSize] = {};
  if (api.SystemGetDriverVersion != nullptr &&
      api.SystemGetDriverVersion(buf, sizeof buf) == nvml::kSuccess) {
    system_info_.driver_version = CString(buf, sizeof buf);
  }
  if (api.SystemGetNVMLVersion != nullptr && api.SystemGetNVMLVersion(buf, sizeof buf) == nvml::kSuccess) {
    system_info_.nvml_version = CString(buf, sizeof buf);
  }
  int cuda = 0;
  if (api.SystemGetCudaDriverVersion != nullptr && api.SystemGetCudaDriverVersion(&cuda) == nvml::kSuccess) {
    system_info_.cuda_driver_version = cuda;
  }
}

// UUID, name, serial and PCI bus id.
void NvmlBackend::ReadIdentity(DeviceState& d, int index, node::GpuInfo* out) {
  const nvml::Api& api = library_->api();
  node::GpuInfo& info = *out;
  char text[nvml::kDeviceNameBufferSize] = {};
  if (api.DeviceGetUUID != nullptr && Check(d, index, NvmlField::kCount, "nvmlDeviceGetUUID",
                                            api.DeviceGetUUID(d.handle, text, sizeof text))) {
    info.uuid = CString(text, sizeof text);
  }
  if (api.DeviceGetName != nullptr && Check(d, index, NvmlField::kCount, "nvmlDeviceGetName",
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
      Check(d, index, NvmlField::kCount, "nvmlDeviceGetPciInfo_v3", api.DeviceGetPciInfoV3(d.handle, &pci))) {
    info.pci_bus_id = CString(pci.busId, sizeof pci.busId);
  }
}

// What the board can do: power, clocks, PCIe link, modes, thresholds, memory.
void NvmlBackend::ReadLimits(DeviceState& d, node::GpuInfo* out) {
  const nvml::Api& api = library_->api();
  node::GpuInfo& info = *out;
  unsigned value = 0;
  if (api.DeviceGetMinorNumber != nullptr && api.DeviceGetMinorNumber(d.handle, &value) == nvml::kSuccess) {
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
    info.is_mig_pending = pending != current;
    d.is_mig_enabled = current == 1;
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
}

// Where it sits: NUMA node, CPU affinity, NVLink peers.
void NvmlBackend::ReadTopology(DeviceState& d, node::GpuInfo* out) {
  const nvml::Api& api = library_->api();
  node::GpuInfo& info = *out;
  unsigned value = 0;
  if (api.DeviceGetNumaNodeId != nullptr && api.DeviceGetNumaNodeId(d.handle, &value) == nvml::kSuccess) {
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
      if (active != 1 || api.DeviceGetNvLinkRemotePciInfoV2(d.handle, link, &peer) != nvml::kSuccess)
        continue;
      std::string bus = CString(peer.busId, sizeof peer.busId);
      if (std::find(info.nvlink_peer_bus_ids.begin(), info.nvlink_peer_bus_ids.end(), bus) ==
          info.nvlink_peer_bus_ids.end()) {
        info.nvlink_peer_bus_ids.push_back(bus);
      }
    }
  }
}

void NvmlBackend::RegisterEvents() {
  const nvml::Api& api = library_->api();
  if (api.EventSetCreate != nullptr && api.DeviceRegisterEvents != nullptr &&
      api.EventSetCreate(&event_set_) == nvml::kSuccess) {
    has_event_set_ = true;
    for (size_t i = 0; i < devices_.size(); ++i) {
      if (devices_[i].handle == nullptr) continue;
      // Registering an unsupported type registers nothing, so ask first.
      unsigned long long wanted =
          nvml::kEventXidCriticalError | nvml::kEventDoubleBitEccError | nvml::kEventMigConfigChange;
      unsigned long long supported = 0;
      if (api.DeviceGetSupportedEventTypes != nullptr &&
          api.DeviceGetSupportedEventTypes(devices_[i].handle, &supported) == nvml::kSuccess) {
        wanted &= supported;
      }
      if (wanted != 0) api.DeviceRegisterEvents(devices_[i].handle, wanted, event_set_);
    }
  }
}

}  // namespace tarmac::gpu
