// SPDX-License-Identifier: Apache-2.0
//
// The one way tarmac opens a file it does not own (docs/security.md): a
// file in a user's folder, /proc of a user's process, a host tree mounted
// from elsewhere, a config or scenario an operator names.
//
//  - open(2) with O_NONBLOCK | O_CLOEXEC, and O_NOFOLLOW unless the caller
//    allows a link as the last component (never for a path inside a folder
//    a user can write): a FIFO, a socket or a device never blocks the open,
//    and a symbolic link planted at the path is refused (ELOOP).
//  - fstat(2) on the open descriptor must say regular file: what is read is
//    what was checked, with no window between a stat and the open.
//  - Reads are bounded (`max_bytes`); a file that keeps growing is cut there.
//
// Callers read without holding a lock that others wait for: the bound and
// the non-blocking open keep one read short, but a file on a hung network
// mount still takes what the mount takes.
//
// Thread-safe (no state).
#pragma once

#include <cstddef>
#include <string>

#include "common/result.h"

namespace tarmac {

struct ForeignFileOptions {
  size_t max_bytes = size_t{1} << 20;
  // Allow a symbolic link as the last component (an operator's config
  // under /etc managed by a tool that links files). Never for a path in a
  // folder a user can write.
  bool follow_final_link = false;
};

// An open descriptor of the regular file at `path`, read-only. The caller
// closes it. kNotFound when absent; kPermissionDenied when refused;
// kInvalidArgument when it is a link (without follow_final_link), a FIFO, a
// socket, a device or a directory, naming what it is.
Result<int> OpenForeignFile(const std::string& path, const ForeignFileOptions& options = {});

// The whole file at `path` (at most options.max_bytes), opened as above.
Result<std::string> ReadForeignFile(const std::string& path, const ForeignFileOptions& options = {});

// What a file mode names, for messages ("a FIFO", "a directory").
std::string FileKindName(unsigned mode);

}  // namespace tarmac
