// SPDX-License-Identifier: Apache-2.0
//
// Backfill leases through a real agent, with real processes and signals: a
// fleet filled by backfill, a real `tarmac run` arriving, the backfill told
// at once (its command gets SIGTERM), a command that stops in time and one
// that does not (ended by the agent after the grace), and the GPUs granted
// to the real request only once the backfill is gone.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <fstream>

#include "client/agent_client.h"
#include "client/lease_wait.h"
#include "testutil/lease_fixture.h"

namespace tarmac::testing {
namespace {

using nlohmann::json;

class BackfillTest : public LeaseFixture {
 public:
  void SetUp() override { UseScenarioText("[[gpu]]\ncount = 2\n"); }
  // Backfill commands that outlive the test (one ignores SIGTERM, and the
  // agent that would end it is stopped first) are killed: every one names
  // this test's private directory.
  void TearDown() override {
    std::string pattern = dir_.path() + "/";
    RunResult r = RunCommand({"pkill", "-KILL", "-f", pattern}, {});
    (void)r;
  }

  // The seq of the first event of `kind` for `lease`; -1 when none.
  int64_t SeqOf(int64_t lease, const std::string& kind) {
    for (const json& e : Events()) {
      if (e["lease"] == lease && e["kind"] == kind) return e["seq"].get<int64_t>();
    }
    return -1;
  }

