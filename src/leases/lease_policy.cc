// SPDX-License-Identifier: Apache-2.0
#include "leases/lease_policy.h"

#include "common/enum_names.h"

namespace tarmac::leases {

namespace {
constexpr std::pair<IdleAction, const char*> kIdleActionNames[] = {
    {IdleAction::kWarn, "warn"}, {IdleAction::kRelease, "release"}, {IdleAction::kTerminate, "terminate"}};
constexpr std::pair<SlurmIdleAction, const char*> kSlurmIdleActionNames[] = {
    {SlurmIdleAction::kWarn, "warn"},
    {SlurmIdleAction::kRequeue, "requeue"},
    {SlurmIdleAction::kCancel, "cancel"}};
}  // namespace

const char* SlurmIdleActionName(SlurmIdleAction a) { return EnumName(kSlurmIdleActionNames, a); }

bool ParseSlurmIdleAction(std::string_view name, SlurmIdleAction* out) {
  return ParseEnum(kSlurmIdleActionNames, name, out);
}

const char* IdleActionName(IdleAction a) { return EnumName(kIdleActionNames, a); }

bool ParseIdleAction(std::string_view name, IdleAction* out) {
  return ParseEnum(kIdleActionNames, name, out);
}

}  // namespace tarmac::leases
