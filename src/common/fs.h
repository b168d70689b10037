// SPDX-License-Identifier: Apache-2.0
//
// Small filesystem helpers that return Status instead of throwing.
#pragma once

#include <string>

#include "common/status.h"

namespace tarmac {

// Creates `path` and its missing parents (mode 0755), like `mkdir -p`.
// kIOError naming the directory that could not be created.
Status MakeDirs(const std::string& path);

// The folder part of `path` ("/a/b" for "/a/b/c"); empty when it has none
// (or is "/").
std::string Dirname(const std::string& path);

}  // namespace tarmac
