// SPDX-License-Identifier: Apache-2.0
//
// The sampler's lateness over its last kLatenessWindow ticks, and their
// 99th percentile. A fixed ring, whole from the start: a vector grown by
// doublings over the first 17 minutes (at 1 s) was the agent's one live
// growth after its first minute (bench/README.md, "The soak").
//
// Thread safety: none; the sampler holds its lock around it.
#pragma once

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <vector>

namespace tarmac::sampler {

inline constexpr size_t kLatenessWindow = 1024;

class LatenessWindow {
 public:
  void Add(std::chrono::microseconds late) {
    ring_[next_] = late.count();
    next_ = (next_ + 1) % kLatenessWindow;
    count_ = std::min(count_ + 1, kLatenessWindow);
  }
  // The last ones added (at most kLatenessWindow), in no order.
  std::vector<int64_t> Values() const {
    return std::vector<int64_t>(ring_.begin(), ring_.begin() + static_cast<std::ptrdiff_t>(count_));
  }
  // The 99th percentile of `values` (copied: the caller's lock is not held
  // while it sorts); zero when empty.
  static std::chrono::microseconds P99(std::vector<int64_t> values) {
    if (values.empty()) return std::chrono::microseconds(0);
    size_t k = std::min((values.size() * 99) / 100, values.size() - 1);
    std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(k), values.end());
    return std::chrono::microseconds(values[k]);
  }

 private:
  std::array<int64_t, kLatenessWindow> ring_{};
  size_t next_ = 0;   // Where the next one goes.
  size_t count_ = 0;  // Filled so far.
};

}  // namespace tarmac::sampler
