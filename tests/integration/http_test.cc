// SPDX-License-Identifier: Apache-2.0
//
// The agent's HTTP endpoint as Prometheus and hostile clients meet it: real
// TCP connections to a real agent on a free loopback port.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <regex>
#include <thread>

#include "testutil/agent_fixture.h"

namespace tarmac::testing {
namespace {

class HttpTest : public AgentFixture {
 protected:
  static bool WaitFor(const std::function<bool()>& pred) {
    for (int i = 0; i < 200; ++i) {
      if (pred()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }
};

TEST_F(HttpTest, MetricsHealthAndStatusFromTheSnapshot) {
  UseScenarioText("[[gpu]]\ncount = 2\n");
  StartLoad("1", {"--memory", "4GiB", "--util", "60"});
  StartAgent();
  ASSERT_GT(HttpPort(), 0) << ReadLog();
  std::string metrics = HttpGet("/metrics");
  EXPECT_EQ(metrics.rfind("HTTP/1.1 200", 0), 0u) << metrics.substr(0, 200);
  EXPECT_NE(metrics.find("Content-Type: text/plain; version=0.0.4; charset=utf-8"), std::string::npos);
  EXPECT_NE(metrics.find("# TYPE DCGM_FI_DEV_GPU_UTIL gauge"), std::string::npos);
  EXPECT_NE(metrics.find("DCGM_FI_DEV_FB_USED{gpu=\"1\""), std::string::npos);
  EXPECT_NE(metrics.find("tarmac_process_gpu_memory_bytes{"), std::string::npos);
  EXPECT_NE(metrics.find("} 4294967296\n"), std::string::npos);  // 4 GiB, in bytes.
  std::string health = HttpGet("/health");
  EXPECT_EQ(health.rfind("HTTP/1.1 200", 0), 0u) << health;
  std::string status = HttpGet("/api/v1/status");
  ASSERT_NE(status.find("\r\n\r\n"), std::string::npos);
  nlohmann::json j = nlohmann::json::parse(status.substr(status.find("\r\n\r\n") + 4));
  EXPECT_EQ(j["gpus"].size(), 2u);
  // gzip when asked.
  std::string gzipped = HttpGet("/metrics", "Accept-Encoding: gzip\r\n");
  EXPECT_NE(gzipped.find("Content-Encoding: gzip"), std::string::npos) << gzipped.substr(0, 300);
}

// The page is shared between scrapes, the agent's own figures are not
// frozen with it: a lease taken and released between scrapes shows in the
// next answers, and the answer is whole each time.
TEST_F(HttpTest, LeaseFiguresFollowLeasesBetweenScrapes) {
  UseScenarioText("[[gpu]]\ncount = 2\n");
  StartAgent();
  auto normal_leases = [this] {
    std::string page = HttpGet("/metrics");
    std::smatch m;
    static const std::regex kLine("\ntarmac_leases\\{[^}]*priority=\"normal\"\\} (\\d+)\n");
    return std::regex_search(page, m, kLine) ? std::stoi(m[1]) : -1;
  };
  auto length_is_right = [this] {
    std::string answer = HttpGet("/metrics");
    size_t at = answer.find("Content-Length: ");
    size_t body = answer.find("\r\n\r\n");
    if (at == std::string::npos || body == std::string::npos) return false;
    return std::stoul(answer.substr(at + 16)) == answer.size() - body - 4 &&
           answer.find("tarmac_scrape_duration_seconds{") != std::string::npos;
  };
  EXPECT_EQ(normal_leases(), 0);
  RunResult reserved = Tarmac({"reserve", "--socket", Socket(), "--gpus", "1", "--for", "1h", "--json"});
  ASSERT_EQ(reserved.exit_code, 0) << reserved.err;
  EXPECT_TRUE(WaitFor([&] { return normal_leases() == 1; })) << normal_leases();
  EXPECT_TRUE(length_is_right());
  int64_t id = nlohmann::json::parse(reserved.out)["id"].get<int64_t>();
  ASSERT_EQ(Tarmac({"release", "--socket", Socket(), std::to_string(id)}).exit_code, 0);
  EXPECT_TRUE(WaitFor([&] { return normal_leases() == 0; })) << normal_leases();
  EXPECT_TRUE(length_is_right());
}

// /api/v1/status marks leases as the socket's `status` does: both join the
// lease service's marks onto the reading in one place.
TEST_F(HttpTest, RegressionHttpStatusShowsWhoHoldsEachGpuAsTheSocketDoes) {
  UseScenarioText("[[gpu]]\ncount = 2\n");
  StartAgent();
  RunResult reserved = Tarmac({"reserve", "--socket", Socket(), "--gpus", "1", "--for", "1h", "--json"});
  ASSERT_EQ(reserved.exit_code, 0) << reserved.err;
  int64_t id = nlohmann::json::parse(reserved.out)["id"].get<int64_t>();
  auto held_over_http = [this] {
    std::string status = HttpGet("/api/v1/status");
    size_t body = status.find("\r\n\r\n");
    if (body == std::string::npos) return nlohmann::json();
    nlohmann::json held = nlohmann::json::array();
    nlohmann::json parsed = nlohmann::json::parse(status.substr(body + 4));
    for (const nlohmann::json& g : parsed["gpus"]) {
      if (g.contains("lease")) held.push_back(g["lease"]);
    }
    return held;
  };
  ASSERT_TRUE(WaitFor([&] { return held_over_http().size() == 1; })) << held_over_http().dump();
  nlohmann::json lease = held_over_http()[0];
  EXPECT_EQ(lease["id"], id);
  EXPECT_EQ(lease["kind"], "reservation");
  nlohmann::json socket_status = AgentStatus();
  int marked = 0;
  for (const nlohmann::json& g : socket_status["gpus"]) {
    if (g.contains("lease")) {
      ++marked;
      EXPECT_EQ(g["lease"], lease);
    }
  }
  EXPECT_EQ(marked, 1);
}

// promtool, Prometheus' own linter, reads the whole answer; tarmac's own
// families pass its naming rules (dcgm-exporter's names cannot: they are
// kept as dcgm-exporter spells them, for compatibility).
TEST_F(HttpTest, PromtoolParsesTheAnswerAndFindsNoFaultInTarmacsFamilies) {
  UseScenarioText("[[gpu]]\ncount = 2\n");
  StartLoad("0", {"--memory", "1GiB", "--util", "30"});
  StartAgent();
  std::string response = HttpGet("/metrics");
  ASSERT_NE(response.find("\r\n\r\n"), std::string::npos);
  std::string body = dir_.Write("metrics.txt", response.substr(response.find("\r\n\r\n") + 4));
  RunResult lint = RunCommand({"sh", "-c", "promtool check metrics < " + body + " 2>&1"}, {});
  EXPECT_EQ(lint.out.find("error"), std::string::npos) << lint.out;
  std::istringstream lines(lint.out);
  std::string line;
  while (std::getline(lines, line)) {
    EXPECT_EQ(line.rfind("DCGM_", 0), 0u) << line;  // Only the compatibility names draw remarks.
  }
  std::string native = dir_.Write("agent.toml", "[http]\ndcgm_compatible = false\n");
  agents_.back()->KillAndWait(SIGTERM);
  StartAgent({"--config", native});
  response = HttpGet("/metrics");
  body = dir_.Write("native.txt", response.substr(response.find("\r\n\r\n") + 4));
  RunResult clean = RunCommand({"sh", "-c", "promtool check metrics < " + body + " 2>&1"}, {});
  EXPECT_EQ(clean.exit_code, 0) << clean.out;
  EXPECT_EQ(response.find("DCGM_"), std::string::npos);
}

TEST_F(HttpTest, WrongMethodsPathsAndHugeHeadersGetTheirStatusCodes) {
  UseScenarioText("[[gpu]]\ncount = 1\n");
  StartAgent();
  EXPECT_EQ(
      HttpExchange("POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nConnection: close\r\n\r\nhi")
          .rfind("HTTP/1.1 405", 0),
      0u);
  EXPECT_EQ(HttpExchange("DELETE /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                .rfind("HTTP/1.1 405", 0),
            0u);
  std::string missing = HttpGet("/nope");
  EXPECT_EQ(missing.rfind("HTTP/1.1 404", 0), 0u);
  // The answer names the routes there are, from the route table.
  EXPECT_NE(missing.find("not found: try /metrics, /health, /, /console.css, /api/v1/status"),
            std::string::npos)
      << missing;
  // A route's path is literal: a dot is not a wildcard.
  EXPECT_EQ(HttpGet("/api/v1xstatus").rfind("HTTP/1.1 404", 0), 0u);
  std::string huge = HttpGet("/metrics", "X-Big: " + std::string(64 * 1024, 'a') + "\r\n");
  EXPECT_EQ(huge.rfind("HTTP/1.1 431", 0), 0u) << huge.substr(0, 100);  // Said, not dropped.
  EXPECT_EQ(HttpExchange("garbage\r\n\r\n").rfind("HTTP/1.1 200", 0), std::string::npos);
  // Still serving, and the sampler still ticking.
  int64_t ticks = AgentTicks();
  EXPECT_EQ(HttpGet("/health").rfind("HTTP/1.1 200", 0), 0u);
  for (int i = 0; i < 50 && AgentTicks() <= ticks; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_GT(AgentTicks(), ticks);
}

TEST_F(HttpTest, SlowClientsCannotStallTheEndpoint) {
  UseScenarioText("[[gpu]]\ncount = 1\n");
  StartAgent();
  // As many half-sent requests as the server has workers.
  std::vector<int> slow;
  for (int i = 0; i < 8; ++i) {
    int fd = HttpConnect();
    ASSERT_GE(fd, 0);
    (void)!::write(fd, "GET /metrics HTTP/1.1\r\nHost:", 28);
    slow.push_back(fd);
  }
  // The read timeout (2 s) frees the workers; the answer comes, late at worst.
  std::string metrics = HttpGet("/metrics");
  EXPECT_EQ(metrics.rfind("HTTP/1.1 200", 0), 0u);
  for (int fd : slow) ::close(fd);
  EXPECT_EQ(HttpGet("/health").rfind("HTTP/1.1 200", 0), 0u);
}

TEST_F(HttpTest, ALostGpuGoesStaleFiresLostAndHealthSaysWhy) {
  UseScenarioText(R"(
[[gpu]]
count = 3
[[fault]]
kind = "fall_off_bus"
gpu = 1
at = "2s"
)");
  StartAgent();
  EXPECT_NE(HttpGet("/metrics").find("DCGM_FI_DEV_GPU_TEMP{gpu=\"1\""), std::string::npos);
  EXPECT_TRUE(WaitForStatus([](const nlohmann::json& j) { return j["gpus"][1]["health"] == "lost"; }));
  std::string metrics = HttpGet("/metrics");
  EXPECT_EQ(metrics.find("DCGM_FI_DEV_GPU_TEMP{gpu=\"1\""), std::string::npos);  // Stale: gone.
  EXPECT_NE(metrics.find("DCGM_FI_DEV_GPU_TEMP{gpu=\"2\""), std::string::npos);  // The others go on.
  EXPECT_NE(metrics.find("tarmac_gpu_lost{hostname="), std::string::npos);
  std::regex lost(R"(tarmac_gpu_lost\{[^}]*gpu="1"[^}]*\} 1\n)");
  EXPECT_TRUE(std::regex_search(metrics, lost));
  std::string health = HttpGet("/health");
  EXPECT_EQ(health.rfind("HTTP/1.1 503", 0), 0u) << health;
  EXPECT_NE(health.find("gpu 1 lost"), std::string::npos) << health;
}

TEST_F(HttpTest, AnAddressInUseStopsTheAgentWithAClearError) {
  UseScenarioText("[[gpu]]\ncount = 1\n");
  StartAgent();
  int port = HttpPort();
  RunResult second =
      Tarmac({"agent", "--backend", "sim", "--scenario", scenario_, "--socket", dir_.path() + "/other.sock",
              "--state-dir", dir_.path() + "/other", "--http-listen", "127.0.0.1:" + std::to_string(port)});
  EXPECT_EQ(second.exit_code, 1) << "1: an error; 3 would mean no GPU driver";
  EXPECT_NE(second.err.find("http: cannot listen on 127.0.0.1:" + std::to_string(port)), std::string::npos)
      << second.err;
  EXPECT_NE(::access(dir_.path().c_str(), F_OK), -1);
  EXPECT_EQ(::access((dir_.path() + "/other").c_str(), F_OK), -1)
      << "nothing is written before the address is bound";
}

}  // namespace
}  // namespace tarmac::testing
