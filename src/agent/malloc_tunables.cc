// SPDX-License-Identifier: Apache-2.0
#include "agent/malloc_tunables.h"

#include <malloc.h>
#include <unistd.h>

#include <cstdlib>
#include <string_view>

#include "common/split.h"

namespace tarmac::agent {

namespace {

constexpr char kTunablesVariable[] = "GLIBC_TUNABLES";

// GLIBC_TUNABLES as the caller had it ("": unset).
void PutBackCallersTunables(const std::string& caller) {
  if (caller.empty()) {
    unsetenv(kTunablesVariable);
  } else {
    setenv(kTunablesVariable, caller.c_str(), 1);
  }
  unsetenv(kCallerTunablesVariable);
}

}  // namespace

bool NamesTunable(const char* tunables, std::string_view name) {
  if (tunables == nullptr) return false;
  // A colon-separated list of name=value.
  for (std::string_view entry : SplitAt(tunables, ':')) {
    if (entry.substr(0, entry.find('=')) == name) return true;
  }
  return false;
}

std::optional<std::string> TunablesWithCacheOff(const char* caller) {
  std::string_view tunable(kMallocTunable);
  if (caller == nullptr || *caller == '\0') return std::string(tunable);
  if (NamesTunable(caller, tunable.substr(0, tunable.find('=')))) return std::nullopt;
  return std::string(caller) + ":" + std::string(tunable);
}

std::vector<MallocOption> MallocOptionsFor(const char* caller_tunables) {
  std::vector<MallocOption> options;
  for (MallocOption o :
       {MallocOption{M_ARENA_MAX, kMallocArenas, "glibc.malloc.arena_max"},
        MallocOption{M_MMAP_THRESHOLD, kMmapThresholdBytes, "glibc.malloc.mmap_threshold"}}) {
    if (!NamesTunable(caller_tunables, o.tunable)) options.push_back(o);
  }
  return options;
}

void SetMallocOptions(const char* caller_tunables) {
  for (const MallocOption& o : MallocOptionsFor(caller_tunables)) mallopt(o.param, o.value);
}

bool ApplyMallocTunables(char** argv) {
  if (const char* saved = std::getenv(kCallerTunablesVariable); saved != nullptr) {
    PutBackCallersTunables(saved);
    return true;
  }
  const char* caller = std::getenv(kTunablesVariable);
  std::optional<std::string> tunables = TunablesWithCacheOff(caller);
  if (!tunables) return false;
  std::string saved = caller != nullptr ? caller : "";
  setenv(kCallerTunablesVariable, saved.c_str(), 1);
  setenv(kTunablesVariable, tunables->c_str(), 1);
  execv("/proc/self/exe", argv);
  // Still here: run as started.
  PutBackCallersTunables(saved);
  return false;
}

}  // namespace tarmac::agent
