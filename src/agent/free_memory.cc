// SPDX-License-Identifier: Apache-2.0
#include "agent/free_memory.h"

#include <malloc.h>

namespace tarmac::agent {

bool ReleaseFreeMemory() { return malloc_trim(0) != 0; }

bool FreeMemoryReleaser::MaybeRelease(std::chrono::steady_clock::time_point now) {
  if (last_ && now - *last_ < interval_) return false;
  last_ = now;
  ReleaseFreeMemory();
  return true;
}

}  // namespace tarmac::agent
