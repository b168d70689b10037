// SPDX-License-Identifier: Apache-2.0
//
// The callers and the start of time the lease book's tests share.
#pragma once

#include <chrono>
#include <cstdint>

#include "sched/lease_book.h"

namespace tarmac::testing {

inline constexpr int64_t kBytesPerGiB = int64_t{1} << 30;
inline const sched::TimePoint kBookStart = sched::TimePoint{} + std::chrono::hours(100);
inline const sched::Caller kAlice{1001, "alice", false};
inline const sched::Caller kBob{1002, "bob", false};
inline const sched::Caller kAdmin{0, "root", true};

}  // namespace tarmac::testing
