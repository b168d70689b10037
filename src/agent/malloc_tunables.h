// SPDX-License-Identifier: Apache-2.0
//
// The one glibc malloc setting the agent needs that no call can make:
// the per-thread cache (tcache) off. Each of the agent's threads kept up to
// seven freed blocks of each small size; those blocks count as in use, so
// neither free-page release (agent/free_memory.h) nor coalescing reaches
// the pages they sit on, and over a soak with twenty console streams the
// agent's RSS crept by 0.6 MiB in 13 minutes while the same agent with the
// cache off stayed within 0.3 MiB of its first minute and 1 MiB lower
// (bench/README.md, "The soak"). The agent's allocations are few enough
// that the cache's speed does not show in its CPU.
//
// glibc reads the setting only from GLIBC_TUNABLES when a program starts,
// so tarmacd, first thing in main, executes itself again (same PID, same
// arguments and descriptors) with the setting added, unless the caller's
// GLIBC_TUNABLES already names the cache. The new image puts the caller's
// GLIBC_TUNABLES back before anything runs, so the processes the agent
// starts inherit what the agent was given.
//
// Thread safety: call from main before any thread starts (it changes the
// environment and may replace the process image).
#pragma once

#include <optional>
#include <string>

namespace tarmac::agent {

// The setting added.
inline constexpr char kMallocTunable[] = "glibc.malloc.tcache_count=0";
// Set while the agent executes itself again: the caller's GLIBC_TUNABLES
// ("" when it had none).
inline constexpr char kCallerTunablesVariable[] = "TARMACD_CALLER_GLIBC_TUNABLES";

// The GLIBC_TUNABLES to execute again with, given the caller's (null when
// unset), or nothing when the caller set the cache's size itself.
std::optional<std::string> TunablesWithCacheOff(const char* caller);

// After a re-execution: puts the caller's GLIBC_TUNABLES back and returns
// true. Otherwise, when the caller's tunables leave the cache on, executes
// /proc/self/exe again with it off (no return); returns false when it did
// not (the caller chose the cache's size, or the execution failed: the
// agent then runs with glibc's defaults).
bool ApplyMallocTunables(char** argv);

}  // namespace tarmac::agent
