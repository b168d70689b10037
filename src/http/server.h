// SPDX-License-Identifier: Apache-2.0
//
// The agent's HTTP endpoint (cpp-httplib), read-only: GET /metrics
// (Prometheus), /health and /api/v1/status (the JSON of `tarmac status
// --json`). Every answer comes from the latest snapshot: no request calls
// NVML or waits for the sampler. Loopback by default.
//
// Bounds: a fixed pool of worker threads, request line and headers capped
// by cpp-httplib (8 KiB each), bodies refused, a read timeout that drops
// slow clients, and keep-alive limited. Methods other than GET and HEAD get
// 405; unknown paths 404.
//
// Thread safety: Start/Stop from one thread; handlers run on the pool.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "common/log.h"
#include "common/result.h"

namespace httplib {
class Server;
}

namespace tarmac::http {

struct HttpOptions {
  std::string listen = "127.0.0.1:9477";  // HOST:PORT; port 0 picks a free one.
  int worker_threads = 8;
  // A client silent this long mid-request is dropped, so slow clients hold
  // a worker for at most this.
  std::chrono::seconds read_timeout{2};
};

// What the routes answer; each returns the body (and, for health, whether
// all is well and why not).
struct Routes {
  std::function<std::string()> metrics;
  std::function<std::string()> status_json;
  std::function<bool(std::string* reason)> health;
};

// Splits "host:port" ("[::1]:9477" for IPv6). kInvalidArgument otherwise.
Status ParseListen(const std::string& listen, std::string* host, int* port);

class HttpServer {
 public:
  HttpServer(HttpOptions options, Routes routes, Logger* logger);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds and starts serving; logs the address. kUnavailable when the
  // address cannot be bound.
  Status Start();
  void Stop();
  int port() const { return port_; }

 private:
  HttpOptions options_;
  Routes routes_;
  Logger* logger_;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = 0;
};

}  // namespace tarmac::http
