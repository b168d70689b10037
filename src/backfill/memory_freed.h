// SPDX-License-Identifier: Apache-2.0
//
// The runner's own check that a GPU it ran an engine on is given back
// clean: an NVML reading the agent took after the engine was told to stop
// shows the GPU's memory back where it was at the grant. Used when a lease
// ends unrevoked or its engine is a server the runner did not start (a
// revoked lease's engine it stopped is let go at once: the agent then hands
// the GPU over only once a reading of its own shows it empty).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "client/agent_client.h"
#include "common/clock.h"
#include "common/status.h"

namespace tarmac::backfill {

// Polls the agent's status until a reading taken at or after `since` shows
// GPU `uuid` with at most `memory_before` + 256 MiB used (the driver's
// own): every millisecond in the first 100 ms after `since` (a real job may
// wait on this GPU), every 5 ms after. OK as well when no agent listens (no
// lease is left to hand back); DeadlineExceeded, saying so, at `until`.
Status WaitForMemoryFreed(const client::AgentClient& agent, Clock* clock, const std::string& uuid,
                          int64_t memory_before, std::chrono::system_clock::time_point since,
                          std::chrono::steady_clock::time_point until);

}  // namespace tarmac::backfill
