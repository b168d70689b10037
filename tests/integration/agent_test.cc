// SPDX-License-Identifier: Apache-2.0
//
// The agent as users run it: a real `tarmac agent` process over the fake
// NVML, read by the real CLI through its socket; signals, restarts, bad
// configs and faults mid-run.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <thread>

#include "common/proc_files.h"
#include "common/split.h"
#include "ipc/unix_server.h"
#include "testutil/agent_fixture.h"

namespace tarmac::testing {
namespace {

using nlohmann::json;

class AgentTest : public AgentFixture {};

TEST_F(AgentTest, ReadCommandsGoThroughTheAgentAndMatchADirectRead) {
  UseScenario("lab-8gpu.toml");
  Child* load = StartLoad("2", {"--memory", "12GiB", "--util", "70"});
  StartAgent();
  ASSERT_TRUE(WaitForStatus([&](const json& j) { return j["gpus"][2]["processes"].size() == 1; }));
  json via_agent = AgentStatus();
  EXPECT_EQ(via_agent["backend"], "nvml");
  EXPECT_EQ(via_agent["gpus"][2]["processes"][0]["pid"], load->pid());
  EXPECT_EQ(via_agent["gpus"][2]["processes"][0]["uid"], static_cast<int64_t>(geteuid()));
  RunResult direct = Tarmac({"status", "--json", "--backend", "nvml", "--nvml-library", FakeNvmlPath()});
  json d = json::parse(direct.out);
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(via_agent["gpus"][i]["uuid"], d["gpus"][i]["uuid"]);
    EXPECT_EQ(via_agent["gpus"][i]["memory_used_bytes"], d["gpus"][i]["memory_used_bytes"]);
    EXPECT_EQ(via_agent["gpus"][i]["clock_event_reasons"], d["gpus"][i]["clock_event_reasons"]);
    EXPECT_EQ(via_agent["gpus"][i]["pcie_width"], d["gpus"][i]["pcie_width"]);
  }
  RunResult query = Tarmac(
      {"query", "--socket", Socket(), "--query-compute-apps=pid,used_memory", "--format=csv,noheader"});
  EXPECT_EQ(query.out, std::to_string(load->pid()) + ", 12288 MiB\n");
  RunResult text = Tarmac({"status", "--socket", Socket(), "--color", "never"});
  EXPECT_NE(text.out.find("via nvml (agent)"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("PCIe x8 of x16"), std::string::npos) << text.out;
}

// A GPU moving 700 MB/s out and 2.8 GB/s in shows it on every status read
// and in /metrics, between the agent's slow-tier reads of the counters as
// after them. Status once said 0 on fast ticks and about ten times the
// truth after a slow one here (a 1 s slow interval over a 100 ms fast one).
TEST_F(AgentTest, PcieRatesAreRightOnEveryTickAndTheSameInMetrics) {
  UseScenario("lab-8gpu.toml");
  StartLoad("2", {"--memory", "1GiB", "--util", "70"});
  StartAgent({"--config", dir_.Write("agent.toml",
                                     "[sampler]\nfast_interval = \"100ms\"\n"
                                     "slow_interval = \"1s\"\n")});
  ASSERT_TRUE(WaitForStatus([](const json& j) { return j["gpus"][2].contains("pcie_tx_bytes_per_second"); }));
  const double tx = 1e5 + 1e9 * 0.7;
  const double rx = 1e5 + 4e9 * 0.7;
  // The simulated driver answers from a world it re-evaluates every 100 ms,
  // so a reading of the counters may be up to 100 ms old: up to 10 % of a
  // 1 s interval at each end. What this catches is 0 or ten times.
  const double slack = 0.25;
  for (int i = 0; i < 15; ++i) {  // Over more than a slow interval: fast ticks and slow ones.
    json g = AgentStatus()["gpus"][2];
    ASSERT_TRUE(g.contains("pcie_tx_bytes_per_second")) << g.dump();
    EXPECT_NEAR(g["pcie_tx_bytes_per_second"].get<double>(), tx, tx * slack) << i;
    EXPECT_NEAR(g["pcie_rx_bytes_per_second"].get<double>(), rx, rx * slack) << i;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  std::string page = HttpGet("/metrics");
  std::smatch m;
  ASSERT_TRUE(
      std::regex_search(page, m, std::regex(R"(DCGM_FI_PROF_PCIE_TX_BYTES\{gpu="2",[^}]*\} ([0-9.e+]+)\n)")))
      << page;
  EXPECT_NEAR(std::stod(m[1].str()), tx, tx * slack);
}

// NVLink peers reach a client through the agent as they do read directly:
// the doctor's topology and gres.conf's Links= were lost (the status JSON
// did not carry them).
TEST_F(AgentTest, NvLinkPeersReachClientsThroughTheAgent) {
  UseScenario("healthy-lab.toml");
  StartAgent();
  RunResult direct_doctor =
      Tarmac({"doctor", "--no-agent", "--backend", "nvml", "--nvml-library", FakeNvmlPath()});
  RunResult agent_doctor = Tarmac({"doctor", "--socket", Socket()});
  EXPECT_NE(direct_doctor.out.find("8 GPUs, 8 with NVLink peers"), std::string::npos) << direct_doctor.out;
  EXPECT_NE(agent_doctor.out.find("8 GPUs, 8 with NVLink peers"), std::string::npos) << agent_doctor.out;
  RunResult direct_gres =
      Tarmac({"slurm", "gres-conf", "--node", "n1", "--backend", "nvml", "--nvml-library", FakeNvmlPath()});
  RunResult agent_gres = Tarmac({"slurm", "gres-conf", "--node", "n1", "--socket", Socket()});
  EXPECT_NE(direct_gres.out.find(" Links="), std::string::npos) << direct_gres.out << direct_gres.err;
  EXPECT_EQ(agent_gres.out, direct_gres.out) << agent_gres.err;
  json status = AgentStatus();
  EXPECT_EQ(status["gpus"][0]["nvlink_peers"].size(), 7u) << status["gpus"][0].dump();  // All eight joined.
}

TEST_F(AgentTest, KilledProcessLeavesTheAgentsViewWithinATick) {
  UseScenario("lab-8gpu.toml");
  Child* load = StartLoad("4", {"--memory", "4GiB", "--util", "40"});
  StartAgent();
  ASSERT_TRUE(WaitForStatus([](const json& j) { return j["gpus"][4]["processes"].size() == 1; }));
  load->KillAndWait(SIGKILL);
  EXPECT_TRUE(WaitForStatus([](const json& j) { return j["gpus"][4]["processes"].empty(); }));
}

// The environment the agent's running image was started with
// (/proc/PID/environ: what glibc read its tunables from), one entry each.
// glibc's loader splits GLIBC_TUNABLES in place, a NUL for each ':'; they
// are put back.
std::vector<std::string> StartEnvironment(pid_t pid) {
  std::string text;
  EXPECT_TRUE(ReadSmallFile("/proc/" + std::to_string(pid) + "/environ", &text, 1 << 20));
  const std::string split = std::string(1, '\0') + "glibc.";
  for (size_t at = text.find(split); at != std::string::npos; at = text.find(split, at)) text[at] = ':';
  std::vector<std::string_view> entries = SplitAt(text, '\0');
  return std::vector<std::string>(entries.begin(), entries.end());
}

bool Has(const std::vector<std::string>& entries, const std::string& entry) {
  return std::find(entries.begin(), entries.end(), entry) != entries.end();
}

// tarmacd starts itself again, same PID, with glibc's per-thread cache off
// (agent/malloc_tunables.h), and serves from that image.
TEST_F(AgentTest, TheAgentRunsWithTheMallocCacheOff) {
  UseScenario("small.toml");
  Child* agent = StartAgent();
  std::vector<std::string> env = StartEnvironment(agent->pid());
  EXPECT_TRUE(Has(env, "GLIBC_TUNABLES=glibc.malloc.tcache_count=0")) << ::testing::PrintToString(env);
  EXPECT_TRUE(Has(env, "TARMACD_CALLER_GLIBC_TUNABLES="));  // The caller had none.
  EXPECT_EQ(AgentStatus()["gpus"].size(), 2u);
}

TEST_F(AgentTest, TheCallersTunablesAreKeptAndTheirCacheSizeWins) {
  UseScenario("small.toml");
  agent_env_["GLIBC_TUNABLES"] = "glibc.malloc.trim_threshold=262144";
  Child* added = StartAgent();
  std::vector<std::string> env = StartEnvironment(added->pid());
  EXPECT_TRUE(Has(env, "GLIBC_TUNABLES=glibc.malloc.trim_threshold=262144:glibc.malloc.tcache_count=0"))
      << ::testing::PrintToString(env);
  EXPECT_TRUE(Has(env, "TARMACD_CALLER_GLIBC_TUNABLES=glibc.malloc.trim_threshold=262144"));
  added->KillAndWait(SIGTERM);

  agent_env_["GLIBC_TUNABLES"] = "glibc.malloc.tcache_count=3";
  Child* sized = StartAgent();
  env = StartEnvironment(sized->pid());
  EXPECT_TRUE(Has(env, "GLIBC_TUNABLES=glibc.malloc.tcache_count=3")) << ::testing::PrintToString(env);
  EXPECT_FALSE(std::any_of(env.begin(), env.end(), [](const std::string& e) {
    return e.rfind("TARMACD_CALLER_GLIBC_TUNABLES=", 0) == 0;
  }));
  EXPECT_EQ(AgentStatus()["gpus"].size(), 2u);
}

TEST_F(AgentTest, SigtermStopsCleanlyAndRemovesTheSocket) {
  UseScenario("small.toml");
  Child* agent = StartAgent();
  int status = agent->KillAndWait(SIGTERM);
  ASSERT_TRUE(WIFEXITED(status)) << ReadLog();
  EXPECT_EQ(WEXITSTATUS(status), 0);
  struct stat st {};
  EXPECT_NE(stat(Socket().c_str(), &st), 0);
  EXPECT_NE(ReadLog().find("SIGTERM received; stopping"), std::string::npos);
}

TEST_F(AgentTest, RestartAfterSigkillServesAgainDespiteTheStaleSocket) {
  UseScenario("small.toml");
  Child* first = StartAgent();
  first->KillAndWait(SIGKILL);
  struct stat st {};
  ASSERT_EQ(stat(Socket().c_str(), &st), 0);  // SIGKILL leaves the file behind.
  StartAgent();
  json j = AgentStatus();
  EXPECT_EQ(j["gpus"].size(), 2u);
}

TEST_F(AgentTest, SecondAgentOnTheSameSocketRefusesToStart) {
  UseScenario("small.toml");
  StartAgent();
  // Every test keeps its state private: never the system's /var/lib/tarmac.
  std::string other_state = dir_.path() + "/second-state";
  RunResult second = Tarmac({"agent", "--backend", "sim", "--socket", Socket(), "--http-listen",
                             "127.0.0.1:0", "--state-dir", other_state});
  EXPECT_EQ(second.exit_code, 1);
  EXPECT_NE(second.err.find("another agent is serving"), std::string::npos) << second.err;
  EXPECT_EQ(::access(other_state.c_str(), F_OK), -1) << "refused before anything was written";
}

TEST_F(AgentTest, BadConfigIsRefusedWithEveryProblemListed) {
  UseScenario("small.toml");
  std::string config =
      dir_.Write("bad.toml", "[sampler]\nfast_interval = \"5ms\"\n[api]\nmax_conections = 3\n");
  RunResult start = Tarmac({"agent", "--config", config, "--socket", Socket(), "--http-listen", "127.0.0.1:0",
                            "--state-dir", dir_.path() + "/state"});
  EXPECT_EQ(start.exit_code, 2);
  EXPECT_NE(start.err.find(config + ":2: key 'sampler.fast_interval'"), std::string::npos) << start.err;
  EXPECT_NE(start.err.find(config + ":4: key 'api.max_conections': unknown key"), std::string::npos)
      << start.err;
  RunResult check = Tarmac({"config", "check", config});
  EXPECT_EQ(check.exit_code, 2);
  EXPECT_EQ(std::count(check.err.begin(), check.err.end(), '\n'), 2) << check.err;
  std::string good = dir_.Write("good.toml", "[sampler]\nfast_interval = \"500ms\"\n");
  RunResult ok = Tarmac({"config", "check", good});
  EXPECT_EQ(ok.exit_code, 0);
  EXPECT_EQ(ok.out, good + ": ok\n");
}

TEST_F(AgentTest, SighupWithABadConfigKeepsTheOldOneAndServing) {
  UseScenario("small.toml");
  std::string config = dir_.Write("agent.toml", "[sampler]\nfast_interval = \"1s\"\n");
  Child* agent = StartAgent({"--config", config});
  dir_.Write("agent.toml", "[sampler]\nfast_interval = \"fast\"\n");
  kill(agent->pid(), SIGHUP);
  EXPECT_TRUE(WaitForLog("config reload refused; keeping the running config")) << ReadLog();
  EXPECT_NE(ReadLog().find("agent.toml:2: key 'sampler.fast_interval'"), std::string::npos);
  EXPECT_EQ(AgentStatus()["gpus"].size(), 2u);
  dir_.Write("agent.toml", "[sampler]\nfast_interval = \"250ms\"\n");
  kill(agent->pid(), SIGHUP);
  EXPECT_TRUE(WaitForLog("config reloaded: applied [sampler]")) << ReadLog();
}

TEST_F(AgentTest, GpuLostMidRunIsReportedWhileTheAgentKeepsServing) {
  UseScenarioText(R"(
[[gpu]]
count = 3
[[fault]]
kind = "fall_off_bus"
gpu = 1
at = "2s"
)");
  StartAgent();
  json before = AgentStatus();
  ASSERT_EQ(before["gpus"][1]["health"], "ok");
  EXPECT_TRUE(WaitForStatus([](const json& j) { return j["gpus"][1]["health"] == "lost"; }));
  json after = AgentStatus();
  EXPECT_EQ(after["gpus"][0]["health"], "ok");
  EXPECT_EQ(after["gpus"][2]["health"], "ok");
  EXPECT_TRUE(after["gpus"][2].contains("power_milliwatts"));
}

TEST_F(AgentTest, HungNvmlCallMarksOneGpuUnresponsiveAndTheOthersKeepSampling) {
  UseScenarioText(R"(
[[gpu]]
count = 3
[[fault]]
kind = "nvml_hang"
gpu = 1
at = "2s"
until = "5s"
)");
  std::string config =
      dir_.Write("agent.toml", "[sampler]\nfast_interval = \"200ms\"\ncall_timeout = \"300ms\"\n");
  StartLoad("2", {"--memory", "1GiB", "--util", "50"});
  StartAgent({"--config", config});
  EXPECT_TRUE(WaitForStatus([](const json& j) { return j["gpus"][1]["health"] == "unresponsive"; }))
      << ReadLog();
  json during = AgentStatus();
  EXPECT_EQ(during["gpus"][0]["health"], "ok");
  EXPECT_EQ(during["gpus"][2]["health"], "ok");
  EXPECT_EQ(during["gpus"][2]["processes"].size(), 1u);
  EXPECT_NE(during["gpus"][1]["error"].get<std::string>().find("has not returned"), std::string::npos);
  // The agent answers while the call hangs, and the GPU comes back after.
  EXPECT_TRUE(WaitForStatus([](const json& j) { return j["gpus"][1]["health"] == "ok"; })) << ReadLog();
  EXPECT_NE(ReadLog().find("gpu 1 responds again"), std::string::npos) << ReadLog();
}

// Through the agent, pick judges a GPU by its utilization over --window
// from the agent's own samples, not by the last instant.
TEST_F(AgentTest, PickThroughTheAgentJudgesRecentUtilizationNotTheLastInstant) {
  UseScenarioText("[[gpu]]\ncount = 2\n");
  std::string config = dir_.Write("agent.toml", "[sampler]\nfast_interval = \"200ms\"\n");
  Child* load = StartLoad("0", {"--memory", "1GiB", "--util", "90"});
  StartAgent({"--config", config});
  for (int i = 0; i < 100 && AgentTicks() < 10; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_GE(AgentTicks(), 10);
  load->KillAndWait(SIGKILL);
  ASSERT_TRUE(WaitForStatus([](const json& j) {
    return j["gpus"][0]["utilization_gpu_ratio"] == 0 && j["gpus"][0]["processes"].empty();
  }));
  // Both GPUs are idle this instant; GPU 0 was busy for the last seconds.
  RunResult recent = Tarmac({"pick", "--socket", Socket(), "--window", "30", "--json"});
  EXPECT_EQ(recent.exit_code, 0) << recent.err;
  json chosen = json::parse(recent.out, nullptr, false);
  EXPECT_EQ(chosen["indices"], json::array({1})) << recent.out;
  EXPECT_NE(chosen["rejected"].dump().find("gpu 0: busy"), std::string::npos) << recent.out;
  RunResult both = Tarmac({"pick", "--socket", Socket(), "--window", "30", "--gpus", "2"});
  EXPECT_EQ(both.exit_code, 1) << both.out;
}

TEST_F(AgentTest, DriverUnloadedMidRunIsReportedAndTheAgentReattachesWhenItReturns) {
  UseScenarioText(R"(
[[gpu]]
count = 2
[[fault]]
kind = "driver_unloaded"
at = "2s"
[[fault]]
kind = "driver_loaded"
at = "5s"
)");
  std::string config =
      dir_.Write("agent.toml", "[sampler]\nfast_interval = \"200ms\"\nreattach_interval = \"300ms\"\n");
  StartLoad("1", {"--memory", "2GiB", "--util", "40"});
  StartAgent({"--config", config});
  ASSERT_EQ(AgentStatus()["gpus"][1]["processes"].size(), 1u);
  EXPECT_TRUE(WaitForStatus([](const json& j) {
    return j.contains("backend_error") && j["gpus"].size() == 2 &&
           j["gpus"][0]["health"] == "driver_not_loaded" && j["gpus"][1]["health"] == "driver_not_loaded";
  })) << ReadLog();
  json during = AgentStatus();
  EXPECT_NE(during["backend_error"].get<std::string>().find("Driver Not Loaded"), std::string::npos)
      << during;
  EXPECT_EQ(during["gpus"][1]["uuid"], AgentStatus()["gpus"][1]["uuid"]);  // The GPUs it knew stay listed.
  RunResult text = Tarmac({"status", "--socket", Socket()});
  EXPECT_NE(text.out.find("NO DRIVER"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("re-attaches when the driver is back"), std::string::npos) << text.out;
  // The driver comes back: the agent opens it again, with the GPUs and the
  // process that were there.
  EXPECT_TRUE(WaitForStatus([](const json& j) {
    return !j.contains("backend_error") && j["gpus"].size() == 2 && j["gpus"][1]["health"] == "ok" &&
           j["gpus"][1]["processes"].size() == 1;
  })) << ReadLog();
  EXPECT_NE(ReadLog().find("re-attached: 2 GPUs via nvml"), std::string::npos) << ReadLog();
  // The refused calls stay counted across the re-attach.
  std::regex refused(R"(tarmac_nvml_errors_total\{[^}]*error="DRIVER_NOT_LOADED"\} [1-9])");
  EXPECT_TRUE(std::regex_search(HttpGet("/metrics"), refused)) << HttpGet("/metrics");
}

TEST_F(AgentTest, StartsWithoutADriverAndAttachesWhenItLoads) {
  UseScenarioText(R"(
[driver]
loaded = false
[[gpu]]
count = 2
[[fault]]
kind = "driver_loaded"
at = "3s"
)");
  std::string config =
      dir_.Write("agent.toml", "[sampler]\nfast_interval = \"200ms\"\nreattach_interval = \"300ms\"\n");
  StartAgent({"--config", config});
  json before = AgentStatus();
  EXPECT_TRUE(before.contains("backend_error")) << before;
  EXPECT_EQ(before["gpus"].size(), 0u);
  EXPECT_NE(ReadLog().find("ready without GPUs"), std::string::npos) << ReadLog();
  EXPECT_TRUE(WaitForStatus([](const json& j) {
    return !j.contains("backend_error") && j["gpus"].size() == 2 && j["gpus"][0]["health"] == "ok";
  })) << ReadLog();
}

TEST_F(AgentTest, XidErrorsAreCountedPerGpuByTheEventsThread) {
  UseScenarioText(R"(
[[gpu]]
count = 3
[[fault]]
kind = "xid"
gpu = 2
at = "1s"
xid = 13
[[fault]]
kind = "xid"
gpu = 2
at = "2s"
xid = 48
)");
  StartAgent();
  EXPECT_TRUE(WaitForStatus([](const json& j) {
    return j["gpus"][2].contains("xid_errors") && j["gpus"][2]["xid_errors"]["count"] == 2;
  })) << ReadLog();
  json after = AgentStatus();
  EXPECT_EQ(after["gpus"][2]["xid_errors"]["last_xid"], 48);
  EXPECT_FALSE(after["gpus"][0].contains("xid_errors"));
  EXPECT_NE(ReadLog().find("gpu 2: Xid 48"), std::string::npos) << ReadLog();
  RunResult text = Tarmac({"status", "--socket", Socket()});
  // Each code once, not the last code and a count.
  EXPECT_NE(text.out.find("Xid 13, 48"), std::string::npos) << text.out;
  EXPECT_EQ(after["gpus"][2]["xid_errors"]["count_by_code"], json({{"13", 1}, {"48", 1}}));
  EXPECT_EQ(after["gpus"][2]["verdict"], "drain");

  // Restarted, the agent goes on counting the Xids its history holds since
  // the host booted: GPU 2 is still to drain, saying why.
  Child* first = agents_.back().get();
  first->KillAndWait(SIGTERM);  // A clean stop folds the minute in progress.
  StartAgent();
  EXPECT_TRUE(WaitForStatus([](const json& j) { return j["gpus"][2]["verdict"] == "drain"; })) << ReadLog();
  json restarted = AgentStatus();
  EXPECT_EQ(restarted["gpus"][2]["xid_errors_before_restart"], json({{"13", 1}, {"48", 1}}))
      << restarted.dump();
  EXPECT_EQ(restarted["gpus"][2]["verdict_reasons"], json({"Xid 48 (logged before the agent restarted)"}));
  // An admin vouches for it (a reset): its Xids count no more, now and after
  // the next restart.
  RunResult undrain = Tarmac({"undrain", "2", "--socket", Socket()});
  ASSERT_EQ(undrain.exit_code, 0) << undrain.err;
  EXPECT_TRUE(WaitForStatus([](const json& j) { return j["gpus"][2]["verdict"] == "ok"; })) << ReadLog();
  agents_.back()->KillAndWait(SIGTERM);
  StartAgent();
  EXPECT_TRUE(WaitForStatus([](const json& j) { return j["gpus"].size() == 3; }));
  EXPECT_EQ(AgentStatus()["gpus"][2]["verdict"], "ok") << AgentStatus().dump();
}

TEST_F(AgentTest, AScenarioErrorStillStopsTheAgentAtStart) {
  UseScenarioText("[[gpu]]\ncount = \"many\"\n");
  Child agent({BinDir() + "/tarmac", "agent", "--backend", "sim", "--scenario", scenario_, "--socket",
               Socket(), "--http-listen", "127.0.0.1:0", "--state-dir", dir_.path() + "/state"},
              Env(), Log());
  int code = agent.Wait();
  EXPECT_NE(code, 0);
  EXPECT_NE(ReadLog().find("count"), std::string::npos) << ReadLog();
}

}  // namespace
}  // namespace tarmac::testing
