// SPDX-License-Identifier: Apache-2.0
#include "common/exit_codes.h"

#include <cstdio>

namespace tarmac {

int ExitWith(const Status& status) {
  if (status.ok()) return kExitOk;
  std::fprintf(stderr, "tarmac: %s\n", status.message().c_str());
  switch (status.code()) {
    case StatusCode::kInvalidArgument:
      return kExitUsage;
    case StatusCode::kUnavailable:
      return kExitNoDriver;
    case StatusCode::kDeadlineExceeded:
      std::fprintf(stderr, "%s\n", kAgentHint);
      return kExitNoAgent;
    default:
      return kExitError;
  }
}

}  // namespace tarmac
