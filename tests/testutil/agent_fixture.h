// SPDX-License-Identifier: Apache-2.0
//
// A private `tarmac agent` over the fake NVML in a temp dir, and ways to
// wait for it (bounded polls, not timing assertions).
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <thread>

#include "ipc/unix_server.h"
#include "testutil/sim_fixture.h"

namespace tarmac::testing {

class AgentFixture : public SimWorldTest {
 public:
  std::string Socket() const { return dir_.path() + "/run/tarmac.sock"; }
  std::string Log() const { return dir_.path() + "/agent.log"; }

  // `prefix` runs the agent under another command (e.g. prlimit).
  Child* StartAgent(std::vector<std::string> extra = {}, std::vector<std::string> prefix = {}) {
    std::vector<std::string> argv = prefix;
    std::vector<std::string> agent = {
        BinDir() + "/tarmac", "agent",      "--backend", "nvml",        "--nvml-library",
        FakeNvmlPath(),       "--socket",   Socket(),    "--state-dir", dir_.path() + "/state",
        "--http-listen",      "127.0.0.1:0"};
    argv.insert(argv.end(), agent.begin(), agent.end());
    argv.insert(argv.end(), extra.begin(), extra.end());
    std::map<std::string, std::string> env = Env();
    env.insert(agent_env_.begin(), agent_env_.end());
    agents_.push_back(std::make_unique<Child>(argv, env, Log()));
    EXPECT_TRUE(WaitUntilServing()) << ReadLog();
    return agents_.back().get();
  }

  // Bounded readiness poll (not a timing assertion).
  bool WaitUntilServing() {
    for (int i = 0; i < 250; ++i) {
      ipc::Request hello;
      hello.method = "hello";
      if (ipc::CallAgent(Socket(), hello, std::chrono::seconds(2)).ok()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }

  // Polls the agent's log until it contains `text` (bounded).
  bool WaitForLog(const std::string& text) const {
    for (int i = 0; i < 100; ++i) {
      if (ReadLog().find(text) != std::string::npos) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }

  std::string ReadLog() const {
    std::ifstream in(Log());
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

  nlohmann::json AgentStatus() {
    RunResult r = Tarmac({"status", "--json", "--socket", Socket()});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return nlohmann::json::parse(r.out, nullptr, false);
  }

  int64_t AgentTicks() {
    ipc::Request hello;
    hello.method = "hello";
    Result<nlohmann::json> r = ipc::CallAgent(Socket(), hello, std::chrono::seconds(2));
    return r.ok() ? r.value()["sampler"].value("ticks", int64_t{0}) : 0;
  }

  // Polls the agent until `pred` holds for its status (bounded).
  bool WaitForStatus(const std::function<bool(const nlohmann::json&)>& pred) {
    for (int i = 0; i < 100; ++i) {
      nlohmann::json j = AgentStatus();
      if (!j.is_discarded() && pred(j)) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }

  // The HTTP port the newest agent logged; 0 when none.
  int HttpPort() const {
    std::string log = ReadLog();
    std::regex re(R"(http: listening on http://127\.0\.0\.1:(\d+)/metrics)");
    int port = 0;
    for (auto it = std::sregex_iterator(log.begin(), log.end(), re); it != std::sregex_iterator(); ++it) {
      port = std::stoi((*it)[1].str());
    }
    return port;
  }
  // A TCP connection to the agent's HTTP port (10 s read timeout); -1 on failure.
  int HttpConnect() const {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(HttpPort()));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      ::close(fd);
      return -1;
    }
    timeval tv{10, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    return fd;
  }
  // Sends a raw `request` and reads until the server closes.
  std::string HttpExchange(const std::string& request) const {
    int fd = HttpConnect();
    if (fd < 0) return "";
    (void)!::write(fd, request.data(), request.size());
    std::string response;
    char buf[65536];
    for (;;) {
      ssize_t n = ::read(fd, buf, sizeof buf);
      if (n <= 0) break;
      response.append(buf, static_cast<size_t>(n));
    }
    ::close(fd);
    return response;
  }
  // The whole response (status line, headers, body) to GET `path`.
  std::string HttpGet(const std::string& path, const std::string& extra_headers = "") const {
    return HttpExchange("GET " + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n" + extra_headers +
                        "\r\n");
  }

  std::vector<std::unique_ptr<Child>> agents_;
  std::map<std::string, std::string> agent_env_;  // Added to the agent's environment.
};

}  // namespace tarmac::testing
