// SPDX-License-Identifier: Apache-2.0
#include "http/access.h"

#include <string_view>

#include "http/server.h"

namespace tarmac::http {
namespace {

constexpr const char* kTokenCookie = "tarmac_token";

// Compares in time that does not depend on where they differ.
bool SameToken(std::string_view shown, const std::string& token) {
  if (shown.size() != token.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < token.size(); ++i) diff |= static_cast<unsigned char>(shown[i] ^ token[i]);
  return diff == 0;
}

std::string_view BearerOf(std::string_view header) {
  constexpr std::string_view kBearer = "Bearer ";
  return header.substr(0, kBearer.size()) == kBearer ? header.substr(kBearer.size()) : std::string_view();
}

// The value of cookie `name` in a Cookie header, or empty.
std::string_view CookieOf(std::string_view header, std::string_view name) {
  while (!header.empty()) {
    size_t end = header.find(';');
    std::string_view pair = header.substr(0, end);
    while (!pair.empty() && pair.front() == ' ') pair.remove_prefix(1);
    if (pair.size() > name.size() && pair.substr(0, name.size()) == name && pair[name.size()] == '=') {
      return pair.substr(name.size() + 1);
    }
    if (end == std::string_view::npos) break;
    header.remove_prefix(end + 1);
  }
  return {};
}

}  // namespace

httplib::Server::HandlerResponse CheckAccess(const std::string& token, bool is_tls,
                                             const httplib::Request& req, httplib::Response& res) {
  if (req.method != "GET" && req.method != "HEAD") {
    res.status = 405;
    res.set_header("Allow", "GET, HEAD");
    res.set_content("only GET is served here\n", "text/plain");
    return httplib::Server::HandlerResponse::Handled;
  }
  if (token.empty() || IsOpenPath(req.path)) return httplib::Server::HandlerResponse::Unhandled;
  bool is_by_header = SameToken(BearerOf(req.get_header_value("Authorization")), token);
  if (!is_by_header && !SameToken(CookieOf(req.get_header_value("Cookie"), kTokenCookie), token)) {
    res.status = 401;
    res.set_header("WWW-Authenticate", "Bearer realm=\"tarmac\"");
    res.set_content("a token is needed: Authorization: Bearer TOKEN (the [http] auth file)\n", "text/plain");
    return httplib::Server::HandlerResponse::Handled;
  }
  if (req.path == "/api/v1/login") {
    // The console's login: a token shown in the header becomes a cookie
    // the browser sends with every request, scripts cannot read, and no
    // other site can make it send.
    if (!is_by_header) {
      res.status = 400;
      res.set_content("show the token in the Authorization header\n", "text/plain");
      return httplib::Server::HandlerResponse::Handled;
    }
    res.set_header("Set-Cookie", std::string(kTokenCookie) + "=" + token +
                                     "; Path=/; HttpOnly; SameSite=Strict" + (is_tls ? "; Secure" : ""));
    res.set_header("Cache-Control", "no-store");
    res.set_content("{\"login\":true}\n", "application/json");
    return httplib::Server::HandlerResponse::Handled;
  }
  return httplib::Server::HandlerResponse::Unhandled;
}

}  // namespace tarmac::http
