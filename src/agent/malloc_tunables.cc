// SPDX-License-Identifier: Apache-2.0
#include "agent/malloc_tunables.h"

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

std::optional<std::string> TunablesWithCacheOff(const char* caller) {
  std::string_view tunable(kMallocTunable);
  std::string_view name = tunable.substr(0, tunable.find('='));
  if (caller == nullptr || *caller == '\0') return std::string(tunable);
  // A colon-separated list of name=value.
  for (std::string_view entry : SplitAt(caller, ':')) {
    if (entry.substr(0, entry.find('=')) == name) return std::nullopt;
  }
  return std::string(caller) + ":" + std::string(tunable);
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
