// SPDX-License-Identifier: Apache-2.0
//
// A pidfd: a file descriptor that names one process instance (Linux 5.3
// and later). It is readable (poll POLLIN) once the process has exited,
// and a signal sent through it cannot reach another process that reused
// the PID.
#pragma once

#include <cstdint>

namespace tarmac {

// A pidfd for process `pid` (close it with close(2)), or -1 with errno set:
// ESRCH when no such process is left, ENOSYS where the kernel (or the
// headers the build saw) has no pidfds.
int PidfdOpen(int64_t pid);

}  // namespace tarmac
