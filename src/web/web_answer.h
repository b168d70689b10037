// SPDX-License-Identifier: Apache-2.0
//
// How the web routes answer (agent/web_routes.h, agent/fleet_routes.h):
// JSON with a status, the {"error": {"code", "message"}} refusal, a
// Status's HTTP code, and the since/until range the history, report and
// fleet report routes share.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>

#include "common/clock.h"
#include "common/result.h"
#include "http/server.h"

namespace tarmac::web {

http::Response JsonAnswer(int status, const nlohmann::json& j);

// {"error": {"code": CODE, "message": MESSAGE}} with `status`.
http::Response Refusal(int status, const std::string& code, const std::string& message);

// 400 for kInvalidArgument, 404 for kNotFound, 429 for kResourceExhausted
// (a query over a server's limit), else 503; the socket API's error codes.
http::Response StatusRefusal(const Status& s);

// The request's `format` (json, csv or html; default json), or a 400
// refusal in `refusal`.
std::optional<std::string> ReportFormat(const http::Request& asked, http::Response* refusal);

// A report rendered in `format`: JSON; CSV as an attachment named
// `csv_name`; HTML self-contained and script-free (a policy that runs no
// script, for the console's frame).
http::Response ReportAnswer(const std::string& format, std::string body, const std::string& csv_name);

// The request's `since` (default `since`) and `until` (default now) as
// `tarmac report` takes them: [since, until + 1) in Unix seconds.
Result<std::pair<int64_t, int64_t>> RangeOf(const http::Request& asked, Clock* clock,
                                            const std::string& since);

}  // namespace tarmac::web
