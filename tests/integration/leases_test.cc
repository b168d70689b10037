// SPDX-License-Identifier: Apache-2.0
//
// Leases through a real agent, with real processes and signals: tarmac run
// and reserve, the queue, the client killed, max-time, the agent killed
// mid-lease, idle-lease policies, zombies --kill, and authorization between
// two real non-root users the test creates.
#include <grp.h>
#include <gtest/gtest.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <regex>

#include "client/agent_client.h"
#include "client/lease_wait.h"
#include "common/proc_files.h"
#include "testutil/lease_fixture.h"

namespace tarmac::testing {
namespace {

using nlohmann::json;

class LeasesTest : public LeaseFixture {
 public:
  void SetUp() override { UseScenarioText("[[gpu]]\ncount = 2\n"); }
};

TEST_F(LeasesTest, RunSetsTheVisibleDevicesAndExitsWithTheCommandsStatus) {
  StartLeaseAgent();
  RunResult r = T({"run", "--gpus", "2", "--", "sh", "-c",
                   "echo \"$CUDA_VISIBLE_DEVICES|$NVIDIA_VISIBLE_DEVICES|$TARMAC_LEASE_ID\"; exit 7"});
  EXPECT_EQ(r.exit_code, 7) << r.err;
  std::string both = Uuid(0) + "," + Uuid(1);
  std::string other = Uuid(1) + "," + Uuid(0);
  std::string line = r.out.substr(0, r.out.find('\n'));
  std::string cvd = line.substr(0, line.find('|'));
  EXPECT_TRUE(cvd == both || cvd == other) << r.out;
  EXPECT_EQ(line, cvd + "|" + cvd + "|1") << r.out;
  EXPECT_TRUE(Leases().empty());
  std::vector<std::string> kinds = EventKinds(1);
  EXPECT_EQ(kinds, (std::vector<std::string>{"granted", "released"}));

  // Killed by a signal: 128 + N, as a shell reports it.
  r = T({"run", "--", "sh", "-c", "kill -USR1 $$"});
  EXPECT_EQ(r.exit_code, 128 + SIGUSR1) << r.err;
  // A command that does not exist: 127.
  r = T({"run", "--", dir_.path() + "/no-such-program"});
  EXPECT_EQ(r.exit_code, 127);
  EXPECT_NE(r.err.find("no-such-program"), std::string::npos) << r.err;
  EXPECT_TRUE(Leases().empty());
}

TEST_F(LeasesTest, TheLeaseLastsUntilEveryDescendantHasExited) {
  StartLeaseAgent();
  // The command exits at once, leaving a grandchild that holds on for a while.
  std::string marker = dir_.path() + "/grandchild-done";
  Child* run = StartRun({}, {"sh", "-c", "(sleep 1; touch " + marker + ") & exit 0"});
  ASSERT_TRUE(WaitFor([&] { return !Leases().empty(); }));
  int status = run->Wait();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  struct stat st {};
  EXPECT_EQ(::stat(marker.c_str(), &st), 0) << "tarmac run returned before the grandchild finished";
  EXPECT_TRUE(Leases().empty());
}

TEST_F(LeasesTest, NoWaitExits75AndTheQueueServesInOrderWithReasons) {
  StartLeaseAgent();
  RunResult reserved = T({"reserve", "--gpus", "2", "--for", "1h", "--json"});
  ASSERT_EQ(reserved.exit_code, 0) << reserved.err;
  int64_t reservation = json::parse(reserved.out)["id"].get<int64_t>();

  RunResult r = T({"run", "--no-wait", "--", "true"});
  EXPECT_EQ(r.exit_code, 75);
  EXPECT_NE(r.err.find("no GPUs fit now"), std::string::npos) << r.err;
  EXPECT_TRUE(Queue().empty()) << "--no-wait must not leave a request queued";

  std::string out = dir_.path() + "/job.out";
  Child* first = StartRun({"--gpus", "2"}, {"sh", "-c", "echo first >> " + out});
  ASSERT_TRUE(WaitFor([&] { return Queue().size() == 1; }));
  Child* second = StartRun({"--gpus", "1"}, {"sh", "-c", "echo second >> " + out});
  ASSERT_TRUE(WaitFor([&] { return Queue().size() == 2; }));
  json queue = Queue();
  EXPECT_EQ(queue[0]["position"], 1);
  EXPECT_EQ(queue[0]["gpus"], 2);
  EXPECT_NE(queue[0]["reason"].get<std::string>().find("needs 2 GPUs, 0 free now"), std::string::npos)
      << queue.dump(2);
  EXPECT_EQ(queue[1]["position"], 2);
  RunResult text = T({"queue"});
  EXPECT_NE(text.out.find("needs 2 GPUs"), std::string::npos) << text.out;

  RunResult released = T({"release", std::to_string(reservation)});
  EXPECT_EQ(released.exit_code, 0) << released.err;
  EXPECT_EQ(WEXITSTATUS(first->Wait()), 0);
  EXPECT_EQ(WEXITSTATUS(second->Wait()), 0);
  std::string order;
  ReadSmallFile(out, &order);
  EXPECT_EQ(order, "first\nsecond\n");
  EXPECT_TRUE(Queue().empty());
  EXPECT_TRUE(Leases().empty());
}

// Defect: a queued `run` printed its queue line every second into logs.
// Now: a line when the position changes, and one when it is granted.
TEST_F(LeasesTest, AQueuedRunWritesALinePerChangeNotPerSecond) {
  StartLeaseAgent();
  RunResult reserved = T({"reserve", "--gpus", "2", "--for", "1h", "--json"});
  ASSERT_EQ(reserved.exit_code, 0) << reserved.err;
  Child* run = StartRun({}, {"true"}, {}, "queued.err");
  ASSERT_TRUE(WaitFor([&] { return Queue().size() == 1; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));  // Several polls and ticks while queued.
  ASSERT_EQ(T({"release", std::to_string(json::parse(reserved.out)["id"].get<int64_t>())}).exit_code, 0);
  EXPECT_EQ(WEXITSTATUS(run->Wait()), 0);
  std::string err;
  ReadSmallFile(dir_.path() + "/queued.err", &err);
  size_t queued_lines = 0;
  for (size_t at = err.find("queued as request"); at != std::string::npos;
       at = err.find("queued as request", at + 1)) {
    ++queued_lines;
  }
  EXPECT_EQ(queued_lines, 1u) << err;
  // The lease and its GPU by index, once ("GPU GPU-…" said it twice).
  std::regex granted(R"(granted: lease [0-9]+, GPU [01]\n)");
  EXPECT_TRUE(std::regex_search(err, granted)) << err;
  EXPECT_EQ(err.find("GPU GPU-"), std::string::npos) << err;
}

TEST_F(LeasesTest, SignalsToRunGoToTheJobAndAnInterruptWhileQueuedCancels) {
  StartLeaseAgent();
  std::string got = dir_.path() + "/got";
  std::string ready = dir_.path() + "/ready";
  Child* run = StartRun({}, {"sh", "-c",
                             "trap 'echo TERM >> " + got + "; exit 5' TERM; touch " + ready +
                                 "; while :; do sleep 0.05; done"});
  ASSERT_TRUE(WaitFor([&] { return access(ready.c_str(), F_OK) == 0; }));
  kill(run->pid(), SIGTERM);
  int status = run->Wait();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 5) << status;
  std::string text;
  ReadSmallFile(got, &text);
  EXPECT_EQ(text, "TERM\n");
  EXPECT_TRUE(Leases().empty());

  // Queued behind a reservation, then interrupted: the request is cancelled.
  ASSERT_EQ(T({"reserve", "--gpus", "2", "--for", "1h"}).exit_code, 0);
  Child* queued = StartRun({}, {"true"});
  ASSERT_TRUE(WaitFor([&] { return Queue().size() == 1; }));
  kill(queued->pid(), SIGINT);
  status = queued->Wait();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 128 + SIGINT) << status;
  EXPECT_TRUE(Queue().empty());
  bool cancelled = false;
  for (const json& e : Events()) cancelled |= e["kind"] == "cancelled";
  EXPECT_TRUE(cancelled) << Events().dump(2);

