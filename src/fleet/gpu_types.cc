// SPDX-License-Identifier: Apache-2.0
#include "fleet/gpu_types.h"

namespace tarmac::fleet {

const char* GpuHealthName(GpuHealth health) {
  switch (health) {
    case GpuHealth::kOk: return "ok";
    case GpuHealth::kLost: return "lost";
    case GpuHealth::kNoPermission: return "no_permission";
    case GpuHealth::kUnresponsive: return "unresponsive";
    case GpuHealth::kDriverNotLoaded: return "driver_not_loaded";
    case GpuHealth::kError: return "error";
  }
  return "error";
}

const char* ProcessTypeName(ProcessType type) {
  switch (type) {
    case ProcessType::kCompute: return "compute";
    case ProcessType::kGraphics: return "graphics";
    case ProcessType::kComputeAndGraphics: return "compute+graphics";
  }
  return "compute";
}

}  // namespace tarmac::fleet
