// SPDX-License-Identifier: Apache-2.0
//
// Small filesystem helpers that return Status instead of throwing.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/status.h"

namespace tarmac {

// Creates `path` and its missing parents (mode 0755), like `mkdir -p`.
// kIOError naming the directory that could not be created.
Status MakeDirs(const std::string& path);

// Which file a path names: device and inode. Two opens of one path name
// the same file when their FileIds are equal; a file deleted or replaced
// under a program changes it.
struct FileId {
  uint64_t device = 0;
  uint64_t inode = 0;
  bool operator==(const FileId&) const = default;
};
// The file at `path` now; empty when there is none.
std::optional<FileId> FileIdOf(const std::string& path);
// The file open as `fd`; empty when it cannot be read.
std::optional<FileId> FileIdOfFd(int fd);

// The folder part of `path` ("/a/b" for "/a/b/c"); empty when it has none
// (or is "/").
std::string Dirname(const std::string& path);

// Replaces the file at `path` with `text` whole or not at all: a temp file
// beside it, written and fsync()ed, then renamed over it. kIOError naming
// the file.
Status WriteFileAtomically(const std::string& path, const std::string& text, int mode = 0644);

}  // namespace tarmac
