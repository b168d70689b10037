// SPDX-License-Identifier: Apache-2.0
//
// The agent's `zombies` and `zombies.kill` answers (docs/protocol.md) both
// ways: the agent encodes from these structs, clients decode into them.
// Decoding never throws: kCorruption naming the field.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/result.h"
#include "sched/zombies.h"

namespace tarmac::sched {

// `zombies`: the policy (and what the agent does with them: "report" or
// "terminate") and the evidence for each zombie.
struct ZombieReport {
  ZombiePolicy policy;
  std::string action = "report";
  std::vector<ZombieEvidence> zombies;
};
nlohmann::json ZombiesToJson(const ZombieReport& report);
Result<ZombieReport> ZombiesFromJson(const nlohmann::json& j);

// `zombies.kill`: each zombie asked for, terminated (SIGTERM sent), refused
// (the caller may not) or skipped (the signal failed: `why`).
struct ZombieKill {
  int64_t pid = 0;
  int gpu = 0;
  std::string user;
  std::string why;  // Refused or skipped: why.
};
struct ZombieKills {
  std::vector<ZombieKill> terminated;
  std::vector<ZombieKill> refused;
  std::vector<ZombieKill> skipped;
};
nlohmann::json ZombieKillsToJson(const ZombieKills& kills);
Result<ZombieKills> ZombieKillsFromJson(const nlohmann::json& j);

}  // namespace tarmac::sched
