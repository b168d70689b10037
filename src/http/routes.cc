// SPDX-License-Identifier: Apache-2.0
//
// The pure half of the HTTP endpoint (http/server.h): the route table, a
// request's parameters, and what a listen address and a path are.
#include <arpa/inet.h>
#include <netinet/in.h>

#include "http/server.h"

namespace tarmac::http {

Status ParseListen(const std::string& listen, std::string* host, int* port) {
  size_t colon = listen.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 >= listen.size()) {
    return Status::InvalidArgument("http listen address: expected HOST:PORT", listen);
  }
  *host = listen.substr(0, colon);
  if (host->size() >= 2 && host->front() == '[' && host->back() == ']')
    *host = host->substr(1, host->size() - 2);
  std::string digits = listen.substr(colon + 1);
  if (digits.size() > 5 || digits.find_first_not_of("0123456789") != std::string::npos) {
    return Status::InvalidArgument("http listen address: bad port", listen);
  }
  *port = std::stoi(digits);
  if (*port > 65535) return Status::InvalidArgument("http listen address: port above 65535", listen);
  return Status::OK();
}

std::string Request::Param(const std::string& key, const std::string& fallback) const {
  auto it = params.find(key);
  return it == params.end() ? fallback : it->second;
}

Status RouteTable::Add(std::string path, std::function<Response()> handler) {
  return Add(std::move(path), [handler = std::move(handler)](const Request&) { return handler(); });
}

bool IsLoopbackHost(const std::string& host) {
  if (host == "localhost" || host == "::1") return true;
  in_addr v4{};
  return ::inet_pton(AF_INET, host.c_str(), &v4) == 1 && (ntohl(v4.s_addr) >> 24) == 127;
}

bool IsOpenPath(const std::string& path) {
  // The console's script modules: /console/NAME.js, one level, nothing else.
  bool is_module = path.starts_with("/console/") && path.ends_with(".js") &&
                   path.find('/', std::string_view("/console/").size()) == std::string::npos;
  return path == "/health" || path == "/metrics" || path == "/" || is_module || path == "/console.css";
}

Status RouteTable::Add(std::string path, Handler handler) {
  if (path.empty() || path[0] != '/')
    return Status::InvalidArgument("http: a route's path starts with /", path);
  for (const auto& [p, h] : routes_) {
    if (p == path) return Status::InvalidArgument("http: the route is taken", path);
  }
  routes_.emplace_back(std::move(path), std::move(handler));
  return Status::OK();
}

void RouteTable::WrapEach(const std::function<Handler(const std::string& path, Handler handler)>& wrap) {
  for (auto& [path, handler] : routes_) handler = wrap(path, std::move(handler));
}

}  // namespace tarmac::http
