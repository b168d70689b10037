// SPDX-License-Identifier: Apache-2.0
#include "http/server.h"

#include <fmt/format.h>
#include <httplib.h>
#include <sys/socket.h>

#include "metrics/exposition.h"

namespace tarmac::http {

Status ParseListen(const std::string& listen, std::string* host, int* port) {
  size_t colon = listen.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 >= listen.size()) {
    return Status::InvalidArgument("http listen address: expected HOST:PORT", listen);
  }
  *host = listen.substr(0, colon);
  if (host->size() >= 2 && host->front() == '[' && host->back() == ']') *host = host->substr(1, host->size() - 2);
  std::string digits = listen.substr(colon + 1);
  if (digits.size() > 5 || digits.find_first_not_of("0123456789") != std::string::npos) {
    return Status::InvalidArgument("http listen address: bad port", listen);
  }
  *port = std::stoi(digits);
  if (*port > 65535) return Status::InvalidArgument("http listen address: port above 65535", listen);
  return Status::OK();
}

HttpServer::HttpServer(HttpOptions options, Routes routes, Logger* logger)
    : options_(std::move(options)), routes_(std::move(routes)), logger_(logger) {}

HttpServer::~HttpServer() { Stop(); }

Status HttpServer::Start() {
  std::string host;
  int port = 0;
  Status s = ParseListen(options_.listen, &host, &port);
  if (!s.ok()) return s;
  server_ = std::make_unique<httplib::Server>();
  int threads = options_.worker_threads;
  server_->new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
  server_->set_read_timeout(options_.read_timeout);
  server_->set_write_timeout(options_.read_timeout);
  server_->set_keep_alive_max_count(100);
  server_->set_keep_alive_timeout(2);
  server_->set_payload_max_length(0);
  // SO_REUSEADDR only: cpp-httplib's default also sets SO_REUSEPORT, which
  // would let a second agent share the port and split the scrapes.
  server_->set_socket_options([](int sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  server_->set_pre_routing_handler([](const httplib::Request& req, httplib::Response& res) {
    if (req.method == "GET" || req.method == "HEAD") return httplib::Server::HandlerResponse::Unhandled;
    res.status = 405;
    res.set_header("Allow", "GET, HEAD");
    res.set_content("only GET is served here\n", "text/plain");
    return httplib::Server::HandlerResponse::Handled;
  });
  server_->Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(routes_.metrics(), metrics::kContentType);
  });
  server_->Get("/api/v1/status", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(routes_.status_json(), "application/json");
  });
  server_->Get("/health", [this](const httplib::Request&, httplib::Response& res) {
    std::string reason;
    bool is_ok = routes_.health(&reason);
    res.status = is_ok ? 200 : 503;
    res.set_content(is_ok ? "ok\n" : reason + "\n", "text/plain");
  });
  server_->set_error_handler([](const httplib::Request&, httplib::Response& res) {
    if (res.status == 404) res.set_content("not found: try /metrics, /health or /api/v1/status\n", "text/plain");
  });
  if (port == 0) {
    port_ = server_->bind_to_any_port(host);
    if (port_ < 0) port_ = 0;
  } else {
    port_ = server_->bind_to_port(host, port) ? port : 0;
  }
  if (port_ == 0) {
    return Status::Unavailable(fmt::format("http: cannot listen on {}", options_.listen),
                               "the address is in use or not local");
  }
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  logger_->Log(LogLevel::kInfo, "http: listening on http://{}:{}/metrics", host.find(':') != std::string::npos
                                                                               ? "[" + host + "]"
                                                                               : host,
               port_);
  return Status::OK();
}

void HttpServer::Stop() {
  if (server_ != nullptr) server_->stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace tarmac::http
