// SPDX-License-Identifier: Apache-2.0
#include "agent/malloc_tunables.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <string_view>

namespace tarmac::agent {

namespace {
constexpr char kTunablesVariable[] = "GLIBC_TUNABLES";
}  // namespace

std::optional<std::string> TunablesWithCacheOff(const char* caller) {
  std::string_view tunable(kMallocTunable);
  std::string_view name = tunable.substr(0, tunable.find('='));
  if (caller == nullptr || *caller == '\0') return std::string(tunable);
  // A colon-separated list of name=value.
  std::string_view rest(caller);
  while (!rest.empty()) {
    std::string_view entry = rest.substr(0, rest.find(':'));
    if (entry.substr(0, entry.find('=')) == name) return std::nullopt;
    rest.remove_prefix(std::min(rest.size(), entry.size() + 1));
  }
  return std::string(caller) + ":" + std::string(tunable);
}

bool ApplyMallocTunables(char** argv) {
  if (const char* saved = std::getenv(kCallerTunablesVariable); saved != nullptr) {
    if (*saved == '\0') {
      unsetenv(kTunablesVariable);
    } else {
      setenv(kTunablesVariable, saved, 1);
    }
    unsetenv(kCallerTunablesVariable);
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
  unsetenv(kCallerTunablesVariable);
  if (caller == nullptr) {
    unsetenv(kTunablesVariable);
  } else {
    setenv(kTunablesVariable, saved.c_str(), 1);
  }
  return false;
}

}  // namespace tarmac::agent
