// SPDX-License-Identifier: Apache-2.0
#include "common/exit_codes.h"

#include <cstdio>

#include "common/terminal_text.h"

namespace tarmac {

namespace {

// One row per status a command may end with: its exit code for a command
// that reads the GPUs, and for one that asks the agent about leases.
struct ExitRow {
  StatusCode code;
  int reading_gpus;
  int asking_agent;
};
constexpr ExitRow kExitTable[] = {
    {StatusCode::kOk, kExitOk, kExitOk},
    {StatusCode::kInvalidArgument, kExitUsage, kExitUsage},
    {StatusCode::kUnavailable, kExitNoDriver, kExitNoAgent},      // No driver; no agent (or it is busy).
    {StatusCode::kFailedPrecondition, kExitError, kExitNoAgent},  // -; no agent on the socket.
    {StatusCode::kDeadlineExceeded, kExitNoAgent, kExitNoAgent},  // The agent did not answer in time.
    {StatusCode::kIOError, kExitError, kExitStorage},          // A file unreadable; the agent could not save.
    {StatusCode::kResourceExhausted, kExitError, kExitNoFit},  // pick: no GPU fits; --no-wait: none now.
    {StatusCode::kPermissionDenied, kExitError, kExitNotPermitted},  // -; another user's lease or process.
};

}  // namespace

int ExitCodeFor(StatusCode code, Needed needed) {
  for (const ExitRow& row : kExitTable) {
    if (row.code == code) return needed == Needed::kAgent ? row.asking_agent : row.reading_gpus;
  }
  return kExitError;
}

bool IsNoAgent(int exit_code) { return exit_code == kExitNoAgent; }

int ExitWith(const Status& status) {
  if (status.ok()) return kExitOk;
  std::fprintf(stderr, "tarmac: %s\n", ForTerminalLines(status.message()).c_str());
  int code = ExitCodeFor(status.code(), Needed::kGpus);
  if (IsNoAgent(code)) std::fprintf(stderr, "%s\n", kAgentHint);
  return code;
}

}  // namespace tarmac
