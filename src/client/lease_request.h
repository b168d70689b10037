// SPDX-License-Identifier: Apache-2.0
//
// What a client asks the agent for, in the words of the command line
// (`--gpus 2 --max-time 4h --min-free-memory 20GiB`), and the lease.request
// params it becomes. Every request gets a fresh request_key, so that a
// client resending it after a timeout gets the same lease, never a second.
// Pure, apart from the random key.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "common/result.h"

namespace tarmac::client {

struct LeaseAsk {
  int gpus = 1;
  std::string uuids;            // "GPU-a,GPU-b": exactly these GPUs.
  std::string mig_profile;      // "1g.10gb": one MIG instance of this profile.
  std::string mig_uuid;         // "MIG-...": exactly this MIG instance.
  std::string min_free_memory;  // "20GiB"
  std::string max_time;         // "4h": --max-time (run), --for (reserve).
  std::string idle_timeout;     // "30m"
  std::string priority = "normal";
  bool no_wait = false;
  bool lend_idle = false;        // Its GPU's free memory may run backfill while idle.
  bool allow_unhealthy = false;  // An admin may take GPUs to drain on readable evidence.
  bool json = false;             // The client prints JSON (not sent).
};

// The lease.request params for `ask` (`kind` "run" or "reservation");
// kInvalidArgument naming the option that is wrong.
Result<nlohmann::json> LeaseParams(const LeaseAsk& ask, const std::string& kind, const std::string& command);

}  // namespace tarmac::client
