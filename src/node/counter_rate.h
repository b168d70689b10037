// SPDX-License-Identifier: Apache-2.0
//
// The rate of a counter the driver keeps (PCIe bytes), from readings taken
// at known times: the change between two readings of the counter over the
// time between those readings. A reading carried from an earlier one (a
// slow-tier counter on a fast tick: the same time) changes nothing, so the
// rate is neither 0 between slow reads nor the change of a slow interval
// over a fast one. The one rate status, `status --watch` and /metrics show.
// Value type; thread-compatible.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>

namespace tarmac::node {

struct CounterRate {
  std::optional<int64_t> last;
  std::chrono::system_clock::time_point last_at;
  std::optional<double> per_second;  // Empty until two readings at different times.

  // `value` as read at `read_at`. A counter that went backwards (a driver
  // reload) starts over.
  void Observe(std::optional<int64_t> value, std::chrono::system_clock::time_point read_at) {
    if (!value) return;
    if (last && read_at == last_at) return;  // The same reading, carried.
    if (!last || *value < *last || read_at < last_at) {
      last = value;
      last_at = read_at;
      per_second.reset();
      return;
    }
    double seconds = std::chrono::duration<double>(read_at - last_at).count();
    per_second = static_cast<double>(*value - *last) / seconds;
    last = value;
    last_at = read_at;
  }
};

}  // namespace tarmac::node
