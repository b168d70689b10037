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
inline constexpr int kExitNoAgent = 69;  // The agent is not reachable or did not answer (EX_UNAVAILABLE).
inline constexpr int kExitStorage = 74;  // The agent could not save the change, so made none (EX_IOERR).
inline constexpr int kExitNoFit = 75;    // --no-wait and no GPUs fit now (EX_TEMPFAIL).
inline constexpr int kExitNotPermitted = 77;  // Another user's lease or process (EX_NOPERM).
inline constexpr int kExitTimedOut =
    124;  // tarmac run: the command ran out of its --max-time (as timeout(1)).

// What to check when the agent does not answer.
inline constexpr const char* kAgentHint =
    "tarmac: is the agent running? (systemctl status tarmac; --socket or TARMAC_SOCKET names its socket)";

// What a command needed when it failed: it decides what "unavailable"
// means, the one code the two kinds of command read differently.
enum class Needed {
  kGpus,   // Reads the GPUs (through the agent, else the driver): unavailable is no driver (3).
  kAgent,  // Asks the agent to change or list leases: unavailable is no agent (69).
};

// The one table from a Status to an exit code (exit_codes.cc): 2 for
// kInvalidArgument; 69 for kDeadlineExceeded (the agent did not answer);
// reading the GPUs, 3 for kUnavailable (no driver) and 1 for the rest;
// asking the agent, 69 for kUnavailable and kFailedPrecondition (no agent),
// 74 for kIOError (it could not save), 75 for kResourceExhausted, 77 for
// kPermissionDenied, 1 for the rest.
int ExitCodeFor(StatusCode code, Needed needed);
// Whether that exit code should be followed by kAgentHint.
bool IsNoAgent(int exit_code);

// Prints "tarmac: <message>" to stderr (when not ok), and kAgentHint after
// it when no agent answered, and returns ExitCodeFor(status, kGpus).
int ExitWith(const Status& status);

}  // namespace tarmac
