// SPDX-License-Identifier: Apache-2.0
#include "gpu/backend_config.h"

namespace tarmac::gpu {

void ReadGpuSection(ConfigSection& section, BackendOptions* out) {
  std::string backend = BackendKindName(out->kind);
  section.OneOf("backend", {"auto", "nvml", "sim"}, &backend);
  ParseBackendKind(backend, &out->kind);
  section.String("nvml_library", &out->nvml_library);
  section.String("scenario", &out->sim.scenario_path);
  section.String("sim_dir", &out->sim.dir);
  if (out->kind == BackendKind::kSim && out->sim.scenario_path.empty()) {
    section.Fail("scenario", "backend \"sim\" needs a scenario", "backend");
  }
}

}  // namespace tarmac::gpu
