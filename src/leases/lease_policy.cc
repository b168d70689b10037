// SPDX-License-Identifier: Apache-2.0
#include "leases/lease_policy.h"

namespace tarmac::leases {

const char* IdleActionName(IdleAction a) {
  switch (a) {
    case IdleAction::kRelease:
      return "release";
    case IdleAction::kTerminate:
      return "terminate";
    case IdleAction::kWarn:
      break;
  }
  return "warn";
}

bool ParseIdleAction(std::string_view name, IdleAction* out) {
  if (name == "warn") *out = IdleAction::kWarn;
  else if (name == "release") *out = IdleAction::kRelease;
  else if (name == "terminate") *out = IdleAction::kTerminate;
  else return false;
  return true;
}

}  // namespace tarmac::leases
