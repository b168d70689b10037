// SPDX-License-Identifier: Apache-2.0
//
// The agent: one long-lived process per GPU server that samples every GPU
// and process and serves the local API. RunAgent builds it in named steps
// (claim the socket, HTTP address and state directory; open the state; start
// sampling; serve), wiring the pieces (config,
// backend, sampler, Unix-socket server), tells systemd when it is ready (the
// first sample is taken) and pets its watchdog each tick, reloads the config
// on SIGHUP (keeping the old one when the new one is bad), and stops cleanly
// on SIGTERM or SIGINT.
#pragma once

#include <string>

#include "common/clock.h"
#include "common/log.h"
#include "common/result.h"
#include "config/agent_flags.h"
#include "config/config.h"

namespace tarmac::agent {

// The agent's flags are declared once, in config/agent_flags.h.
using AgentFlags = config::AgentFlags;

// Loads the config named by `flags` and applies the flag overrides.
Result<config::Config> LoadAgentConfig(const AgentFlags& flags);

// Runs until SIGTERM/SIGINT. Returns the fatal start-up error, if any.
Status RunAgent(const AgentFlags& flags, Clock* clock, Logger* logger);

}  // namespace tarmac::agent
