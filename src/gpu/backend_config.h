// SPDX-License-Identifier: Apache-2.0
//
// [gpu] of the agent's config: which backend reads the GPUs. Keys (defaults
// in BackendOptions): backend ("auto", "nvml" or "sim"), nvml_library,
// scenario and sim_dir (for "sim", which needs a scenario).
#pragma once

#include "common/config_section.h"
#include "gpu/backend_factory.h"

namespace tarmac::gpu {

void ReadGpuSection(ConfigSection& section, BackendOptions* out);

}  // namespace tarmac::gpu
