// SPDX-License-Identifier: Apache-2.0
//
// The one glibc malloc setting the agent needs that no call can make:
// the per-thread cache (tcache) off. Each of the agent's threads kept up to
// seven freed blocks of each small size; those blocks count as in use, so
// neither free-page release (agent/free_memory.h) nor coalescing reaches
// the pages they sit on, and over a soak with twenty console streams the
// agent's RSS crept with the cache on and stayed flat with it off (the
// figures: bench/README.md, "The soak"). The agent's allocations are few
// enough that the cache's speed does not show in its CPU.
//
// glibc reads the setting only from GLIBC_TUNABLES when a program starts,
// so tarmacd, first thing in main, executes itself again (same PID, same
// arguments and descriptors) with the setting added, unless the caller's
// GLIBC_TUNABLES already names the cache. The new image puts the caller's
// GLIBC_TUNABLES back before anything runs, so the processes the agent
// starts inherit what the agent was given.
//
// Two more settings are made with mallopt (SetMallocOptions), after the
// tunables:
// - two arenas (M_ARENA_MAX): glibc gives each thread that allocates an
//   arena of its own, up to eight per core, and keeps what was freed in
//   each: twenty open console streams (a worker thread each) grew the agent
//   several times more than with two arenas (bench/README.md);
// - blocks of 64 KiB and more mapped on their own (M_MMAP_THRESHOLD, fixed):
//   glibc's threshold starts at 128 KiB and rises to the largest block
//   freed, so each sample's large texts (the streams' batch, about 110 KiB
//   for 64 GPUs, a status answer, a metrics page) were carved from the heap
//   a little differently each time and the heap's touched pages crept up
//   with the soak; mapped, they go back whole when freed. (glibc maps a
//   block only when the heap's free room cannot hold it; the agent gives
//   that room back every ten seconds, agent/free_memory.h.) Side by side
//   with twenty streams each, the agent with the setting sat lower than the
//   same agent without it (bench/README.md, "The soak").
// A caller whose GLIBC_TUNABLES names one of these (arena_max,
// mmap_threshold) keeps their value.
//
// Thread safety: call from main before any thread starts (it changes the
// environment and may replace the process image).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

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

// True when the colon-separated GLIBC_TUNABLES list `tunables` (null:
// unset) sets `name` (e.g. "glibc.malloc.tcache_count").
bool NamesTunable(const char* tunables, std::string_view name);

// A mallopt setting and the tunable that sets the same.
struct MallocOption {
  int param = 0;  // M_ARENA_MAX, M_MMAP_THRESHOLD.
  int value = 0;
  const char* tunable = "";
};
inline constexpr int kMallocArenas = 2;
inline constexpr int kMmapThresholdBytes = 64 * 1024;

// The settings SetMallocOptions makes given the caller's GLIBC_TUNABLES:
// those whose tunable the caller named are left out.
std::vector<MallocOption> MallocOptionsFor(const char* caller_tunables);
// Makes them (mallopt). Call after ApplyMallocTunables.
void SetMallocOptions(const char* caller_tunables);

}  // namespace tarmac::agent
