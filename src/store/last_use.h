// SPDX-License-Identifier: Apache-2.0
//
// When work last used each GPU, from the history: what lets backfill count a
// GPU's idle time across an agent restart instead of from the agent's start.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "common/result.h"
#include "store/sqlite_db.h"

namespace tarmac::store {

// By GPU UUID, the Unix second work last used it: the end of the last
// minute with SM activity, or the last sighting of a process on it,
// whichever is later; its first sighting when neither ever happened. Only
// GPUs the history saw at or after `seen_since_unix` are listed: for one
// seen earlier, the time since is unknown (the agent was down, and work may
// have run meanwhile). Backfill's own use counts as use.
Result<std::map<std::string, int64_t>> LastUseByGpu(Db* db, int64_t seen_since_unix);

}  // namespace tarmac::store