  // Queued, then killed outright: the agent drops the request.
  Child* doomed = StartRun({}, {"true"});
  ASSERT_TRUE(WaitFor([&] { return Queue().size() == 1; }));
  int64_t doomed_id = Queue()[0]["id"].get<int64_t>();
  doomed->KillAndWait(SIGKILL);
  EXPECT_TRUE(WaitFor([&] { return Queue().empty(); }));
  EXPECT_EQ(EventKinds(doomed_id), (std::vector<std::string>{"queued", "client_gone"}));
}

TEST_F(LeasesTest, MultiGpuLeasesTakeGpusJoinedByNvLink) {
  // Two NVLink pairs, {0,1} and {2,3}, all on one NUMA node.
  UseScenarioText(
      "[[gpu]]\nnvlink = [1]\n[[gpu]]\nnvlink = [0]\n[[gpu]]\nnvlink = [3]\n[[gpu]]\nnvlink = [2]\n");
  StartLeaseAgent();
  ASSERT_EQ(T({"reserve", "--gpu", Uuid(1), "--for", "1h"}).exit_code, 0);
  // Free: 0, 2 and 3. Two GPUs come from the whole pair, not 0 and 2.
  RunResult r = T({"run", "--gpus", "2", "--", "sh", "-c", "echo $CUDA_VISIBLE_DEVICES"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string got = r.out.substr(0, r.out.find('\n'));
  EXPECT_TRUE(got == Uuid(2) + "," + Uuid(3) || got == Uuid(3) + "," + Uuid(2)) << got;
  // One GPU comes from the broken pair, keeping {2,3} whole.
  r = T({"run", "--gpus", "1", "--", "sh", "-c", "echo $CUDA_VISIBLE_DEVICES"});
  EXPECT_EQ(r.out, Uuid(0) + "\n");
}

TEST_F(LeasesTest, StatusAndPickKnowAboutLeases) {
  StartLeaseAgent();
  RunResult reserved = T({"reserve", "--gpu", Uuid(1), "--for", "1h", "--json"});
  ASSERT_EQ(reserved.exit_code, 0) << reserved.err;
  int64_t id = json::parse(reserved.out)["id"].get<int64_t>();
  json status = AgentStatus();
  EXPECT_FALSE(status["gpus"][0].contains("lease"));
  EXPECT_EQ(status["gpus"][1]["lease"]["id"], id);
  EXPECT_EQ(status["gpus"][1]["lease"]["kind"], "reservation");
  EXPECT_EQ(status["gpus"][1]["lease"]["revoking"], false);
  RunResult text = T({"status"});
  EXPECT_NE(text.out.find("lease " + std::to_string(id) + " (root)"), std::string::npos) << text.out;
  RunResult pick = T({"pick", "--gpus", "1", "--json"});
  ASSERT_EQ(pick.exit_code, 0) << pick.err;
  json choice = json::parse(pick.out);
  EXPECT_EQ(choice["indices"], json::array({0}));
  EXPECT_NE(choice["rejected"].dump().find("gpu 1: leased to root"), std::string::npos) << pick.out;
}

TEST_F(LeasesTest, KillingTheClientTerminatesTheJobAndEndsTheLease) {
  StartLeaseAgent();
  Child* run = StartRun({}, {BinDir() + "/tarmac-simload", "--memory", "1GiB", "--util", "30"});
  json leases;
  ASSERT_TRUE(WaitFor([&] {
    leases = Leases();
    return leases.size() == 1 && !leases[0]["job"].is_null();
  }));
  pid_t job = leases[0]["job"]["pid"].get<pid_t>();
  ASSERT_TRUE(IsRunning(job));
  run->KillAndWait(SIGKILL);
  EXPECT_TRUE(WaitFor([&] { return !IsRunning(job) && Leases().empty(); })) << ReadLog();
  std::vector<std::string> kinds = EventKinds(leases[0]["id"].get<int64_t>());
  EXPECT_TRUE(Has(kinds, "client_gone")) << Events().dump(2);
  EXPECT_TRUE(Has(kinds, "sigterm")) << Events().dump(2);
}

TEST_F(LeasesTest, MaxTimeSendsSigtermThenSigkillAfterTheGrace) {
  StartLeaseAgent();
  // Ignores SIGTERM (and its children inherit that): only SIGKILL ends it.
  // It exits 124, as timeout(1) does, and says so.
  RunResult r = T({"run", "--max-time", "1s", "--", "sh", "-c", "trap '' TERM; while :; do sleep 0.1; done"});
  EXPECT_EQ(r.exit_code, 124) << r.err;
  EXPECT_NE(r.err.find("--max-time reached"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("exit 124: the command ran out of its --max-time"), std::string::npos) << r.err;
  std::vector<std::string> kinds = EventKinds(1);
  EXPECT_EQ(kinds[0], "granted");
  EXPECT_TRUE(Has(kinds, "expired"));
  EXPECT_TRUE(Has(kinds, "sigterm"));
  EXPECT_TRUE(Has(kinds, "sigkill")) << Events().dump(2);
  EXPECT_TRUE(Leases().empty());

  // A job that honours SIGTERM ends with it.
  r = T({"run", "--max-time", "1s", "--", "sleep", "60"});
  EXPECT_EQ(r.exit_code, 124) << r.err;
  // A job that ends before its time keeps its own status.
  r = T({"run", "--max-time", "1h", "--", "sh", "-c", "exit 3"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
}

// GPUs by index as CUDA_VISIBLE_DEVICES names them, and the grant said once.
// The command's name once ("extend: extend: ..." said it twice).
TEST_F(LeasesTest, ExtendSaysWhyItRefusesOnce) {
  StartLeaseAgent();
  RunResult reserved = T({"reserve", "--gpus", "1", "--for", "1h", "--json"});
  ASSERT_EQ(reserved.exit_code, 0) << reserved.err;
  std::string id = std::to_string(json::parse(reserved.out)["id"].get<int64_t>());
  RunResult r = T({"extend", id, "--by", "40d"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("extend: a lease may end at most 30 days ahead"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("extend: extend:"), std::string::npos) << r.err;
}

TEST_F(LeasesTest, RunTakesGpuIndicesAsWellAsUuids) {
  StartLeaseAgent();
  RunResult r = T({"run", "--gpu", "1", "--", "sh", "-c", "echo $CUDA_VISIBLE_DEVICES"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, Uuid(1) + "\n");
  r = T({"run", "--gpu", "0," + Uuid(1), "--", "sh", "-c", "echo $CUDA_VISIBLE_DEVICES"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, Uuid(0) + "," + Uuid(1) + "\n");
  r = T({"run", "--gpu", "7", "--", "true"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("no GPU 7 here (GPUs 0 to 1)"), std::string::npos) << r.err;
}

TEST_F(LeasesTest, AfterKill9TheAgentRestoresLeasesAndQueueAndReattaches) {
  Child* agent = StartLeaseAgent();
  RunResult reserved = T({"reserve", "--gpus", "1", "--for", "1h", "--json"});
  ASSERT_EQ(reserved.exit_code, 0) << reserved.err;
  int64_t reservation = json::parse(reserved.out)["id"].get<int64_t>();
  std::string go = dir_.path() + "/go";
  Child* running = StartRun({}, {"sh", "-c", "while [ ! -e " + go + " ]; do sleep 0.05; done; exit 4"});
  ASSERT_TRUE(WaitFor([&] { return Leases().size() == 2; }));
  Child* queued = StartRun({"--gpus", "2"}, {"true"});
  ASSERT_TRUE(WaitFor([&] { return Queue().size() == 1; }));
  json before_leases = Leases();
  int64_t queued_id = Queue()[0]["id"].get<int64_t>();

  agent->KillAndWait(SIGKILL);
  StartLeaseAgent();
  json after = Leases();
  ASSERT_EQ(after.size(), 2u) << after.dump(2);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(after[i]["id"], before_leases[i]["id"]);
    EXPECT_EQ(after[i]["uuids"], before_leases[i]["uuids"]);
    EXPECT_EQ(after[i]["job"], before_leases[i]["job"]);
  }
  ASSERT_EQ(Queue().size(), 1u);
  EXPECT_EQ(Queue()[0]["id"], queued_id);
  EXPECT_NE(ReadLog().find("restored 2 leases"), std::string::npos) << ReadLog();

  // The re-attached job finishes normally; then the queue moves on.
  std::ofstream(go).put('\n');
  EXPECT_EQ(WEXITSTATUS(running->Wait()), 4);
  EXPECT_EQ(T({"release", std::to_string(reservation)}).exit_code, 0);
  EXPECT_EQ(WEXITSTATUS(queued->Wait()), 0);
  EXPECT_TRUE(Leases().empty());
}

TEST_F(LeasesTest, BadRequestsGetClearErrorsAndChangeNothing) {
  StartLeaseAgent();
  size_t events_before = Events().size();
  struct Case {
    std::vector<std::string> args;
    int exit_code;
    const char* says;
  };
  for (const Case& c : std::vector<Case>{
           {{"run", "--gpus", "0", "--", "true"}, 2, "gpus must be at least 1"},
           {{"run", "--gpus", "-3", "--", "true"}, 2, "gpus must be at least 1"},
           {{"run", "--gpus", "9", "--", "true"}, 2, "9 asked for, but this machine has 2"},
           {{"run", "--gpu", "GPU-nope", "--", "true"}, 2, "no such GPU"},
           {{"run", "--max-time", "400d", "--", "true"}, 2, "at most 30 days"},
           {{"run", "--max-time", "soon", "--", "true"}, 2, "--max-time"},
           {{"run", "--min-free-memory", "lots", "--", "true"}, 2, "--min-free-memory"},
           {{"reserve", "--gpus", "1", "--for", "0s"}, 2, "--for: must be positive"},
           {{"reserve", "--gpus", "1", "--for", "90"}, 2, "--for: 90: give a unit: 90m, 90s"},
           {{"run", "--max-time", "30", "--", "true"}, 2, "--max-time: 30: give a unit: 30m, 30s"},
           {{"release", "999"}, 1, "no lease or queued request 999"},
           {{"extend", "999", "--by", "1h"}, 1, "no lease 999"},
           {{"release", "abc"}, 2, "expected a lease id"},
       }) {
    RunResult r = T(c.args);
    EXPECT_EQ(r.exit_code, c.exit_code) << c.args[0] << " " << c.args[1] << ": " << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
  }
  EXPECT_TRUE(Leases().empty());
  EXPECT_TRUE(Queue().empty());
  EXPECT_EQ(Events().size(), events_before);
  // Without an agent: 69, and says so.
  RunResult r = Tarmac({"run", "--socket", dir_.path() + "/none.sock", "--", "true"});
  EXPECT_EQ(r.exit_code, 69);
  EXPECT_NE(r.err.find("is the agent running"), std::string::npos) << r.err;
}

TEST_F(LeasesTest, IdleLeasesAreWarnedThenActedOnByPolicy) {
  StartLeaseAgent(
      "idle_grace = \"1s\"\nidle_policy = \"warn\"\n"
      "[leases.idle_policy_by_priority]\nlow = \"release\"\nhigh = \"terminate\"\n");
  // Normal priority: warned, then kept.
  RunResult kept = T({"reserve", "--gpus", "1", "--for", "1h", "--idle-timeout", "1s", "--json"});
  ASSERT_EQ(kept.exit_code, 0) << kept.err;
  int64_t kept_id = json::parse(kept.out)["id"].get<int64_t>();
  // Low priority: released.
  RunResult low =
      T({"reserve", "--gpus", "1", "--for", "1h", "--idle-timeout", "1s", "--priority", "low", "--json"});
  ASSERT_EQ(low.exit_code, 0) << low.err;
  int64_t low_id = json::parse(low.out)["id"].get<int64_t>();
  EXPECT_TRUE(WaitFor([&] { return Has(EventKinds(low_id), "idle_released"); })) << Events().dump(2);
  EXPECT_TRUE(WaitFor([&] { return Has(EventKinds(kept_id), "idle_kept"); })) << Events().dump(2);
  EXPECT_TRUE(Has(EventKinds(kept_id), "idle_warning"));
  json leases = Leases();
  ASSERT_EQ(leases.size(), 1u);
  EXPECT_EQ(leases[0]["id"], kept_id);
  EXPECT_NE(leases[0]["warning"].get<std::string>().find("no SM activity"), std::string::npos);
  ASSERT_EQ(T({"release", std::to_string(kept_id)}).exit_code, 0);

  // High priority: a run whose job holds memory and computes nothing is
  // terminated (simload exits 0 on SIGTERM; it runs until signalled).
  RunResult idle = T({"run", "--priority", "high", "--idle-timeout", "1s", "--", BinDir() + "/tarmac-simload",
                      "--memory", "1GiB", "--util", "0"});
  EXPECT_EQ(idle.exit_code, 0) << idle.err;
  EXPECT_NE(idle.err.find("ended: idle for"), std::string::npos) << idle.err;
  json events = Events();
  int64_t run_id = events.back()["lease"].get<int64_t>();
  std::vector<std::string> kinds = EventKinds(run_id);
  EXPECT_TRUE(Has(kinds, "idle_warning"));
  EXPECT_TRUE(Has(kinds, "idle_terminated")) << events.dump(2);

  // A busy job is never warned.
  RunResult busy =
      T({"run", "--priority", "high", "--idle-timeout", "1s", "--", "sh", "-c",
         BinDir() + "/tarmac-simload --memory 1GiB --util 80 & pid=$!; sleep 3; kill $pid; wait $pid"});
  EXPECT_EQ(busy.exit_code, 0) << busy.err;
  int64_t busy_id = Events().back()["lease"].get<int64_t>();
  EXPECT_FALSE(Has(EventKinds(busy_id), "idle_warning")) << Events().dump(2);
}

TEST_F(LeasesTest, ReservePrintsTheLinesThatPutAShellInTheLease) {
  StartLeaseAgent();
  RunResult reserved = T({"reserve", "--gpus", "1", "--for", "1h"});
  ASSERT_EQ(reserved.exit_code, 0) << reserved.err;
  json lease = Leases()[0];
  std::string uuid = lease["uuids"][0].get<std::string>();
  std::string expected = "\nexport CUDA_VISIBLE_DEVICES=" + uuid + " NVIDIA_VISIBLE_DEVICES=" + uuid +
                         " TARMAC_LEASE_ID=" + std::to_string(lease["id"].get<int64_t>()) +
                         " TARMAC_LEASE_TOKEN=" + lease["token"].get<std::string>() + "\n";
  EXPECT_NE(reserved.out.find(expected), std::string::npos) << reserved.out;
  EXPECT_EQ(reserved.out.rfind("# tarmac lease ", 0), 0u) << reserved.out;
}

TEST_F(LeasesTest, TheShellOfAnIdleReservationShowsTheWarning) {
  StartLeaseAgent("idle_grace = \"60s\"\n");
  RunResult reserved = T({"reserve", "--gpus", "1", "--for", "1h", "--idle-timeout", "1s", "--json"});
  ASSERT_EQ(reserved.exit_code, 0) << reserved.err;
  std::string id = std::to_string(json::parse(reserved.out)["id"].get<int64_t>());
  // The shell's command runs until the test has seen the warning on its
  // terminal (stderr), then exits 3.
  std::string go = dir_.path() + "/go";
  std::string err = dir_.path() + "/shell.err";
  std::string out = dir_.path() + "/shell.out";
  children_.push_back(std::make_unique<Child>(
      std::vector<std::string>{
          BinDir() + "/tarmac", "shell", "--socket", Socket(), "--lease", id, "--", "sh", "-c",
          "echo $TARMAC_LEASE_ID > " + out + "; while [ ! -e " + go + " ]; do sleep 0.05; done; exit 3"},
      Env(), err));
  Child* shell = children_.back().get();
  std::string text;
  EXPECT_TRUE(WaitFor([&] {
    ReadSmallFile(err, &text);
    return text.find("tarmac: shell: warning: lease " + id + " idle for") != std::string::npos;
  })) << text;
  std::ofstream(go).put('\n');
  int status = shell->Wait();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 3) << status;
  ReadSmallFile(out, &text);
  EXPECT_EQ(text, id + "\n");
  EXPECT_EQ(Leases().size(), 1u) << "a reservation outlives its shell";
}

// A shell that took a reservation's variables (eval "$(tarmac reserve)")
// carries its token, and so does the `tarmac release` it runs: releasing
// ends the reservation and terminates the lease's other processes, never
// the caller or the shell above it (before: "Terminated", exit 143, no
// confirmation, and the shell gone).
TEST_F(LeasesTest, ReleaseFromTheReservationsOwnShellSparesTheCallerAndItsShell) {
  StartLeaseAgent();
  std::string tarmac = BinDir() + "/tarmac --socket " + Socket();
  RunResult r = RunCommand(
      {"/bin/sh", "-c",
       "eval \"$(" + tarmac + " reserve --gpus 1 --for 10m)\"; " + BinDir() +
           "/tarmac-simload --memory 1GiB --util 10 & job=$!; sleep 0.5; " + tarmac +
           " release; echo \"release exited $?\"; wait $job; echo \"job ended $?\"; echo shell alive"},
      Env());
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("released"), std::string::npos) << r.out << r.err;
  EXPECT_NE(r.out.find("release exited 0"), std::string::npos) << r.out << r.err;
  EXPECT_NE(r.out.find("job ended"), std::string::npos) << r.out << r.err;  // The lease's job was terminated.
  EXPECT_NE(r.out.find("shell alive"), std::string::npos) << r.out << r.err;
  EXPECT_TRUE(Leases().empty());
}

TEST_F(LeasesTest, ZombiesKillTerminatesAVerifiedZombieAndRecordsIt) {
  Child* idle = StartLoad("0", {"--memory", "2GiB", "--util", "0"});
  StartLeaseAgent("[zombies]\nmin_memory = \"1GiB\"\nidle_for = \"1s\"\ninclude_system_users = true\n");
  ASSERT_TRUE(WaitFor([&] { return !Call("zombies")["zombies"].empty(); }));
  RunResult r = T({"zombies", "--kill", "--pid", std::to_string(idle->pid())});
  EXPECT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("terminated: pid " + std::to_string(idle->pid())), std::string::npos) << r.out;
  EXPECT_EQ(idle->Wait(), 0);  // simload runs until signalled, and exits 0 on SIGTERM.
  bool found = false;
  for (const json& e : Events()) found |= e["kind"] == "zombie_terminated" && e["actor"] == "root";
  EXPECT_TRUE(found) << Events().dump(2);
  // Not a zombie (any more): not found, exit 1.
  r = T({"zombies", "--kill", "--pid", std::to_string(idle->pid() + 100000)});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("is not a zombie"), std::string::npos) << r.err;
}

// Two real users the test creates (and removes), and an admin group. Names
// carry the test process's pid, so tests running side by side do not share
// (or delete) each other's users.
class TwoUsersTest : public LeasesTest {
 public:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "creating users needs root";
    LeasesTest::SetUp();
    std::string prefix = "tm" + std::to_string(getpid());
    alice_ = prefix + "-alice";
    bob_ = prefix + "-bob";
    carol_ = prefix + "-carol";
    admins_ = prefix + "-admins";
    for (const std::string& user : {alice_, bob_, carol_}) {
      RunCommand({"userdel", user}, {});
      ASSERT_EQ(RunCommand({"useradd", "--no-create-home", "--shell", "/bin/sh", user}, {}).exit_code, 0)
          << user;
    }
    RunCommand({"groupdel", admins_}, {});
    ASSERT_EQ(RunCommand({"groupadd", admins_}, {}).exit_code, 0);
    ASSERT_EQ(RunCommand({"usermod", "-a", "-G", admins_, carol_}, {}).exit_code, 0);
    // The users reach the socket and the simulated world.
    ::chmod(dir_.path().c_str(), 0755);
    ::mkdir(sim_dir_.c_str(), 0777);
    ::chmod(sim_dir_.c_str(), 0777);
  }
  void TearDown() override {
    if (alice_.empty()) return;
    for (const std::string& user : {alice_, bob_, carol_}) RunCommand({"userdel", user}, {});
    RunCommand({"groupdel", admins_}, {});
  }
  static std::vector<std::string> As(const std::string& user) {
    return {"setpriv", "--reuid=" + user, "--regid=" + user, "--init-groups", "--"};
  }
  RunResult TAs(const std::string& user, std::vector<std::string> args) {
    std::vector<std::string> argv = As(user);
    argv.push_back(BinDir() + "/tarmac");
    args.insert(args.begin() + 1, {"--socket", Socket()});
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCommand(argv, Env());
  }

  std::string alice_, bob_, carol_, admins_;
};

TEST_F(TwoUsersTest, OneUserCannotTouchAnothersLeaseOrProcessesAndAnAdminCan) {
  StartLeaseAgent("admin_group = \"" + admins_ +
                  "\"\n"
                  "[zombies]\nmin_memory = \"1GiB\"\nidle_for = \"1s\"\n");
  RunResult reserved = TAs(alice_, {"reserve", "--gpus", "1", "--for", "1h", "--json"});
  ASSERT_EQ(reserved.exit_code, 0) << reserved.err;
  json lease = json::parse(reserved.out);
  std::string id = std::to_string(lease["id"].get<int64_t>());
  EXPECT_EQ(lease["user"], alice_);

  // Bob sees it, and may not release or extend it.
  RunResult seen = TAs(bob_, {"leases"});
  EXPECT_NE(seen.out.find(alice_.substr(0, 12)), std::string::npos) << seen.out;
  RunResult r = TAs(bob_, {"release", id});
  EXPECT_EQ(r.exit_code, 77) << r.err;
  EXPECT_NE(r.err.find("belongs to " + alice_), std::string::npos) << r.err;
  r = TAs(bob_, {"extend", id, "--by", "1h"});
  EXPECT_EQ(r.exit_code, 77) << r.err;
  ASSERT_EQ(Leases().size(), 1u);

  // Bob's process on Alice's GPU is foreign use, reported on her lease.
  std::vector<std::string> argv = As(bob_);
  argv.insert(argv.end(), {BinDir() + "/tarmac-simload", "--memory", "2GiB", "--util", "0"});
  std::map<std::string, std::string> env = Env();
  env["CUDA_VISIBLE_DEVICES"] = lease["uuids"][0].get<std::string>();
  children_.push_back(std::make_unique<Child>(argv, env));
  Child* bobs = children_.back().get();
  ASSERT_TRUE(WaitFor([&] {
    json l = Leases();
    return l.size() == 1 && !l[0]["foreign_processes"].empty();
  })) << Leases().dump(2);
  EXPECT_EQ(Leases()[0]["foreign_processes"][0]["user"], bob_);

  // Bob's idle holder is a zombie. Alice may not kill it; Carol (admin) may.
  ASSERT_TRUE(WaitFor([&] { return !Call("zombies")["zombies"].empty(); })) << Call("zombies").dump(2);
  r = TAs(alice_, {"zombies", "--kill"});
  EXPECT_EQ(r.exit_code, 77) << r.err << r.out;
  EXPECT_NE(r.out.find("refused"), std::string::npos) << r.out;
  EXPECT_TRUE(IsRunning(bobs->pid()));
  r = TAs(carol_, {"zombies", "--kill"});
  EXPECT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_EQ(bobs->Wait(), 0);  // Exits only when signalled.

  // Carol releases Alice's lease.
  r = TAs(carol_, {"release", id});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Leases().empty());

  int refusals = 0;
  for (const json& e : Events()) {
    if (e["kind"] == "refused") {
      ++refusals;
      EXPECT_TRUE(e["actor"] == bob_ || e["actor"] == alice_) << e.dump();
    }
  }
  EXPECT_EQ(refusals, 3) << Events().dump(2);
}

TEST_F(TwoUsersTest, FairShareServesTheUserWithLessRecentUseFirst) {
  StartLeaseAgent();
  // Alice has used a GPU lately; Bob has not.
  RunResult used = TAs(alice_, {"run", "--", "sleep", "1"});
  ASSERT_EQ(used.exit_code, 0) << used.err;
  RunResult held = T({"reserve", "--gpus", "2", "--for", "1h", "--json"});
  ASSERT_EQ(held.exit_code, 0) << held.err;
  std::string out = dir_.Write("order", "");
  ::chmod(out.c_str(), 0666);
  auto queue_as = [&](const std::string& user) {
    std::vector<std::string> argv = As(user);
    argv.insert(argv.end(), {BinDir() + "/tarmac", "run", "--socket", Socket(), "--gpus", "2", "--", "sh",
                             "-c", "echo " + user + " >> " + out});
    children_.push_back(std::make_unique<Child>(argv, Env()));
    return children_.back().get();
  };
  Child* alice = queue_as(alice_);  // Alice asks first...
  ASSERT_TRUE(WaitFor([&] { return Queue().size() == 1; }));
  Child* bob = queue_as(bob_);
  ASSERT_TRUE(WaitFor([&] { return Queue().size() == 2; }));
  json queue = Queue();  // ...but Bob is served first.
  EXPECT_EQ(queue[0]["user"], bob_) << queue.dump(2);
  EXPECT_EQ(queue[0]["position"], 1);
  EXPECT_EQ(queue[1]["user"], alice_);
  ASSERT_EQ(T({"release", std::to_string(json::parse(held.out)["id"].get<int64_t>())}).exit_code, 0);
  EXPECT_EQ(bob->Wait(), 0);
  EXPECT_EQ(alice->Wait(), 0);
  std::string order;
  ReadSmallFile(out, &order);
  EXPECT_EQ(order, bob_ + "\n" + alice_ + "\n");
}

TEST_F(LeasesTest, AQueuedClientOfTheLibraryHearsOfItsGrantThroughLeaseWait) {
  ASSERT_NE(StartLeaseAgent(), nullptr);
  client::AgentClient agent(Socket());
  Result<client::LeaseAnswer> held = agent.RequestLease({{"gpus", 2}, {"kind", "reservation"}});
  ASSERT_TRUE(held.ok()) << held.status().ToString();
  ASSERT_TRUE(held.value().is_granted());
  Result<client::LeaseAnswer> queued = agent.RequestLease({{"gpus", 1}, {"kind", "reservation"}});
  ASSERT_TRUE(queued.ok()) << queued.status().ToString();
  ASSERT_TRUE(queued.value().is_queued());
  EXPECT_EQ(queued.value().position, 1);

  // Nothing frees a GPU: a short wait answers with where the request stands.
  Result<client::LeaseAnswer> still = agent.WaitLease(queued.value().id, std::chrono::milliseconds(300));
  ASSERT_TRUE(still.ok()) << still.status().ToString();
  EXPECT_TRUE(still.value().is_queued());

  // The reservation is given back while the client waits: the wait ends
  // with the grant, and the lease is the client's own (its token shows).
  std::vector<client::LeaseAnswer> updates;
  std::thread release([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    EXPECT_TRUE(agent.ReleaseLease(held.value().id).ok());
  });
  Result<client::LeaseAnswer> granted = client::WaitForGrant(
      agent, queued.value(), -1, [&](const client::LeaseAnswer& a) { updates.push_back(a); },
      std::chrono::seconds(60));
  release.join();
  ASSERT_TRUE(granted.ok()) << granted.status().ToString();
  EXPECT_TRUE(granted.value().is_granted());
  EXPECT_EQ(granted.value().id, queued.value().id);
  EXPECT_FALSE(granted.value().lease.lease.token.empty());
  EXPECT_TRUE(updates.empty()) << "answered by the grant, not by a timeout";
  EXPECT_TRUE(Queue().empty());
}

}  // namespace
}  // namespace tarmac::testing
