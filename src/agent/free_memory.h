// SPDX-License-Identifier: Apache-2.0
//
// Gives the pages the C library holds free back to the system. glibc keeps
// what the agent's threads free inside its heaps, in holes between blocks
// still in use; each sample's transient blocks (the status, the metrics
// page, the streams' batch) land a little differently each time, so the
// heaps' touched pages, and the agent's RSS, crept up for as long as it ran
// (bench/README.md, "The web console"). malloc_trim(0) walks the free
// blocks of every arena and releases their whole pages (MADV_DONTNEED):
// live memory is untouched; a page is faulted back in when a later block
// lands on it.
//
// Thread safety: any thread; each arena is locked while it is walked.
#pragma once

#include <chrono>
#include <optional>

namespace tarmac::agent {

// Releases the free pages of every arena. True when any was released.
bool ReleaseFreeMemory();

// Releases at most once per `interval` of the caller's clock (the agent
// calls it after each sample, with the sample's steady time).
class FreeMemoryReleaser {
 public:
  explicit FreeMemoryReleaser(std::chrono::steady_clock::duration interval) : interval_(interval) {}
  // True when it released now.
  bool MaybeRelease(std::chrono::steady_clock::time_point now);

 private:
  std::chrono::steady_clock::duration interval_;
  std::optional<std::chrono::steady_clock::time_point> last_;  // The last release.
};

}  // namespace tarmac::agent
