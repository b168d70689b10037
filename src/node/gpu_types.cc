// SPDX-License-Identifier: Apache-2.0
#include "node/gpu_types.h"

#include "common/enum_names.h"

namespace tarmac::node {
namespace {

// The first row of each is what an unknown name reads as.
constexpr std::pair<GpuHealth, const char*> kHealthNames[] = {
    {GpuHealth::kError, "error"},
    {GpuHealth::kOk, "ok"},
    {GpuHealth::kLost, "lost"},
    {GpuHealth::kNoPermission, "no_permission"},
    {GpuHealth::kUnresponsive, "unresponsive"},
    {GpuHealth::kDriverNotLoaded, "driver_not_loaded"},
};
constexpr std::pair<ProcessType, const char*> kProcessTypeNames[] = {
    {ProcessType::kCompute, "compute"},
    {ProcessType::kGraphics, "graphics"},
    {ProcessType::kComputeAndGraphics, "compute+graphics"},
};

}  // namespace

const char* GpuHealthName(GpuHealth health) { return EnumName(kHealthNames, health); }

GpuHealth GpuHealthNamed(std::string_view name) {
  GpuHealth health = kHealthNames[0].first;
  ParseEnum(kHealthNames, name, &health);
  return health;
}

const char* ProcessTypeName(ProcessType type) { return EnumName(kProcessTypeNames, type); }

ProcessType ProcessTypeNamed(std::string_view name) {
  ProcessType type = kProcessTypeNames[0].first;
  ParseEnum(kProcessTypeNames, name, &type);
  return type;
}

}  // namespace tarmac::node
