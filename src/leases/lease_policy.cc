// SPDX-License-Identifier: Apache-2.0
#include "leases/lease_policy.h"

#include "common/enum_names.h"

namespace tarmac::leases {

namespace {
constexpr std::pair<IdleAction, const char*> kIdleActionNames[] = {
    {IdleAction::kWarn, "warn"}, {IdleAction::kRelease, "release"}, {IdleAction::kTerminate, "terminate"}};
}  // namespace

const char* IdleActionName(IdleAction a) { return EnumName(kIdleActionNames, a); }

bool ParseIdleAction(std::string_view name, IdleAction* out) { return ParseEnum(kIdleActionNames, name, out); }

}  // namespace tarmac::leases
