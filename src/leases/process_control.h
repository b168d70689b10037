// SPDX-License-Identifier: Apache-2.0
//
// The agent's hands on processes: who a PID is now, signalling a process
// only if it is still the one the agent verified, and finding a lease's
// processes. A process is named by PID and start time (sched::ProcessRef),
// so a PID reused by a new process is never signalled: Signal opens a pidfd
// (pidfd_open(2)) first, re-reads the owner and start time through /proc,
// and signals through the pidfd, which cannot reach a later process.
//
// ProcessControl is the seam: tests substitute their own.
// Thread safety: ProcProcessControl is stateless and thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "sched/lease_book.h"

namespace tarmac::leases {

struct ProcessIdentity {
  int64_t pid = 0;
  int64_t uid = -1;  // Owner of /proc/<pid> (effective uid).
  int64_t start_ticks = 0;
  int64_t parent_pid = 0;
  std::string name;  // comm
};

// The environment variable that marks a lease's processes: the lease's
// token, random per lease, so that no other lease (of another agent, or
// from before the state was reset) can match. `tarmac run` and `tarmac
// shell` set it (with TARMAC_LEASE_ID, the id users see); children inherit
// it.
inline constexpr const char* kLeaseTokenEnv = "TARMAC_LEASE_TOKEN";

class ProcessControl {
 public:
  virtual ~ProcessControl() = default;
  // Who `pid` is now; empty when no such process.
  virtual std::optional<ProcessIdentity> Identify(int64_t pid) = 0;
  // Sends `signal` to `ref` if it still runs with that start time and, when
  // `uid` >= 0, that owner. kNotFound when it is gone or its PID now names
  // another process; kPermissionDenied when the owner differs.
  virtual Status Signal(const sched::ProcessRef& ref, int64_t uid, int signal) = 0;
  // Running processes of `uid` whose environment carries
  // kLeaseTokenEnv=<token> and that started at or after `min_start_ticks`.
  virtual std::vector<ProcessIdentity> LeaseProcesses(const std::string& token, int64_t uid,
                                                      int64_t min_start_ticks) = 0;
};

// The real thing, over `proc_root` ("/proc").
std::unique_ptr<ProcessControl> MakeProcessControl(std::string proc_root = "/proc");

}  // namespace tarmac::leases
