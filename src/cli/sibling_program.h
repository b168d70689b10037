// SPDX-License-Identifier: Apache-2.0
//
// Commands that are programs of their own, installed next to tarmac
// (tarmacd for `tarmac agent`, tarmac-fleet for `tarmac fleet`), so that
// tarmac stays small for the one-shot read commands.
#pragma once

#include <string>
#include <vector>

namespace tarmac::cli {

// Replaces this process with `program` from tarmac's own folder (or, as
// installed, ../libexec/tarmac beside it), given
// `argv` (argv[0] included): same PID, environment and notify socket.
// Returns only on failure: the exit code, after saying what was missing.
int ExecSibling(const std::string& program, std::vector<std::string> argv);

// What `program --completion-entries` prints (cli/completion.h), run from
// where ExecSibling finds it; empty when it cannot be run or fails.
std::string SiblingCompletionEntries(const std::string& program);

}  // namespace tarmac::cli
