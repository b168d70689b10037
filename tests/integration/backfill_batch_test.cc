// SPDX-License-Identifier: Apache-2.0
//
// Backfill batches end to end, with a real agent, real runner and engine
// processes (tarmac-simengine on the simulated GPUs) and real signals: a
// batch finishes with every custom_id once; a real `tarmac run` preempts it
// and the batch then finishes without a repeat; kill -9 of the runner and
// of the engine loses nothing; a missing model, an engine that is down, a
// flaky engine and a bad batch file each get what they should.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>

#include "testutil/lease_fixture.h"

namespace tarmac::testing {
namespace {

using nlohmann::json;

class BackfillBatchTest : public LeaseFixture {
 public:
  void SetUp() override { UseScenarioText("[[gpu]]\ncount = 2\n"); }
  void TearDown() override {
    for (const std::string& m : mounts_) ::umount2(m.c_str(), MNT_DETACH);
    // Runners and engines outlive the agent by design: end this test's.
    RunCommand({"pkill", "-KILL", "-f", dir_.path() + "/"}, {}).exit_code;
    RunCommand({"pkill", "-KILL", "-f", "tarmac-backfill-runner --dir " + dir_.path()}, {}).exit_code;
  }

  std::vector<std::string> mounts_;

  Child* Start() { return StartLeaseAgent("[backfill]\nidle_for = \"0s\"\ngrace = \"3s\"\n"); }

  std::string Batch(int n, const std::string& name = "in.jsonl") {
    std::string text;
    for (int i = 1; i <= n; ++i)
      text += "{\"custom_id\":\"r" + std::to_string(i) + "\",\"prompt\":\"question " + std::to_string(i) +
              "\"}\n";
    return dir_.Write(name, text);
  }

  std::string Engine(const std::string& flags = "") {
    return BinDir() + "/tarmac-simengine --port {port} --sim-dir " + dir_.path() + "/world " + flags;
  }

  RunResult Submit(const std::string& file, const std::vector<std::string>& extra) {
    std::vector<std::string> args = {"submit", file, "--model", "sim-model"};
    args.insert(args.end(), extra.begin(), extra.end());
    return B(args);
  }

  // `tarmac backfill ...` against this agent.
  RunResult B(std::vector<std::string> args) {
    args.insert(args.begin(), "backfill");
    args.insert(args.end(), {"--socket", Socket()});
    return Tarmac(args);
  }

  json Get(int64_t id) { return Call("backfill.get", {{"id", id}})["batch"]; }

  bool WaitForState(int64_t id, const std::string& state, int tries = 600) {
    return WaitFor([&] { return Get(id).value("state", "") == state; }, tries);
  }

  // The custom_ids of a results file, in order; each line checked whole.
  std::vector<std::string> Ids(const std::string& path) {
    std::vector<std::string> ids;
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) {
      json j = json::parse(line, nullptr, false);
      EXPECT_TRUE(j.is_object()) << line;
      if (!j.is_object()) continue;
      ids.push_back(j["custom_id"].get<std::string>());
    }
    return ids;
  }

  // The value of the sample of `family` (its name and "{") whose line holds
  // `label`; -1 when none.
  static double Metric(const std::string& page, const std::string& family, const std::string& label) {
    for (size_t at = page.find("\n" + family); at != std::string::npos;
         at = page.find("\n" + family, at + 1)) {
      size_t end = page.find('\n', at + 1);
      std::string line = page.substr(at + 1, end - at - 1);
      if (line.find(label) != std::string::npos) return std::stod(line.substr(line.rfind(' ') + 1));
    }
    return -1;
  }

