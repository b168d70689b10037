// SPDX-License-Identifier: Apache-2.0
//
// NvmlBackend's MIG devices: each sample walks the GPU's MIG device slots
// (nvmlDeviceGetMaxMigDeviceCount, nvmlDeviceGetMigDeviceHandleByIndex;
// an empty slot is NOT_FOUND) and reads each instance's UUID, GPU and
// compute instance ids, profile (the tail of its name: "... MIG 1g.10gb")
// and memory. Walked every sample, so a layout changed while the agent runs
// shows at the next tick.
#include <fmt/format.h>

#include "gpu/nvml_backend.h"
#include "gpu/nvml_text.h"

namespace tarmac::gpu {

using nvml::Return;
using nvml_text::CString;

namespace {

// "NVIDIA H100 80GB HBM3 MIG 1g.10gb" -> "1g.10gb"; the name's last word
// when it is not of that form.
std::string ProfileOfName(const std::string& name) {
  size_t mig = name.rfind("MIG ");
  std::string tail = mig == std::string::npos ? name.substr(name.rfind(' ') + 1) : name.substr(mig + 4);
  return tail;
}

}  // namespace

void NvmlBackend::ReadMigInstances(DeviceState& d, int index, node::GpuSample* s) {
  const nvml::Api& api = library_->api();
  if (api.DeviceGetMaxMigDeviceCount == nullptr || api.DeviceGetMigDeviceHandleByIndex == nullptr ||
      !Supported(d, NvmlField::kMig) || d.health != node::GpuHealth::kOk) {
    return;
  }
  unsigned max_count = 0;
  if (!Check(d, index, NvmlField::kMig, "nvmlDeviceGetMaxMigDeviceCount",
             api.DeviceGetMaxMigDeviceCount(d.handle, &max_count))) {
    return;
  }
  bool is_complete = true;  // Every instance read: the list is the whole layout.
  for (unsigned slot = 0; slot < max_count; ++slot) {
    nvml::Device mig = nullptr;
    Return r = api.DeviceGetMigDeviceHandleByIndex(d.handle, slot, &mig);
    if (r == nvml::kErrorNotFound) continue;  // An empty slot.
    if (!Check(d, index, NvmlField::kMig, "nvmlDeviceGetMigDeviceHandleByIndex", r)) return;
    node::MigInstance m;
    char buf[nvml::kDeviceUuidBufferSize] = {};
    if (api.DeviceGetUUID == nullptr || api.DeviceGetUUID(mig, buf, sizeof buf) != nvml::kSuccess) {
      is_complete = false;
      continue;
    }
    m.uuid = CString(buf, sizeof buf);
    unsigned id = 0;
    if (api.DeviceGetGpuInstanceId == nullptr || api.DeviceGetGpuInstanceId(mig, &id) != nvml::kSuccess) {
      is_complete = false;
      continue;
    }
    m.gpu_instance_id = static_cast<int>(id);
    if (api.DeviceGetComputeInstanceId != nullptr &&
        api.DeviceGetComputeInstanceId(mig, &id) == nvml::kSuccess) {
      m.compute_instance_id = static_cast<int>(id);
    }
    char name[nvml::kDeviceNameBufferSize] = {};
    if (api.DeviceGetName != nullptr && api.DeviceGetName(mig, name, sizeof name) == nvml::kSuccess) {
      m.profile = ProfileOfName(CString(name, sizeof name));
    }
    nvml::MemoryV1 memory{};
    if (api.DeviceGetMemoryInfo != nullptr && api.DeviceGetMemoryInfo(mig, &memory) == nvml::kSuccess) {
      m.memory_total_bytes = static_cast<int64_t>(memory.total);
      m.memory_used_bytes = static_cast<int64_t>(memory.used);
    }
    s->mig_instances.push_back(std::move(m));
  }
  s->has_mig_instances = is_complete;
}

}  // namespace tarmac::gpu
