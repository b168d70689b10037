// SPDX-License-Identifier: Apache-2.0
//
// This process's environment, read and handed on to a program it starts.
// Built before fork (the child of a threaded process only execs).
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace tarmac {

// Variables to set in a child's environment, in order.
using EnvironmentChanges = std::vector<std::pair<std::string, std::string>>;

// This process's environment as a map (a later duplicate name wins).
std::map<std::string, std::string> CurrentEnvironment();

// This process's environment with `set` in place of the same names:
// "NAME=value" strings, the unchanged ones first, then `set` in its order.
std::vector<std::string> EnvironmentWith(const EnvironmentChanges& set);

// execve's envp over `strings` (which must outlive it), NUL-terminated.
std::vector<char*> EnvironmentPointers(std::vector<std::string>& strings);

}  // namespace tarmac
