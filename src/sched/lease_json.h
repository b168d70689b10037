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
#include <optional>
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

// Unix seconds as time points since the epoch: for a client that only
// carries an answer's times to its output (it reads no clock).
inline TimeBase UnixTimeBase() { return {}; }

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

// Another user's process on a lease's GPU, as the API reports it.
struct ForeignProcess {
  int gpu = 0;
  int64_t pid = 0;
  std::string user;
  std::string command;
};
// A lease as the API shows it (lease.get, lease.request, leases): the lease
// (its token only for its owner and admins, never its request key) and
// what the agent adds. The agent encodes from it; clients decode into it.
struct LeaseShown {
  Lease lease;
  int64_t held_seconds = 0;
  int64_t idle_seconds = 0;
  std::optional<double> revoke_by_unix;  // While revoked: when it ends at the latest.
  std::string warning;                   // The idle warning; empty when none.
  std::vector<ForeignProcess> foreign_processes;
};
nlohmann::json LeaseShownToJson(const LeaseShown& shown, const TimeBase& base);
Result<LeaseShown> LeaseShownFromJson(const nlohmann::json& j, const TimeBase& base);

// A queued request as the API shows it (queue, lease.get): the request
// (never its key) and where it stands.
struct PendingShown {
  Pending pending;
  int64_t waiting_seconds = 0;
  int64_t position = 0;  // 1 is next; 0 before the first decision.
  int64_t queue_length = 0;
  std::string reason;  // Why it waits.
};
nlohmann::json PendingShownToJson(const PendingShown& shown, const TimeBase& base);
Result<PendingShown> PendingShownFromJson(const nlohmann::json& j, const TimeBase& base);

// The `leases` and `queue` answers together (the web's live stream).
struct LeaseListing {
  std::vector<LeaseShown> leases;
  std::vector<PendingShown> queue;
};
// {"leases": [...], "queue": [...]}.
nlohmann::json LeaseListingToJson(const LeaseListing& listing, const TimeBase& base);

// The request fields of `lease.request` (docs/protocol.md) into a
// LeaseRequest. kInvalidArgument naming the field for a wrong type; values
// are checked by LeaseBook::Submit.
Result<LeaseRequest> LeaseRequestFromJson(const nlohmann::json& params);

}  // namespace tarmac::sched
