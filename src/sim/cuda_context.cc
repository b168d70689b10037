// SPDX-License-Identifier: Apache-2.0
#include "sim/cuda_context.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string_view>

#include "common/units.h"
#include "nvidia/vendor_facts.h"
#include "sim/visible_devices.h"

namespace tarmac::sim {

Result<CudaDevices> VisibleDevices(World& world) {
  const Scenario& scenario = world.scenario();
  std::shared_ptr<const WorldState> state = world.State();
  std::vector<std::string> uuids;                      // GPUs by index, then every MIG instance.
  std::vector<std::pair<int, std::string>> instances;  // (parent, MIG UUID) after the GPUs.
  for (const GpuSpec& g : scenario.gpus) uuids.push_back(g.uuid);
  for (size_t i = 0; i < state->gpus.size(); ++i) {
    for (const MigInstanceState& m : state->gpus[i].mig_instances) {
      uuids.push_back(m.spec->uuid);
      instances.emplace_back(static_cast<int>(i), m.spec->uuid);
    }
  }
  const char* env = std::getenv(std::string(nvidia::kVisibleDevicesVariable).c_str());
  std::optional<std::string_view> visible;
  if (env != nullptr) visible = env;
  CudaDevices devices;
  size_t gpu_count = scenario.gpus.size();
  for (int index : ParseCudaVisibleDevices(visible, uuids, gpu_count)) {
    size_t i = static_cast<size_t>(index);
    if (i < gpu_count) {
      if (!scenario.gpus[i].is_mig_enabled) devices.gpus.push_back(index);
      continue;
    }
    const auto& [parent, uuid] = instances[i - gpu_count];
    if (std::find(devices.gpus.begin(), devices.gpus.end(), parent) == devices.gpus.end())
      devices.gpus.push_back(parent);
    devices.mig_uuids.push_back(uuid);
  }
  if (devices.gpus.empty()) {
    return Status::FailedPrecondition(
        "CUDA error: no CUDA-capable device is detected (check CUDA_VISIBLE_DEVICES)");
  }
  return devices;
}

Status CheckMemoryFits(const WorldState& state, const CudaDevices& devices, int64_t bytes) {
  if (!state.is_driver_loaded) {
    return Status::FailedPrecondition("CUDA error: CUDA driver version is insufficient (driver not loaded)");
  }
  for (int gpu : devices.gpus) {
    const GpuState& g = state.gpus[static_cast<size_t>(gpu)];
    if (g.is_lost) return Status::FailedPrecondition(fmt::format("CUDA error: GPU {} is lost", gpu));
    if (!g.mig_instances.empty()) continue;
    if (bytes > g.memory_free_bytes) {
      return Status::ResourceExhausted(fmt::format("CUDA error: out of memory on GPU {} ({} free, asked {})",
                                                   gpu, FormatBytes(g.memory_free_bytes),
                                                   FormatBytes(bytes)));
    }
  }
  for (const std::string& uuid : devices.mig_uuids) {
    for (const GpuState& g : state.gpus) {
      for (const MigInstanceState& m : g.mig_instances) {
        if (m.spec->uuid != uuid) continue;
        int64_t free = m.spec->memory_total_bytes - m.memory_used_bytes;
        if (bytes > free) {
          return Status::ResourceExhausted(
              fmt::format("CUDA error: out of memory on {} ({}: {} free, asked {})", uuid, m.spec->profile,
                          FormatBytes(free), FormatBytes(bytes)));
        }
      }
    }
  }
  return Status::OK();
}

std::string CommandLineOf(int argc, char** argv) {
  std::string out;
  for (int i = 0; i < argc; ++i) out += (i ? " " : "") + std::string(argv[i]);
  return out;
}

}  // namespace tarmac::sim
