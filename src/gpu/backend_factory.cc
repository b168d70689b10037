// SPDX-License-Identifier: Apache-2.0
#include "gpu/backend_factory.h"

#include <filesystem>

#include "common/enum_names.h"
#include "gpu/sim_backend.h"
#if TARMAC_WITH_NVML
#include "gpu/nvml_backend.h"
#endif

namespace tarmac::gpu {

namespace {
constexpr std::pair<BackendKind, const char*> kBackendNames[] = {
    {BackendKind::kAuto, "auto"}, {BackendKind::kNvml, "nvml"}, {BackendKind::kSim, "sim"}};
}  // namespace

bool ParseBackendKind(std::string_view text, BackendKind* kind) {
  return ParseEnum(kBackendNames, text, kind);
}

const char* BackendKindName(BackendKind kind) { return EnumName(kBackendNames, kind); }

EnvironmentChanges WorldEnvironment(const BackendOptions& options) {
  if (options.kind != BackendKind::kSim) return {};
  sim::WorldOptions world = options.sim;
  if (!sim::ResolveWorldOptions(&world).ok() || world.scenario_path.empty()) return {};
  std::error_code ec;
  std::filesystem::path scenario = std::filesystem::absolute(world.scenario_path, ec);
  std::filesystem::path dir = std::filesystem::absolute(world.dir, ec);
  return {{"TARMAC_SIM_SCENARIO", scenario.lexically_normal().string()},
          {"TARMAC_SIM_DIR", dir.lexically_normal().string()}};
}

Result<OpenedBackend> OpenBackend(const BackendOptions& options, Clock* clock, Logger* logger) {
  OpenedBackend opened;
  switch (options.kind) {
    case BackendKind::kSim:
      opened.backend = std::make_unique<SimBackend>(options.sim, clock);
      break;
    case BackendKind::kAuto:
    case BackendKind::kNvml:
#if TARMAC_WITH_NVML
      opened.backend = std::make_unique<NvmlBackend>(NvmlOptions{options.nvml_library}, clock, logger);
#else
      (void)logger;
      return Status::Unavailable("this tarmac was built without NVML support; use --backend sim");
#endif
      break;
  }
  Result<std::vector<node::GpuInfo>> gpus = opened.backend->Open();
  if (!gpus.ok()) {
    if (options.kind == BackendKind::kAuto && gpus.status().code() == StatusCode::kUnavailable) {
      return gpus.status().WithContext(
          "no NVIDIA driver found (install the driver, point --nvml-library at "
          "libnvidia-ml.so.1, or use --backend sim --scenario FILE)");
    }
    return gpus.status();
  }
  opened.gpus = std::move(gpus).value();
  return opened;
}

Status CheckBackendOptions(const BackendOptions& options) {
  if (options.kind != BackendKind::kSim) return Status::OK();
  sim::WorldOptions world = options.sim;
  if (Status resolved = sim::ResolveWorldOptions(&world); !resolved.ok()) return resolved;
  if (!world.scenario_path.empty()) return Status::OK();
  return Status::InvalidArgument(
      "--backend sim: no scenario: pass --scenario FILE or set TARMAC_SIM_SCENARIO (see "
      "examples/scenarios/)");
}

}  // namespace tarmac::gpu
