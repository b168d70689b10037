// SPDX-License-Identifier: Apache-2.0
//
// What the agent sets up before it serves, apart from the agent itself
// (agent.h): its config with the flags and environment applied
// (LoadAgentConfig, declared in agent.h), the history store, the text of a
// state file's error, and the open-file limit its API clients need.
#pragma once

#include <memory>

#include "common/clock.h"
#include "common/log.h"
#include "common/status.h"
#include "config/config.h"
#include "store/writer.h"

namespace tarmac::agent {

// Opens the history store ([store]); on failure logs why and returns null:
// the agent runs without history (live data is still served).
std::unique_ptr<store::StoreWriter> OpenHistory(const config::Config& c, Clock* clock, Logger* logger);

// Why a state file cannot be used, and what to do: a permission problem is
// one (run as a user who may, or another --state-dir); anything else can be
// moved aside to start without what it held.
Status StateError(const Status& s, const char* doing, const char* what);

// Each API client holds a descriptor while it waits (lease.wait): raises the
// soft open-file limit to fit max_connections, as far as the hard limit
// allows, and says so when it cannot.
void RaiseOpenFileLimit(int max_connections, Logger* logger);

}  // namespace tarmac::agent
