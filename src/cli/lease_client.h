// SPDX-License-Identifier: Apache-2.0
//
// The client side of the agent's lease methods (docs/protocol.md): one call
// with retries while the agent is busy or restarting, and the exit code for
// what the agent said. Shared by run, reserve, shell, extend, release,
// leases, queue and zombies --kill.
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/options.h"
#include "common/result.h"

namespace tarmac::cli {

// Calls `method` on the agent at `socket`. Retries, with backoff, while the
// agent is unreachable or busy, for up to `patience` (0: once); when no
// socket file exists and `patience` is a minute or less, fails at once (no
// agent). kUnavailable
// when it never answered; the agent's error otherwise (kNotFound,
// kPermissionDenied, kResourceExhausted for no_fit, kInvalidArgument).
// Each try waits up to `call_timeout` for the answer.
Result<nlohmann::json> CallLease(const std::string& socket, const std::string& method, nlohmann::json params,
                                 std::chrono::milliseconds patience = std::chrono::seconds(30),
                                 std::chrono::milliseconds call_timeout = std::chrono::seconds(10));

// Prints "tarmac: <what>: <message>" and returns the exit code for a lease
// command's failure (options.h: 69, 74, 75, 77, 2 or 1).
int LeaseExit(const std::string& what, const Status& status);

// "GPU-a,GPU-b" from a lease's "uuids".
std::string UuidList(const nlohmann::json& lease);

// A lease id given on the command line, or else $TARMAC_LEASE_ID, or else
// the caller's only lease (of `kind` when not empty). kNotFound/
// kInvalidArgument saying why none could be chosen.
Result<int64_t> ChooseLease(const std::string& socket, const std::string& given, const std::string& kind);

}  // namespace tarmac::cli
