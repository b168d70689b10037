// SPDX-License-Identifier: Apache-2.0
//
// The one place where what the agent answers is redacted for the web. A
// command line may hold a secret (`--hf-token=hf_...`), and every local
// reader of the console is "nobody"; so unless [web] show_command_lines is
// on, no command line leaves for HTTP.
//
// The rule the rest of the agent keeps for this to hold: a command line
// lives only in a field named `command` (a process's, a lease's, a queued
// request's, a doctor finding's, an engine's), never inside another text (an
// event's detail or a finding's summary name a process by its name). The
// redaction then needs no knowledge of any route: every answer under /api/
// passes RedactAnswer on its way out (RedactApiRoutes wraps them all, the
// ones added later too), and the event stream is written from the same
// edit (DropCommandLines).
//
// Thread-safe: pure functions and immutable settings.
#pragma once

#include <nlohmann/json.hpp>

#include "http/server.h"
#include "report/report.h"

namespace tarmac::web {

// Takes out every "command" from `j`, at any depth.
void DropCommandLines(nlohmann::json* j);

// The same for a report built for the web (its CSV and HTML carry the held
// idle processes' commands).
void DropCommandLines(report::Report* report);

// `answer` as it may leave for the web: a JSON body loses every "command";
// any other body is left as it is (its route built it without them).
void RedactAnswer(http::Response* answer);

// Wraps the handler of every route under /api/ in `routes` so that its
// answer goes through RedactAnswer. Does nothing when `show_command_lines`.
void RedactApiRoutes(http::RouteTable* routes, bool show_command_lines);

}  // namespace tarmac::web