  bool Exists(const std::string& name) { return std::ifstream(dir_.path() + "/" + name).good(); }
};

TEST_F(BackfillTest, ARealRunOnAFullyBackfilledFleetGetsTheGpusOnceTheBackfillHasYielded) {
  StartLeaseAgent("[backfill]\ngrace = \"2s\"\nidle_for = \"0s\"\n");
  std::string d = dir_.path();
  // One backfill command stops when told; the other ignores SIGTERM.
  Child* polite = StartRun({"--priority", "backfill"},
                           {"sh", "-c",
                            "trap 'echo told > " + d + "/polite.told; exit 0' TERM; touch " + d +
                                "/polite.up; while :; do sleep 0.1; done"},
                           {}, "polite.err");
  ASSERT_TRUE(WaitFor([&] { return Leases().size() == 1 && Exists("polite.up"); }));
  Child* stubborn =
      StartRun({"--priority", "backfill"},
               {"sh", "-c", "trap '' TERM; touch " + d + "/stubborn.up; while :; do sleep 0.1; done"}, {},
               "stubborn.err");
  ASSERT_TRUE(WaitFor([&] { return Leases().size() == 2 && Exists("stubborn.up"); }));
  json leases = Leases();
  for (const json& l : leases) EXPECT_EQ(l["priority"], "backfill") << l.dump();
  int64_t polite_id = 1, stubborn_id = 2;

  // A real request for both GPUs: it waits while both are revoked, then runs.
  RunResult r = T({"run", "--gpus", "2", "--", "sh", "-c", "echo $CUDA_VISIBLE_DEVICES"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(","), std::string::npos) << r.out;  // Two GPUs.

  // The polite command heard at once and stopped; its run exits 0 and says why.
  EXPECT_TRUE(Exists("polite.told"));
  EXPECT_EQ(WEXITSTATUS(polite->Wait()), 0);
  std::ifstream polite_err(d + "/polite.err");
  std::string said((std::istreambuf_iterator<char>(polite_err)), std::istreambuf_iterator<char>());
  EXPECT_NE(said.find("revoked for another request"), std::string::npos) << said;
  // The stubborn one was ended by the agent after the grace, its processes killed.
  int stubborn_status = stubborn->Wait();
  EXPECT_NE(stubborn_status, 0);

  std::vector<std::string> polite_events = EventKinds(polite_id);
  std::vector<std::string> stubborn_events = EventKinds(stubborn_id);
  EXPECT_TRUE(Has(polite_events, "preempting")) << json(polite_events).dump();
  EXPECT_TRUE(Has(polite_events, "released")) << json(polite_events).dump();
  EXPECT_FALSE(Has(polite_events, "preempted")) << json(polite_events).dump();
  EXPECT_TRUE(Has(stubborn_events, "preempting")) << json(stubborn_events).dump();
  EXPECT_TRUE(Has(stubborn_events, "preempted")) << json(stubborn_events).dump();
  // The real request (lease 3) was granted after both backfill leases ended.
  int64_t granted = SeqOf(3, "granted");
  ASSERT_GT(granted, 0);
  EXPECT_GT(granted, SeqOf(polite_id, "released"));
  EXPECT_GT(granted, SeqOf(stubborn_id, "preempted"));
  EXPECT_LT(SeqOf(stubborn_id, "preempting"), SeqOf(stubborn_id, "preempted"));
  EXPECT_TRUE(WaitFor([&] { return Leases().empty() && Queue().empty(); }));

  // /metrics counts both revocations and the GPU-seconds backfill held.
  std::string page = HttpGet("/metrics");
  // The value of the first sample line of `family`; -1 when none.
  auto value = [&page](const std::string& family) {
    size_t at = page.find("\n" + family + "{");
    if (at == std::string::npos) return -1.0;
    size_t end = page.find('\n', at + 1);
    std::string line = page.substr(at + 1, end - at - 1);
    return std::stod(line.substr(line.rfind(' ') + 1));
  };
  EXPECT_EQ(value("tarmac_backfill_preemptions_total"), 2) << page;
  EXPECT_GT(value("tarmac_backfill_gpu_seconds_total"), 2.0) << page;  // Two GPUs, each over a second.
  EXPECT_EQ(value("tarmac_lease_queue_length"), 0) << page;
}

TEST_F(BackfillTest, RegressionADetachedStoppedBackfillProcessIsKilledAndTheRealJobStartsOnAnEmptyGpu) {
  UseScenarioText("[[gpu]]\ncount = 1\nmemory = \"80GiB\"\n");
  StartLeaseAgent("[backfill]\ngrace = \"2s\"\nidle_for = \"0s\"\n");
  std::string d = dir_.path();
  // The backfill command ignores SIGTERM and leaves a child that dropped
  // the lease token and its session, holding 60 GiB, then stopped.
  Child* backfill = StartRun({"--priority", "backfill"},
                             {"sh", "-c",
                              "setsid env -u TARMAC_LEASE_TOKEN " + BinDir() +
                                  "/tarmac-simload --memory 60GiB --pattern idle & echo $! > " + d +
                                  "/child.pid; trap '' TERM; while :; do sleep 0.1; done"},
                             {}, "backfill.err");
  ASSERT_TRUE(WaitFor([&] { return Exists("child.pid") && Leases().size() == 1; }));
  std::ifstream pid_file(d + "/child.pid");
  pid_t child = 0;
  pid_file >> child;
  ASSERT_GT(child, 0);
  // Killed whatever happens: its command line does not name this test's folder.
  struct Reaper {
    pid_t pid;
    ~Reaper() {
      std::ifstream cmdline("/proc/" + std::to_string(pid) + "/cmdline");
      std::string text((std::istreambuf_iterator<char>(cmdline)), std::istreambuf_iterator<char>());
      if (text.find("tarmac-simload") != std::string::npos) ::kill(pid, SIGKILL);
    }
  } reaper{child};
  ASSERT_TRUE(WaitForLoad(sim_dir_, child));
  ASSERT_EQ(::kill(child, SIGSTOP), 0);
  ASSERT_TRUE(WaitFor([&] { return !AgentStatus()["gpus"][0]["processes"].empty(); }))
      << AgentStatus().dump();
  // The real job lists what the GPU runs the moment it starts: nothing.
  RunResult r = T({"run", "--gpus", "1", "--", BinDir() + "/tarmac", "query", "--backend", "sim",
                   "--no-agent", "--query-compute-apps=pid,used_memory", "--format=csv,noheader"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "") << "the real job started beside the backfill's process";
  EXPECT_FALSE(IsRunning(child)) << "the detached child outlived its lease";
  // Its processes were killed at the grace's end; the lease then ended (by
  // the agent, or by its client once its command was gone), and only then
  // was the GPU granted.
  std::vector<std::string> kinds = EventKinds(1);
  EXPECT_TRUE(Has(kinds, "sigkill")) << json(kinds).dump();
  int64_t ended = std::max(SeqOf(1, "preempted"), SeqOf(1, "released"));
  EXPECT_GT(ended, SeqOf(1, "sigkill")) << json(kinds).dump();
  EXPECT_GT(SeqOf(2, "granted"), ended);
  backfill->Wait();
}

TEST_F(BackfillTest, ALeaseRevokedBetweenSamplesEndsWhenItsGraceEndsNotAtTheNextSample) {
  // One sample a minute: the agent samples at start, and then only the
  // readings the revocation asks for (in its grace, while no process of
  // the lease is listed on its GPU).
  std::string config =
      dir_.Write("agent.toml",
                 "[sampler]\nfast_interval = \"60s\"\nslow_interval = \"60s\"\n[leases]\nkill_grace = "
                 "\"1s\"\n[backfill]\ngrace = \"1s\"\nidle_for = \"0s\"\n");
  StartAgent({"--config", config});
  std::string d = dir_.path();
  for (const char* name : {"a", "b"}) {
    StartRun({"--priority", "backfill"},
             {"sh", "-c",
              std::string("trap '' TERM; touch ") + d + "/" + name + ".up; while :; do sleep 0.1; done"},
             {}, std::string(name) + ".err");
  }
  ASSERT_TRUE(WaitFor([&] { return Leases().size() == 2 && Exists("a.up") && Exists("b.up"); }));
  RunResult r = T({"run", "--gpus", "1", "--", "true"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> kinds;
  double revoked_at = 0;
  double ended_at = 0;
  for (const json& e : Events()) {
    kinds.push_back(e["kind"].get<std::string>());
    if (e["kind"] == "preempting") revoked_at = e["at_unix"].get<double>();
    if (e["kind"] == "preempted") ended_at = e["at_unix"].get<double>();
  }
  ASSERT_EQ(std::count(kinds.begin(), kinds.end(), "preempted"), 1) << json(kinds).dump();
  // Ended by its grace (1 s): not before, and not at the next sample a
  // minute on.
  EXPECT_GE(ended_at - revoked_at, 1.0);
  EXPECT_LT(ended_at - revoked_at, 30.0);
}

TEST_F(BackfillTest, BackfillStartsWhenAGpusSettleRunsOutNotAtTheNextSample) {
  // One sample a minute, settle 1 s: the agent samples at start, and a
  // backfill request that waits for the GPUs to settle is granted once
  // they have (a reading asked for then), not at the next sample.
  std::string config = dir_.Write("agent.toml",
                                  "[sampler]\nfast_interval = \"60s\"\nslow_interval = \"60s\"\n"
                                  "[backfill]\nidle_for = \"auto\"\nsettle = \"1s\"\n");
  StartAgent({"--config", config});
  RunResult r = T({"run", "--priority", "backfill", "--", "true"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  double queued_at = 0;
  double granted_at = 0;
  for (const json& e : Events()) {
    if (e["lease"] != 1) continue;
    if (e["kind"] == "queued") queued_at = e["at_unix"].get<double>();
    if (e["kind"] == "granted") granted_at = e["at_unix"].get<double>();
  }
  ASSERT_GT(queued_at, 0) << "it waited for the settle";
  ASSERT_GT(granted_at, 0);
  EXPECT_LT(granted_at - queued_at, 30.0) << "granted at the settle's end, not a minute on";
}

TEST_F(BackfillTest, BackfillCheckSaysWhatAFileHoldsOrEveryProblemWithItsLine) {
  std::string good = dir_.Write(
      "good.jsonl", "{\"prompt\":\"hi\"}\n{\"messages\":[{\"role\":\"user\",\"content\":\"yo\"}]}\n");
  RunResult r = Tarmac({"backfill", "check", good, "--model", "llama3.2"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("ok: 2 requests for model llama3.2"), std::string::npos) << r.out;
  r = Tarmac({"backfill", "check", good, "--model", "llama3.2", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json j = json::parse(r.out);
  EXPECT_EQ(j["requests"], 2);
  EXPECT_EQ(j["by_url"]["/v1/completions"], 1);
  // No model anywhere, and a broken line: both said, with their lines.
  std::string bad = dir_.Write("bad.jsonl", "{\"prompt\":\"hi\"}\n{oops\n");
  r = Tarmac({"backfill", "check", bad});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(bad + ":1: no model"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(bad + ":2: not valid JSON"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  r = Tarmac({"backfill", "check", dir_.path() + "/missing.jsonl"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("missing.jsonl: No such file"), std::string::npos) << r.err;
}

TEST_F(BackfillTest, BackfillStartsOnlyOnGpusIdleLongEnough) {
  StartLeaseAgent("[backfill]\nidle_for = \"1h\"\n");
  // A fresh agent has seen no GPU idle for an hour: backfill does not fit...
  RunResult r = T({"run", "--priority", "backfill", "--no-wait", "--", "true"});
  EXPECT_EQ(r.exit_code, 75) << r.err;
  // ...while real work does.
  r = T({"run", "--no-wait", "--", "true"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST_F(BackfillTest, AWatchedLeaseIsAnsweredWhenRevokedNotBefore) {
  StartLeaseAgent("[backfill]\ngrace = \"30s\"\nidle_for = \"0s\"\n");
  json granted = Call("lease.request", {{"gpus", 2}, {"priority", "backfill"}, {"kind", "reservation"}});
  ASSERT_EQ(granted["state"], "granted") << granted.dump();
  int64_t id = granted["lease"]["id"].get<int64_t>();
  // Nothing revokes it: the watch runs to its timeout and says so.
  json quiet = Call("lease.wait", {{"id", id}, {"watch", true}, {"timeout_ms", 300}});
  EXPECT_EQ(quiet["state"], "granted");
  EXPECT_TRUE(quiet["lease"]["revoke_by_unix"].is_null()) << quiet.dump();
  // A real request arrives while a client watches: the watch is answered
  // with the revocation, long before the 30 s grace ends.
  client::AgentClient agent(Socket());
  std::thread watcher_thread;
  Result<client::LeaseAnswer> heard = Status::Unavailable("not yet");
  watcher_thread = std::thread([&] { heard = agent.WatchLease(id, std::chrono::seconds(60)); });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  json asked = Call("lease.request", {{"gpus", 1}, {"kind", "reservation"}});
  EXPECT_EQ(asked["state"], "queued") << asked.dump();
  watcher_thread.join();
  ASSERT_TRUE(heard.ok()) << heard.status().ToString();
  EXPECT_TRUE(heard.value().is_granted());
  EXPECT_TRUE(client::IsRevoking(heard.value().lease)) << heard.value().lease.lease.id;
  EXPECT_EQ(asked["request"]["reason"].get<std::string>().find("position 1: backfill leases"), 0u)
      << asked.dump();
}

}  // namespace
}  // namespace tarmac::testing
