// SPDX-License-Identifier: Apache-2.0
//
// An HTTP server on a free loopback port for tests that play a server
// tarmac reads from (a Prometheus, an inference engine), honest or hostile:
// add handlers to server(), then Start(); it stops when destroyed.
#pragma once

#include <httplib.h>

#include <string>
#include <thread>

namespace tarmac::testing {

class HttpStandIn {
 public:
  HttpStandIn() = default;
  HttpStandIn(const HttpStandIn&) = delete;
  HttpStandIn& operator=(const HttpStandIn&) = delete;
  ~HttpStandIn() {
    if (!serving_.joinable()) return;
    server_.stop();
    serving_.join();
  }

  httplib::Server& server() { return server_; }
  // Serves what the handlers say, on a thread, until destroyed.
  void Start() {
    port_ = server_.bind_to_any_port("127.0.0.1");
    serving_ = std::thread([this] { server_.listen_after_bind(); });
  }
  std::string Url() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread serving_;
};

}  // namespace tarmac::testing
