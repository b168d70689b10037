// SPDX-License-Identifier: Apache-2.0
//
// Leases and queued requests as JSON: what the agent persists (so they come
// back after a restart) and the shape of the `leases` and `queue` answers
// (docs/protocol.md). Times are Unix seconds on the wire and on disk, and
// steady-clock time points in memory; a TimeBase maps one to the other.
// Decoding never throws: a malformed record is kCorruption naming the field.
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/result.h"
#include "sched/lease_book.h"

namespace tarmac::sched {

// One instant read on both clocks.
struct TimeBase {
  TimePoint steady;
  std::chrono::system_clock::time_point wall;
  double ToUnix(TimePoint t) const;
  TimePoint FromUnix(double unix_seconds) const;
};

const char* PriorityName(Priority p);
// "low", "normal" or "high".
bool ParsePriority(const std::string& name, Priority* out);
// Every name ParsePriority takes, and the same as "a, b or c".
std::vector<std::string> PriorityNames();
std::string PriorityNameList();

nlohmann::json LeaseToJson(const Lease& lease, const TimeBase& base);
Result<Lease> LeaseFromJson(const nlohmann::json& j, const TimeBase& base);

nlohmann::json PendingToJson(const Pending& pending, const TimeBase& base);
Result<Pending> PendingFromJson(const nlohmann::json& j, const TimeBase& base);

// The request fields of `lease.request` (docs/protocol.md) into a
// LeaseRequest. kInvalidArgument naming the field for a wrong type; values
// are checked by LeaseBook::Submit.
Result<LeaseRequest> LeaseRequestFromJson(const nlohmann::json& params);

}  // namespace tarmac::sched
