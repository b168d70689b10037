// SPDX-License-Identifier: Apache-2.0
#include "sim/cuda_context.h"

#include <fmt/format.h>

#include <cstdlib>
#include <optional>
#include <string_view>

#include "common/units.h"
#include "sim/visible_devices.h"

namespace tarmac::sim {

Result<std::vector<int>> VisibleGpus(const World& world) {
  std::vector<std::string> uuids;
  for (const GpuSpec& g : world.scenario().gpus) uuids.push_back(g.uuid);
  const char* env = std::getenv("CUDA_VISIBLE_DEVICES");
  std::optional<std::string_view> visible;
  if (env != nullptr) visible = env;
  std::vector<int> gpus = ParseCudaVisibleDevices(visible, uuids);
  if (gpus.empty()) {
    return Status::FailedPrecondition("CUDA error: no CUDA-capable device is detected (check CUDA_VISIBLE_DEVICES)");
  }
  return gpus;
}

Status CheckMemoryFits(const WorldState& state, const std::vector<int>& gpus, int64_t bytes) {
  if (!state.is_driver_loaded) {
    return Status::FailedPrecondition("CUDA error: CUDA driver version is insufficient (driver not loaded)");
  }
  for (int gpu : gpus) {
    const GpuState& g = state.gpus[static_cast<size_t>(gpu)];
    if (g.is_lost) return Status::FailedPrecondition(fmt::format("CUDA error: GPU {} is lost", gpu));
    if (bytes > g.memory_free_bytes) {
      return Status::ResourceExhausted(fmt::format("CUDA error: out of memory on GPU {} ({} free, asked {})", gpu,
                                                   FormatBytes(g.memory_free_bytes), FormatBytes(bytes)));
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
