// SPDX-License-Identifier: Apache-2.0
//
// Exit codes shared by `tarmac` and `tarmacd` (documented in `tarmac --help`
// and docs/cli.md), and the one mapping from a Status to them.
#pragma once

#include "common/status.h"

namespace tarmac {

inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitNoDriver = 3;
inline constexpr int kExitNoAgent = 69;       // The agent is not reachable or did not answer (EX_UNAVAILABLE).
inline constexpr int kExitStorage = 74;       // The agent could not save the change, so made none (EX_IOERR).
inline constexpr int kExitNoFit = 75;         // --no-wait and no GPUs fit now (EX_TEMPFAIL).
inline constexpr int kExitNotPermitted = 77;  // Another user's lease or process (EX_NOPERM).

// What to check when the agent does not answer.
inline constexpr const char* kAgentHint =
    "tarmac: is the agent running? (systemctl status tarmac; --socket or TARMAC_SOCKET names its socket)";

// Prints "tarmac: <message>" to stderr (when not ok) and returns the exit
// code: 2 for kInvalidArgument, 3 for kUnavailable (no driver), 69 for
// kDeadlineExceeded (the agent did not answer, with kAgentHint), else 1.
int ExitWith(const Status& status);

}  // namespace tarmac