  void ExpectComplete(const std::string& results, int n) {
    std::vector<std::string> ids = Ids(results);
    std::set<std::string> unique(ids.begin(), ids.end());
    EXPECT_EQ(ids.size(), unique.size()) << "a custom_id was written twice";
    EXPECT_EQ(static_cast<int>(unique.size()), n);
  }
};

TEST_F(BackfillBatchTest, ABatchRunsOnIdleGpusAndWritesEveryAnswerOnce) {
  Start();
  std::string in = Batch(60);
  RunResult r = Submit(in, {"--engine-command", Engine("--latency-ms 10"), "--gpus", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("batch 1 submitted: 60 requests for sim-model"), std::string::npos) << r.out;
  ASSERT_TRUE(WaitForState(1, "done")) << Get(1).dump();
  std::string results = dir_.path() + "/in.results.jsonl";
  ExpectComplete(results, 60);
  // Each answer is the engine's, for its own prompt: two prompts, two texts.
  std::ifstream file(results);
  std::set<std::string> texts;
  std::string line;
  while (std::getline(file, line)) {
    json j = json::parse(line);
    EXPECT_EQ(j["response"]["status_code"], 200);
    texts.insert(j["response"]["body"]["choices"][0]["text"].get<std::string>());
  }
  EXPECT_EQ(texts.size(), 60u);
  json b = Get(1);
  EXPECT_EQ(b["progress"]["done"], 60);
  EXPECT_EQ(b["progress"]["failed"], 0);
  EXPECT_GT(b["progress"]["gpu_seconds"].get<double>(), 0);
  EXPECT_EQ(b["progress"]["completion_tokens"], 60 * 16);
  RunResult status = B({"status", "1"});
  EXPECT_NE(status.out.find("batch 1 done: 60/60 (100%)"), std::string::npos) << status.out;
  // /metrics counts the batch, its requests and its tokens.
  std::string page = HttpGet("/metrics");
  EXPECT_EQ(Metric(page, "tarmac_backfill_batches{", "state=\"done\""), 1) << page;
  EXPECT_EQ(Metric(page, "tarmac_backfill_batches{", "state=\"running\""), 0) << page;
  EXPECT_EQ(Metric(page, "tarmac_backfill_requests_total{", "outcome=\"done\""), 60) << page;
  EXPECT_EQ(Metric(page, "tarmac_backfill_requests_total{", "outcome=\"failed\""), 0) << page;
  EXPECT_EQ(Metric(page, "tarmac_backfill_completion_tokens_total{", ""), 60 * 16) << page;
  // Each step is an event.
  std::vector<std::string> kinds = EventKinds(0);
  EXPECT_TRUE(Has(kinds, "batch_submitted")) << Events().dump();
  EXPECT_TRUE(Has(kinds, "batch_done")) << Events().dump();
  // The engines are gone, and so is their memory.
  ASSERT_TRUE(WaitFor([&] { return Leases().empty(); }));
  EXPECT_TRUE(WaitForStatus([](const json& s) {
    for (const json& g : s["gpus"]) {
      if (!g["processes"].empty()) return false;
    }
    return true;
  }));
}

// An agent given its simulated world by flags only (none in its
// environment) hands it to the runner and, through it, to the engines: an
// engine started without --scenario or --sim-dir serves on the same world.
TEST_F(BackfillBatchTest, AnAgentStartedWithASimWorldByFlagsHandsItToItsEngines) {
  std::string config = dir_.Write("agent.toml",
                                  "[sampler]\nfast_interval = \"200ms\"\n[backfill]\nidle_for = \"0s\"\n"
                                  "[doctor]\nenabled = false\n");
  std::map<std::string, std::string> env = {
      {"TARMAC_SIM_SCENARIO", "<unset>"}, {"TARMAC_SIM_DIR", "<unset>"}, {"TARMAC_SIM_NOW", "<unset>"}};
  Child agent({BinDir() + "/tarmac", "agent", "--backend", "sim", "--scenario", scenario_, "--sim-dir",
               dir_.path() + "/agent-world", "--socket", Socket(), "--http-listen", "127.0.0.1:0",
               "--state-dir", dir_.path() + "/state", "--config", config},
              env, Log());
  ASSERT_TRUE(WaitUntilServing()) << ReadLog();
  std::string in = Batch(5);
  RunResult r = Submit(in, {"--engine-command", BinDir() + "/tarmac-simengine --port {port}", "--gpus", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_TRUE(WaitForState(1, "done")) << Get(1).dump() << ReadLog();
  ExpectComplete(dir_.path() + "/in.results.jsonl", 5);
  // The engines ran in the agent's world: their loads were registered there.
  EXPECT_TRUE(std::filesystem::exists(dir_.path() + "/agent-world/loads"));
  agent.KillAndWait(SIGTERM);
}

// While a batch waits, `backfill status` says per GPU why backfill has not
// started there and when it will; an agent restarted counts each GPU's idle
// time on from the history instead of from its own start.
TEST_F(BackfillBatchTest, AWaitingBatchSaysPerGpuWhyAndIdleTimeSurvivesARestart) {
  const std::string config = "[backfill]\nidle_for = \"1h\"\n";
  Child* first = StartLeaseAgent(config);
  std::this_thread::sleep_for(std::chrono::seconds(3));
  first->KillAndWait(SIGTERM);  // A clean stop writes the minute in progress.
  StartLeaseAgent(config);
  RunResult r = Submit(Batch(3), {"--engine-command", Engine(), "--gpus", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json gpus = Call("backfill.gpus")["gpus"];
  ASSERT_EQ(gpus.size(), 2u) << gpus.dump();
  for (const json& g : gpus) {
    EXPECT_FALSE(g["accepts"].get<bool>());
    EXPECT_NE(g["why"].get<std::string>().find(" of idle_for 1h"), std::string::npos) << g.dump();
    // Idle since before the restart: at least the first agent's 3 s.
    EXPECT_GE(3600 - g["starts_in_seconds"].get<double>(), 3) << g.dump();
  }
  RunResult status = B({"status", "1"});
  ASSERT_EQ(status.exit_code, 0) << status.err;
  EXPECT_NE(status.out.find("GPU 0: idle "), std::string::npos) << status.out;
  EXPECT_NE(status.out.find("GPU 1: idle "), std::string::npos) << status.out;
  EXPECT_NE(status.out.find("; starts at "), std::string::npos) << status.out;
  EXPECT_NE(ReadLog().find("backfill: idle time of 2 GPU(s) counted from the history"), std::string::npos);
}

TEST_F(BackfillBatchTest, ARealRunPreemptsTheBatchWhichThenFinishesWithoutARepeat) {
  Child* agent = Start();
  std::string in = Batch(500);
  ASSERT_EQ(Submit(in, {"--engine-command", Engine("--latency-ms 30"), "--gpus", "2"}).exit_code, 0);
  ASSERT_TRUE(WaitFor([&] {
    json p = Get(1)["progress"];
    return p.value("gpus_held", 0) == 2 && p.value("done", 0) >= 40;
  })) << Get(1).dump();
  // GPU time counts while the leases run, not only once they end.
  ASSERT_TRUE(WaitFor([&] { return Get(1)["progress"].value("gpu_seconds", 0.0) > 0; })) << Get(1).dump();
  EXPECT_EQ(Get(1)["progress"]["gpus_held"], 2);
  json status = AgentStatus();
  EXPECT_EQ(status["gpus"][0]["lease"]["kind"], "backfill") << status.dump();
  RunResult text = T({"status"});
  EXPECT_NE(text.out.find("backfill lease"), std::string::npos) << text.out;
  // The runner the agent started holds them: they yield at notice, and a
  // real request revokes them before any plain backfill command's.
  RunResult leases = T({"leases", "--json"});
  ASSERT_EQ(leases.exit_code, 0) << leases.err;
  json listed = json::parse(leases.out);
  ASSERT_EQ(listed["leases"].size(), 2u) << leases.out;
  for (const json& l : listed["leases"]) EXPECT_EQ(l["yields_at_notice"], true) << leases.out;
  std::string d = dir_.path();
  Child* run = StartRun({"--gpus", "2"}, {"sh", "-c", "touch " + d + "/ran"});
  ASSERT_TRUE(WaitFor([&] { return std::ifstream(d + "/ran").good(); })) << Get(1).dump();
  EXPECT_EQ(run->Wait(), 0);
  ASSERT_TRUE(WaitForState(1, "done")) << Get(1).dump();
  ExpectComplete(d + "/in.results.jsonl", 500);
  json b = Get(1);
  EXPECT_EQ(b["progress"]["preemptions"], 2) << b.dump();
  int preempting = 0;
  for (const json& e : Events()) preempting += e["kind"] == "preempting" ? 1 : 0;
  EXPECT_EQ(preempting, 2);
  // The history keeps it: each GPU's backfill time and its one preemption,
  // in `tarmac report` (a clean stop folds the minute in progress).
  agent->KillAndWait(SIGTERM);
  RunResult report =
      Tarmac({"report", "--db", dir_.path() + "/state/tarmac.db", "--since", "1h", "--format", "json"});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  json r = json::parse(report.out);
  ASSERT_EQ(r["gpus"].size(), 2u) << report.out;
  double held_seconds = b["progress"]["gpu_seconds"].get<double>();
  for (const json& g : r["gpus"]) {
    EXPECT_GT(g["backfill_hours"].get<double>(), 0) << report.out;
    EXPECT_EQ(g["backfill_preemptions"], 1) << report.out;
  }
  EXPECT_EQ(r["backfill_preemptions"], 2);
  // The sampled lease time agrees with the runner's own count of GPU time
  // (to a few samples per lease, or a quarter on a loaded machine).
  EXPECT_NEAR(r["backfill_hours"].get<double>() * 3600, held_seconds, std::max(4.0, held_seconds / 4))
      << report.out;
  RunResult by_gpu =
      Tarmac({"report", "--db", dir_.path() + "/state/tarmac.db", "--since", "1h", "--by", "gpu"});
  EXPECT_NE(by_gpu.out.find("backfill put"), std::string::npos) << by_gpu.out;
}

// Backfill yields the CPU as it yields the GPU: the runner and its engines
// run at [backfill] nice, and a reload's value holds for the next runner.
TEST_F(BackfillBatchTest, TheRunnerAndItsEnginesRunAtTheConfiguredNiceness) {
  Child* agent = StartLeaseAgent("[backfill]\nidle_for = \"0s\"\ngrace = \"3s\"\nnice = 7\n");
  // Field 19 of /proc/PID/stat, after the command's parenthesis.
  auto nice_of = [](int64_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::istringstream rest(stat.substr(stat.rfind(')') + 2));
    std::string field;
    for (int i = 3; i <= 19 && rest >> field; ++i) {
    }
    return field.empty() ? -100 : std::stoi(field);
  };
  auto engine_pids = [&] {
    std::vector<int64_t> pids;
    const json status = AgentStatus();
    for (const json& g : status["gpus"]) {
      for (const json& p : g["processes"]) pids.push_back(p["pid"].get<int64_t>());
    }
    return pids;
  };
  auto expect_nice = [&](int64_t batch, int nice) {
    ASSERT_TRUE(WaitFor([&] { return Get(batch)["progress"].value("gpus_held", 0) == 2; }))
        << Get(batch).dump();
    ASSERT_TRUE(WaitFor([&] { return engine_pids().size() == 2; })) << AgentStatus().dump();
    json runner = Get(batch)["progress"]["runner_pid"];
    ASSERT_TRUE(runner.is_number()) << Get(batch).dump();
    EXPECT_EQ(nice_of(runner.get<int64_t>()), nice);
    for (int64_t pid : engine_pids()) EXPECT_EQ(nice_of(pid), nice) << "engine " << pid;
  };
  std::string engine = Engine("--latency-ms 50");
  ASSERT_EQ(Submit(Batch(100000), {"--engine-command", engine, "--gpus", "2"}).exit_code, 0);
  expect_nice(1, 7);
  ASSERT_EQ(B({"cancel", "1"}).exit_code, 0);
  ASSERT_TRUE(WaitFor([&] { return Leases().empty() && engine_pids().empty(); })) << AgentStatus().dump();
  dir_.Write("agent.toml",
             "[sampler]\nfast_interval = \"200ms\"\n[leases]\nkill_grace = \"1s\"\n"
             "[backfill]\nidle_for = \"0s\"\ngrace = \"3s\"\nnice = 12\n[doctor]\nenabled = false\n");
  ::kill(agent->pid(), SIGHUP);
  ASSERT_TRUE(WaitFor([&] {
    return ReadLog().find("config reloaded: applied [backfill]") != std::string::npos;
  })) << ReadLog();
  ASSERT_EQ(Submit(Batch(100000, "second.jsonl"), {"--engine-command", engine, "--gpus", "2"}).exit_code, 0);
  expect_nice(2, 12);
}

TEST_F(BackfillBatchTest, KillNineOfTheRunnerAndOfTheEngineLosesNoResultAndRepeatsNone) {
  Start();
  std::string in = Batch(1500);
  ASSERT_EQ(Submit(in, {"--engine-command", Engine("--latency-ms 20"), "--concurrency", "4"}).exit_code, 0);
  // The runner, twice, at points the seed picks.
  std::mt19937 rng(14);
  int64_t at = 40;
  for (int kill = 0; kill < 2; ++kill) {
    at += 100 + static_cast<int64_t>(rng() % 300);
    ASSERT_TRUE(WaitFor([&] { return Get(1)["progress"].value("done", int64_t{0}) >= at; })) << Get(1).dump();
    int64_t runner = Get(1)["progress"]["runner_pid"].get<int64_t>();
    ASSERT_GT(runner, 0);
    ASSERT_EQ(::kill(static_cast<pid_t>(runner), SIGKILL), 0);
    // Started again by the agent: a new runner makes progress.
    ASSERT_TRUE(WaitFor([&] {
      json p = Get(1)["progress"];
      return p.value("runner_pid", int64_t{0}) != runner && p.value("done", int64_t{0}) > at + 10;
    })) << Get(1).dump();
    at = Get(1)["progress"].value("done", int64_t{0});
  }
  // The engine, mid-batch.
  RunResult engines = RunCommand({"pgrep", "-f", "tarmac-simengine --port"}, {});
  ASSERT_FALSE(engines.out.empty());
  RunCommand({"pkill", "-KILL", "-f", "tarmac-simengine --port [0-9]+ --sim-dir " + dir_.path()}, {})
      .exit_code;
  ASSERT_TRUE(WaitForState(1, "done")) << Get(1).dump();
  ExpectComplete(dir_.path() + "/in.results.jsonl", 1500);
  EXPECT_TRUE(Ids(dir_.path() + "/in.errors.jsonl").empty());
}

TEST_F(BackfillBatchTest, TheRunnerOutlivesAKillNineOfTheAgentAndTheNewAgentAdoptsIt) {
  Child* agent = StartLeaseAgent("[backfill]\nidle_for = \"0s\"\n");
  std::string in = Batch(500);
  ASSERT_EQ(Submit(in, {"--engine-command", Engine("--latency-ms 20")}).exit_code, 0);
  ASSERT_TRUE(WaitFor([&] { return Get(1)["progress"].value("done", 0) >= 40; })) << Get(1).dump();
  int64_t runner = Get(1)["progress"]["runner_pid"].get<int64_t>();
  agent->KillAndWait(SIGKILL);
  EXPECT_TRUE(IsRunning(static_cast<pid_t>(runner))) << "the runner went with the agent";
  StartLeaseAgent("[backfill]\nidle_for = \"0s\"\n");
  EXPECT_TRUE(WaitForLog("batch 1: its runner (pid " + std::to_string(runner) + ") goes on")) << ReadLog();
  ASSERT_TRUE(WaitForState(1, "done")) << Get(1).dump();
  EXPECT_EQ(Get(1)["progress"]["runner_pid"], runner) << "a second runner was started";
  ExpectComplete(dir_.path() + "/in.results.jsonl", 500);
}

// A runner outlives its agent, but not the agent's state: once the batch's
// folder is gone (the state deleted, a demo cleaned up), it stops.
TEST_F(BackfillBatchTest, RegressionARunnerWhoseBatchFolderIsRemovedStops) {
  Child* agent = StartLeaseAgent("[backfill]\nidle_for = \"0s\"\n");
  std::string in = Batch(500);
  ASSERT_EQ(Submit(in, {"--engine-command", Engine("--latency-ms 50")}).exit_code, 0);
  ASSERT_TRUE(WaitFor([&] { return Get(1)["progress"].value("done", 0) >= 5; })) << Get(1).dump();
  auto runner = static_cast<pid_t>(Get(1)["progress"]["runner_pid"].get<int64_t>());
  agent->KillAndWait(SIGTERM);
  ASSERT_TRUE(IsRunning(runner));
  std::filesystem::remove_all(dir_.path() + "/state");
  EXPECT_TRUE(WaitFor([&] { return !IsRunning(runner); }, 300)) << "the runner asks a removed agent for ever";
}

TEST_F(BackfillBatchTest, AModelTheEngineDoesNotHaveFailsTheBatchSayingSo) {
  Start();
  std::string in = Batch(10);
  ASSERT_EQ(Submit(in, {"--engine-command", Engine("--model other")}).exit_code, 0);
  ASSERT_TRUE(WaitForState(1, "failed")) << Get(1).dump();
  std::string message = Get(1)["message"].get<std::string>();
  EXPECT_NE(message.find("no model \"sim-model\""), std::string::npos) << message;
  EXPECT_NE(message.find("other"), std::string::npos) << message;
  RunResult status = B({"status", "1"});
  EXPECT_EQ(status.exit_code, 1);
  EXPECT_TRUE(Ids(dir_.path() + "/in.results.jsonl").empty());
}

TEST_F(BackfillBatchTest, AnEngineThatIsDownIsSaidAndTheBatchPausesCleanly) {
  Start();
  std::string in = Batch(10);
  ASSERT_EQ(Submit(in, {"--url", "http://127.0.0.1:1"}).exit_code, 0);
  ASSERT_TRUE(WaitFor([&] {
    return Get(1)["progress"].value("problem", "").find("cannot connect") != std::string::npos;
  })) << Get(1).dump();
  RunResult list = B({"list"});
  EXPECT_NE(list.out.find("cannot connect"), std::string::npos) << list.out;
  RunResult pause = B({"pause", "1"});
  EXPECT_EQ(pause.exit_code, 0) << pause.err;
  ASSERT_TRUE(WaitFor([&] { return Get(1)["runner_pid"].is_null(); })) << Get(1).dump();
  EXPECT_EQ(Get(1)["state"], "paused");
  EXPECT_TRUE(Has(EventKinds(0), "batch_paused")) << Events().dump();
  // Only a paused or failed batch resumes; a cancelled one is over.
  EXPECT_EQ(B({"cancel", "1"}).exit_code, 0);
  RunResult again = B({"resume", "1"});
  EXPECT_EQ(again.exit_code, 2);
  EXPECT_NE(again.err.find("only a paused or failed batch resumes"), std::string::npos) << again.err;
}

TEST_F(BackfillBatchTest, AFlakyEngineIsRetriedAndEveryRequestStillFinishes) {
  Start();
  std::string in = Batch(80);
  ASSERT_EQ(Submit(in, {"--engine-command", Engine("--latency-ms 5 --fail-every 9"), "--max-retries", "8"})
                .exit_code,
            0);
  ASSERT_TRUE(WaitForState(1, "done")) << Get(1).dump();
  ExpectComplete(dir_.path() + "/in.results.jsonl", 80);
  EXPECT_GE(Get(1)["progress"]["retries"].get<int64_t>(), 8);
  EXPECT_TRUE(Ids(dir_.path() + "/in.errors.jsonl").empty());
}

TEST_F(BackfillBatchTest, AFullResultsDiskFailsTheBatchSayingSoAndResumeFinishesItWithNothingLost) {
  std::string out = dir_.path() + "/out";
  ::mkdir(out.c_str(), 0755);
  if (::mount("tarmac-test", out.c_str(), "tmpfs", 0, "size=256k") != 0)
    GTEST_SKIP() << "mounting a tmpfs needs root";
  mounts_.push_back(out);
  {
    std::ofstream filler(out + "/filler", std::ios::binary);
    filler << std::string(200 * 1024, 'x');
  }
  Start();
  std::string in = Batch(300);
  ASSERT_EQ(Submit(in, {"--engine-command", Engine("--latency-ms 1"), "-o", out + "/results.jsonl",
                        "--errors", out + "/errors.jsonl"})
                .exit_code,
            0);
  ASSERT_TRUE(WaitForState(1, "failed")) << Get(1).dump();
  std::string message = Get(1)["message"].get<std::string>();
  EXPECT_NE(message.find("free space"), std::string::npos) << message;
  EXPECT_NE(message.find("nothing was lost"), std::string::npos) << message;
  EXPECT_NE(message.find("tarmac backfill resume 1"), std::string::npos) << message;
  std::vector<std::string> before = Ids(out + "/results.jsonl");  // Whole lines only (checked).
  EXPECT_GT(before.size(), 0u);
  EXPECT_LT(before.size(), 300u);
  ::unlink((out + "/filler").c_str());
  RunResult resume = B({"resume", "1"});
  ASSERT_EQ(resume.exit_code, 0) << resume.err;
  ASSERT_TRUE(WaitForState(1, "done")) << Get(1).dump();
  ExpectComplete(out + "/results.jsonl", 300);
}

TEST_F(BackfillBatchTest, AHungRequestTimesOutAndAnEngineThatCrashesMidAnswerIsStartedAgain) {
  Start();
  // Every 25th request never answers (a 1 s timeout, then again); the 60th
  // kills the engine mid-stream (the runner starts another).
  std::string in = Batch(150);
  ASSERT_EQ(Submit(in, {"--engine-command", Engine("--latency-ms 2 --hang-every 25 --crash-after 60"),
                        "--request-timeout", "1", "--max-retries", "8"})
                .exit_code,
            0);
  ASSERT_TRUE(WaitForState(1, "done")) << Get(1).dump();
  ExpectComplete(dir_.path() + "/in.results.jsonl", 150);
  EXPECT_TRUE(Ids(dir_.path() + "/in.errors.jsonl").empty());
  EXPECT_GE(Get(1)["progress"]["retries"].get<int64_t>(), 2);
}

TEST_F(BackfillBatchTest, ARequestTheEngineRefusesGetsAnErrorLineWithItsInputLine) {
  Start();
  std::string in = dir_.Write("in.jsonl",
                              "{\"custom_id\":\"ok\",\"prompt\":\"a\"}\n"
                              "{\"custom_id\":\"bad\",\"url\":\"/v1/completions\",\"method\":\"POST\","
                              "\"body\":{\"model\":\"sim-model\",\"prompt\":\"b\",\"max_tokens\":-1}}\n");
  ASSERT_EQ(Submit(in, {"--engine-command", Engine()}).exit_code, 0);
  ASSERT_TRUE(WaitForState(1, "done")) << Get(1).dump();
  std::ifstream errors(dir_.path() + "/in.errors.jsonl");
  std::string line;
  ASSERT_TRUE(std::getline(errors, line));
  json e = json::parse(line);
  EXPECT_EQ(e["custom_id"], "bad");
  EXPECT_EQ(e["error"]["line"], 2) << line;
  EXPECT_EQ(Ids(dir_.path() + "/in.results.jsonl"), std::vector<std::string>{"ok"});
}

TEST_F(BackfillBatchTest, ABadBatchFileIsRefusedWithItsLineAndMakesNoBatch) {
  Start();
  std::string bad =
      dir_.Write("bad.jsonl", "{\"prompt\":\"a\"}\nnot json\n{\"prompt\":\"b\",\"custom_id\":\"line-1\"}\n");
  RunResult r = Submit(bad, {"--url", "http://127.0.0.1:1"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("bad.jsonl:2: not valid JSON"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("bad.jsonl:3:"), std::string::npos) << r.err;
  RunResult none = Submit(Batch(3), {});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.err.find("--url"), std::string::npos) << none.err;
  EXPECT_TRUE(Call("backfill.list")["batches"].empty());
}

}  // namespace
}  // namespace tarmac::testing
