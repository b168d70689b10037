// SPDX-License-Identifier: Apache-2.0
//
// Who may ask the agent's HTTP server, checked before any route: GET and
// HEAD only (405 otherwise); with a token configured, every path but the
// open ones (/health, /metrics) needs it, as "Authorization: Bearer TOKEN"
// or the console's cookie (401 otherwise, compared in constant time); and
// /api/v1/login turns a token shown in the header into that cookie
// (HttpOnly, SameSite=Strict, Secure over TLS). Pure; thread-safe.
#pragma once

#include <httplib.h>

#include <string>

namespace tarmac::http {

// Handled with the refusal or the login's answer in `res`, or Unhandled:
// the request goes on to its route.
httplib::Server::HandlerResponse CheckAccess(const std::string& token, bool is_tls,
                                             const httplib::Request& req, httplib::Response& res);

}  // namespace tarmac::http
