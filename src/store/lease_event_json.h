// SPDX-License-Identifier: Apache-2.0
//
// One event of the lease journal (what `events` answers, docs/protocol.md),
// and its JSON both ways: the agent encodes from LeaseEvent, clients decode
// into it. Decoding never throws: kCorruption naming the field.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/result.h"

namespace tarmac::store {

struct LeaseEvent {
  int64_t seq = 0;  // Assigned by the log, increasing.
  double at_unix = 0;
  std::string kind;  // "granted", "released", "expired", "terminated", ...
  int64_t lease_id = 0;
  int64_t uid = -1;  // Whose lease or process.
  std::string user;
  int64_t actor_uid = -1;  // Who asked; -1: the agent's own policy.
  std::string actor;
  std::vector<int> gpus;
  std::string detail;  // Why, in words, with the evidence.
};

nlohmann::json LeaseEventToJson(const LeaseEvent& e);
Result<LeaseEvent> LeaseEventFromJson(const nlohmann::json& j);
// The `events` answer's list, oldest first.
Result<std::vector<LeaseEvent>> LeaseEventsFromJson(const nlohmann::json& answer);

}  // namespace tarmac::store
