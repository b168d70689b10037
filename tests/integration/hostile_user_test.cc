// SPDX-License-Identifier: Apache-2.0
//
// The hostile-user suite (docs/security.md): a real agent running as root,
// attacked by an unprivileged user (nobody, uid 65534) at every path the
// security table names for that user: the batch folders, the runner's
// progress, the agent's socket. Each attack checks that nothing owned by
// another user changed, nothing hung, and nothing ran with more privilege
// than the submitter had. Skipped when the tests do not run as root.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <thread>

#include "testutil/lease_fixture.h"

namespace tarmac::testing {
namespace {

using nlohmann::json;

constexpr uid_t kNobody = 65534;

class HostileUserTest : public LeaseFixture {
 public:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root: the agent runs as root and the attacker as nobody";
    UseScenarioText("[[gpu]]\ncount = 1\n");
    // nobody reaches the socket and its own folder; nothing else of ours.
    ASSERT_EQ(::chmod(dir_.path().c_str(), 0755), 0);
    user_dir_ = dir_.path() + "/nobody";
    ASSERT_EQ(::mkdir(user_dir_.c_str(), 0755), 0);
    ASSERT_EQ(::chown(user_dir_.c_str(), kNobody, kNobody), 0);
    victim_ = dir_.Write("victim", "root's file\n");
    ASSERT_EQ(::chmod(victim_.c_str(), 0644), 0);
  }
  void TearDown() override {
    RunCommand({"pkill", "-KILL", "-f", "tarmac-backfill-runner --dir " + dir_.path()}, {}).exit_code;
  }

  // `sh -c script` as nobody, bounded.
  RunResult AsNobody(const std::string& script) {
    return RunCommand(
        {"timeout", "30", "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "sh", "-c", script},
        Env());
  }
  // `tarmac ARGS --socket S` as nobody.
  RunResult TarmacAsNobody(std::vector<std::string> args) {
    std::string line = BinDir() + "/tarmac";
    args.insert(args.end(), {"--socket", Socket()});
    for (const std::string& a : args) line += " '" + a + "'";
    return AsNobody(line);
  }

  std::string BatchDir(int id) const { return dir_.path() + "/state/backfill/" + std::to_string(id); }
  json Get(int64_t id) { return Call("backfill.get", {{"id", id}})["batch"]; }

  std::string Read(const std::string& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

  // A batch of nobody's against an engine that is not there: its runner
  // (as nobody) stays up, retrying, and reports progress.
  void SubmitAsNobody() {
    SubmitInputAsNobody("chmod 600 " + user_dir_ + "/in.jsonl");
    ASSERT_TRUE(WaitFor([&] { return !Get(1)["progress"].value("problem", "").empty(); })) << Get(1).dump();
  }
  // nobody writes a one-request in.jsonl, runs `then` (a shell command), and
  // submits it.
  void SubmitInputAsNobody(const std::string& then) {
    ASSERT_EQ(AsNobody("printf '{\"custom_id\":\"a\",\"prompt\":\"hi\"}\\n' > " + user_dir_ +
                       "/in.jsonl && " + then)
                  .exit_code,
              0);
    RunResult r = TarmacAsNobody(
        {"backfill", "submit", user_dir_ + "/in.jsonl", "--model", "m", "--url", "http://127.0.0.1:9"});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  }

  struct stat Stat(const std::string& path) {
    struct stat st {};
    EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
    return st;
  }

  std::string user_dir_;
  std::string victim_;
};

TEST_F(HostileUserTest, ABatchFolderIsTheAgentsAndOnlyItsWorkFolderIsTheUsers) {
  StartLeaseAgent();
  SubmitAsNobody();
  struct stat batch = Stat(BatchDir(1));
  EXPECT_EQ(batch.st_uid, 0u);
  EXPECT_EQ(batch.st_mode & 022, 0u);
  EXPECT_EQ(Stat(BatchDir(1) + "/batch.json").st_uid, 0u);
  EXPECT_EQ(Stat(BatchDir(1) + "/runner.log").st_uid, 0u);
  EXPECT_EQ(Stat(BatchDir(1) + "/work").st_uid, kNobody);
  // The runner runs as nobody, and the agent knows it by its PID.
  int64_t runner = Get(1)["runner_pid"].get<int64_t>();
  EXPECT_EQ(Stat("/proc/" + std::to_string(runner)).st_uid, kNobody);
}

// The value of `key=` in the installed unit (deploy/systemd/tarmac.service).
std::string UnitSetting(const std::string& key) {
  std::ifstream in(SourceDir() + "/deploy/systemd/tarmac.service");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key + "=", 0) == 0) return line.substr(key.size() + 1);
  }
  return "";
}

// The agent as the package installs it: only the capabilities the unit's
// bounding set gives, no new privileges, its state folder with the mode
// systemd gives it. A user's batch still runs to the end, as that user.
TEST_F(HostileUserTest, RegressionUnderTheInstalledUnitsRestrictionsAUsersBatchRunsToTheEnd) {
  std::string caps = UnitSetting("CapabilityBoundingSet");
  std::string mode = UnitSetting("StateDirectoryMode");
  ASSERT_FALSE(caps.empty());
  ASSERT_FALSE(mode.empty());
  std::string bounding = "-all";
  for (size_t at = 0; at < caps.size();) {
    size_t end = caps.find(' ', at);
    std::string cap = caps.substr(at, end == std::string::npos ? std::string::npos : end - at);
    if (cap.rfind("CAP_", 0) == 0) {
      std::string name = cap.substr(4);
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      bounding += ",+" + name;
    }
    at = end == std::string::npos ? caps.size() : end + 1;
  }
  std::string state = dir_.path() + "/state";
  ASSERT_EQ(::mkdir(state.c_str(), static_cast<mode_t>(std::stoi(mode, nullptr, 8))), 0);
  ASSERT_EQ(::chmod(state.c_str(), static_cast<mode_t>(std::stoi(mode, nullptr, 8))), 0);
  // nobody's engine registers its load in the simulated world (a test's
  // folder, shared as /tmp is).
  for (const std::string& d : {dir_.path() + "/world", dir_.path() + "/world/loads"}) {
    ASSERT_EQ(RunCommand({"mkdir", "-p", d}, {}).exit_code, 0);
    ASSERT_EQ(::chmod(d.c_str(), 01777), 0) << d;
  }
  std::string config =
      dir_.Write("agent.toml", "[sampler]\nfast_interval = \"200ms\"\n[backfill]\nidle_for = \"0s\"\n");
  StartAgent({"--config", config}, {"setpriv", "--bounding-set=" + bounding, "--no-new-privs", "--"});
  ASSERT_EQ(
      AsNobody(
          "printf '{\"custom_id\":\"a\",\"prompt\":\"hi\"}\\n{\"custom_id\":\"b\",\"prompt\":\"ho\"}\\n' > " +
          user_dir_ + "/in.jsonl")
          .exit_code,
      0);
  RunResult r = TarmacAsNobody(
      {"backfill", "submit", user_dir_ + "/in.jsonl", "--model", "sim-model", "--engine-command",
       BinDir() + "/tarmac-simengine --port {port} --sim-dir " + dir_.path() + "/world"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err << ReadLog();
  bool is_done = WaitFor([&] { return Get(1).value("state", "") == "done"; }, 600);
  EXPECT_TRUE(is_done) << Get(1).dump() << "\n" << Read(BatchDir(1) + "/runner.log") << ReadLog();
  std::string results = Read(user_dir_ + "/in.results.jsonl");
  EXPECT_NE(results.find("\"custom_id\":\"a\""), std::string::npos) << results;
  EXPECT_NE(results.find("\"custom_id\":\"b\""), std::string::npos) << results;
  EXPECT_EQ(Stat(user_dir_ + "/in.results.jsonl").st_uid, kNobody);
}

// A runner that cannot enter its work folder (a state folder others may not
// enter) says so and the batch fails, instead of sitting at "running" with
// a runner said to hold its lock.
TEST_F(HostileUserTest, RegressionARunnerThatCannotReachItsFolderFailsTheBatchSayingWhy) {
  std::string state = dir_.path() + "/state";
  ASSERT_EQ(::mkdir(state.c_str(), 0750), 0);
  ASSERT_EQ(::chmod(state.c_str(), 0750), 0);
  StartLeaseAgent();
  ASSERT_EQ(
      AsNobody("printf '{\"custom_id\":\"a\",\"prompt\":\"hi\"}\\n' > " + user_dir_ + "/in.jsonl").exit_code,
      0);
  RunResult r = TarmacAsNobody(
      {"backfill", "submit", user_dir_ + "/in.jsonl", "--model", "m", "--url", "http://127.0.0.1:9"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_TRUE(WaitFor([&] { return Get(1).value("state", "") == "failed"; })) << Get(1).dump();
  std::string why = Get(1).dump();
  EXPECT_NE(why.find("Permission denied"), std::string::npos) << why;
  EXPECT_EQ(why.find("held by another runner"), std::string::npos) << why;
}

// A loan's borrower starts a child that detaches and drops the loan's token
// (`setsid env -u TARMAC_LEASE_TOKEN ...`). It is the loan's: its memory is
// not taken for the lender's growth, and when the loan ends it goes too,
// while the lender's process stays.
TEST_F(HostileUserTest, RegressionALoansDetachedChildIsTheLoansAndEndsWithIt) {
  for (const std::string& d : {dir_.path() + "/world", dir_.path() + "/world/loads"}) {
    ASSERT_EQ(RunCommand({"mkdir", "-p", d}, {}).exit_code, 0);
    ASSERT_EQ(::chmod(d.c_str(), 01777), 0) << d;
  }
  StartLeaseAgent(
      "[backfill]\nidle_for = \"0s\"\nlend_idle = \"all\"\nlend_after = \"0s\"\nlend_margin = "
      "\"2GiB\"\ngrace = \"2s\"\n");
  std::string simload = BinDir() + "/tarmac-simload";
  // root's job: 10 GiB held at 0 % SM, lent once seen idle.
  StartRun({"--gpus", "1"}, {simload, "--memory", "10GiB", "--pattern", "idle"});
  auto processes = [&] {
    json s = AgentStatus();
    return s.is_discarded() ? json::array() : s["gpus"][0]["processes"];
  };
  ASSERT_TRUE(WaitFor([&] { return processes().size() == 1; })) << ReadLog();
  int64_t lender_pid = processes()[0]["pid"].get<int64_t>();
  // The loads outlive their `tarmac run` clients (killed with the fixture):
  // ended here, whatever the test found.
  struct KillOnExit {
    std::vector<int64_t> pids;
    ~KillOnExit() {
      for (int64_t pid : pids) ::kill(static_cast<pid_t>(pid), SIGKILL);
    }
  } loads{{lender_pid}};
  // nobody's backfill on the loan: a process with the token, and a child
  // that left it behind.
  std::string escape = "setsid env -u TARMAC_LEASE_TOKEN " + simload +
                       " --memory 20GiB --pattern steady & exec " + simload +
                       " --memory 1GiB --pattern steady";
  std::string line = "exec " + BinDir() + "/tarmac run --priority backfill --gpus 1 --socket " + Socket() +
                     " -- sh -c '" + escape + "'";
  children_.push_back(
      std::make_unique<Child>(std::vector<std::string>{"setpriv", "--reuid=65534", "--regid=65534",
                                                       "--clear-groups", "sh", "-c", line},
                              Env()));
  ASSERT_TRUE(WaitFor([&] { return processes().size() == 3; })) << processes().dump() << ReadLog();
  for (const json& p : processes()) loads.pids.push_back(p["pid"].get<int64_t>());
  json loan = Call("lease.get", {{"id", 2}});
  ASSERT_EQ(loan.value("state", ""), "granted") << loan.dump();
  EXPECT_EQ(loan["lease"].value("lent_from", 0), 1) << loan.dump();
  // 21 GiB more on the GPU, none of it the lender's: the loan stands.
  for (int i = 0; i < 10; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    ASSERT_TRUE(Call("lease.get", {{"id", 2}})["lease"]["revoking_since_unix"].is_null())
        << "revoked for memory that is not the lender's: " << Call("lease.get", {{"id", 2}}).dump();
  }
  // nobody gives the loan back: everything of the loan's goes, the
  // detached child too; root's job stays.
  ASSERT_EQ(TarmacAsNobody({"release", "2"}).exit_code, 0);
  EXPECT_TRUE(WaitFor([&] {
    json p = processes();
    return p.size() == 1 && p[0]["pid"] == lender_pid;
  })) << processes().dump();
  EXPECT_EQ(::kill(static_cast<pid_t>(lender_pid), 0), 0) << "the lender's process was signalled";
}

// Leases' tokens are in leases.db: another user reads neither it nor its
// log (docs/protocol.md: a token goes to its lease's owner and admins).
TEST_F(HostileUserTest, RegressionNobodyReadsTheLeaseTokensFile) {
  StartLeaseAgent();
  json held = Call("lease.request", {{"gpus", 1}, {"kind", "reservation"}});
  ASSERT_EQ(held.value("state", ""), "granted") << held.dump();
  std::string db = dir_.path() + "/state/leases.db";
  EXPECT_NE(AsNobody("cat " + db + " > /dev/null").exit_code, 0);
  EXPECT_NE(AsNobody("cat " + db + "-wal > /dev/null").exit_code, 0);
  EXPECT_EQ(Stat(db).st_mode & 077, 0u);
}

TEST_F(HostileUserTest, RegressionLinksPlantedInTheBatchFolderCannotBePlacedOrFollowed) {
  Child* agent = StartLeaseAgent();
  SubmitAsNobody();
  // runner.log, the atomic write's temp file, batch.json itself: nobody can
  // put a link (or anything) there.
  std::string tmp = BatchDir(1) + "/batch.json.tmp." + std::to_string(agent->pid());
  EXPECT_NE(AsNobody("ln -sf " + victim_ + " " + BatchDir(1) + "/runner.log").exit_code, 0);
  EXPECT_NE(AsNobody("ln -s " + victim_ + " " + tmp).exit_code, 0);
  EXPECT_NE(AsNobody("echo '{\"uid\":0}' > " + BatchDir(1) + "/batch.json").exit_code, 0);
  EXPECT_NE(AsNobody("mv " + BatchDir(1) + "/runner.log " + BatchDir(1) + "/old").exit_code, 0);
  // The agent's progress copy and its temp file; the work folder itself.
  EXPECT_NE(
      AsNobody("ln -s " + victim_ + " " + BatchDir(1) + "/progress.json.tmp." + std::to_string(agent->pid()))
          .exit_code,
      0);
  EXPECT_NE(AsNobody("echo x > " + BatchDir(1) + "/progress.json").exit_code, 0);
  EXPECT_NE(AsNobody("mv " + BatchDir(1) + "/work " + BatchDir(1) + "/w2").exit_code, 0);
  // In its own work folder nobody may plant anything: the agent never opens it.
  EXPECT_EQ(AsNobody("ln -s " + victim_ + " " + BatchDir(1) + "/work/runner.log").exit_code, 0);
  // Pause and resume: the agent saves batch.json and opens runner.log again.
  ASSERT_EQ(TarmacAsNobody({"backfill", "pause", "1"}).exit_code, 0);
  ASSERT_TRUE(WaitFor([&] { return Get(1)["runner_pid"].is_null(); })) << Get(1).dump();
  ASSERT_EQ(TarmacAsNobody({"backfill", "resume", "1"}).exit_code, 0);
  ASSERT_TRUE(WaitFor([&] { return Get(1)["runner_pid"].is_number(); })) << Get(1).dump();
  EXPECT_EQ(Read(victim_), "root's file\n");
  struct stat v = Stat(victim_);
  EXPECT_EQ(v.st_uid, 0u) << "the victim was given away";
  EXPECT_EQ(v.st_mode & 07777, 0644u);
  EXPECT_EQ(Get(1)["uid"], kNobody);
}

TEST_F(HostileUserTest, RegressionAFifoForProgressHangsNeitherTheApiNorMetrics) {
  StartLeaseAgent();
  SubmitAsNobody();
  // The runner's own progress file made a FIFO (and a link to the socket).
  ASSERT_EQ(AsNobody("rm -f " + BatchDir(1) + "/work/progress.json && mkfifo " + BatchDir(1) +
                     "/work/progress.json")
                .exit_code,
            0);
  // The runner restarted reads its own FIFO non-blocking; the agent never.
  RunCommand({"pkill", "-KILL", "-f", "tarmac-backfill-runner --dir " + BatchDir(1)}, {}).exit_code;
  for (int i = 0; i < 5; ++i) {
    RunResult list = RunCommand(
        {"timeout", "10", BinDir() + "/tarmac", "backfill", "list", "--json", "--socket", Socket()}, Env());
    ASSERT_EQ(list.exit_code, 0) << list.err;
    json batches = json::parse(list.out, nullptr, false);
    ASSERT_TRUE(batches.is_object() || batches.is_array()) << list.out;
    RunResult metrics = RunCommand(
        {"timeout", "10", "curl", "-sf", "http://127.0.0.1:" + std::to_string(HttpPort()) + "/metrics"}, {});
    ASSERT_EQ(metrics.exit_code, 0);
    EXPECT_NE(metrics.out.find("tarmac_backfill_batches"), std::string::npos);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
}

TEST_F(HostileUserTest, RegressionOnlyTheBatchsOwnRunnerReportsItsProgress) {
  StartLeaseAgent();
  SubmitAsNobody();
  // nobody (not the runner's process) and root (not the runner) both refused.
  std::string call =
      "import json,socket,sys\n"
      "s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])\n"
      "s.sendall((json.dumps({'v':1,'id':1,'method':'backfill.progress','params':{'id':1,'progress':"
      "{'done':999,'total':1,'phase':'done'}}})+'\\n').encode())\n"
      "print(s.makefile().readline())\n";
  std::string script = dir_.Write("call.py", call);
  ASSERT_EQ(::chmod(script.c_str(), 0644), 0);
  for (bool as_nobody : {true, false}) {
    RunResult r = as_nobody ? AsNobody("python3 " + script + " " + Socket())
                            : RunCommand({"python3", script, Socket()}, {});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    json answer = json::parse(r.out, nullptr, false);
    EXPECT_FALSE(answer.value("ok", true)) << r.out;
    EXPECT_NE(r.out.find("runner"), std::string::npos) << r.out;
  }
  EXPECT_NE(Get(1)["progress"]["done"], 999);
  EXPECT_NE(Get(1)["state"], "done");
}

TEST_F(HostileUserTest, RegressionABatchFolderOfAnEarlierLayoutIsNeverRunAsRoot) {
  Child* first = StartLeaseAgent();
  // A folder nobody owns, as earlier versions made them, rewritten to claim
  // root and run a command of nobody's choosing.
  std::string pwned = dir_.path() + "/pwned";
  std::string dir = BatchDir(9);
  ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0);
  ASSERT_EQ(::chown(dir.c_str(), kNobody, kNobody), 0);
  json spec = {{"id", 9},
               {"uid", 0},
               {"user", "root"},
               {"state", "queued"},
               {"input", user_dir_ + "/in.jsonl"},
               {"output", user_dir_ + "/o.jsonl"},
               {"errors", user_dir_ + "/e.jsonl"},
               {"model", "m"},
               {"total", 1},
               {"submitted_unix", 1},
               {"engine", {{"kind", "ollama"}, {"command", "touch " + pwned}}}};
  ASSERT_EQ(AsNobody("echo '" + spec.dump() + "' > " + dir + "/batch.json").exit_code, 0);
  first->KillAndWait(SIGTERM);
  StartLeaseAgent();
  EXPECT_TRUE(WaitForLog("skipping batch 9")) << ReadLog();
  json got = Call("backfill.list")["batches"];
  for (const json& b : got) EXPECT_NE(b["id"], 9) << got.dump();
  std::this_thread::sleep_for(std::chrono::seconds(1));
  EXPECT_NE(::access(pwned.c_str(), F_OK), 0) << "a command of nobody's ran";
}

TEST_F(HostileUserTest, ALinkInTheUsersWorkFolderIsNeverFollowedByTheAgentAtItsStart) {
  Child* first = StartLeaseAgent();
  SubmitAsNobody();
  // nobody fills its work folder with links to root's file, then the agent
  // restarts (it checks every batch's work folder at start).
  ASSERT_EQ(AsNobody("ln -s " + victim_ + " " + BatchDir(1) + "/work/progress.json.tmp.1 && ln -s " +
                     victim_ + " " + BatchDir(1) + "/work/x")
                .exit_code,
            0);
  first->KillAndWait(SIGTERM);
  RunCommand({"pkill", "-KILL", "-f", "tarmac-backfill-runner --dir " + dir_.path()}, {}).exit_code;
  StartLeaseAgent();
  ASSERT_TRUE(WaitFor([&] { return Get(1)["runner_pid"].is_number(); })) << Get(1).dump();
  struct stat v = Stat(victim_);
  EXPECT_EQ(v.st_uid, 0u);
  EXPECT_EQ(v.st_mode & 07777, 0644u);
  EXPECT_EQ(Read(victim_), "root's file\n");
}

TEST_F(HostileUserTest, AFifoAsTheResultsFileFailsTheBatchSayingSoInsteadOfHangingItsRunner) {
  StartLeaseAgent();
  SubmitInputAsNobody("mkfifo " + user_dir_ + "/in.results.jsonl");
  ASSERT_TRUE(WaitFor([&] { return Get(1)["state"] == "failed"; })) << Get(1).dump();
  EXPECT_NE(Get(1)["message"].get<std::string>().find("not a regular file"), std::string::npos)
      << Get(1).dump();
}

TEST_F(HostileUserTest, RegressionResultsAreNoMoreReadableThanTheirPromptsAndOneFileTwiceIsRefused) {
  StartLeaseAgent();
  SubmitAsNobody();
  ASSERT_TRUE(WaitFor([&] { return ::access((user_dir_ + "/in.results.jsonl").c_str(), F_OK) == 0; }))
      << Get(1).dump();
  EXPECT_EQ(Stat(user_dir_ + "/in.results.jsonl").st_mode & 0777, 0600u);
  EXPECT_EQ(Stat(user_dir_ + "/in.errors.jsonl").st_mode & 0777, 0600u);
  // -o d/out.jsonl --errors d//out.jsonl: one file, two spellings.
  RunResult twice = TarmacAsNobody({"backfill", "submit", user_dir_ + "/in.jsonl", "--model", "m", "--url",
                                    "http://127.0.0.1:9", "-o", user_dir_ + "/out.jsonl", "--errors",
                                    user_dir_ + "//out.jsonl"});
  EXPECT_NE(twice.exit_code, 0);
  EXPECT_NE(twice.err.find("three different files"), std::string::npos) << twice.err;
}

// A simulated world's folder a user made first (/tmp/tarmac-sim-0 is one
// anybody can create): a FIFO as its MIG journal never hangs the root agent
// that reads it, and a link there is neither followed nor written through.
TEST_F(HostileUserTest, AFifoOrALinkAsTheWorldsMigJournalNeitherHangsTheAgentNorIsFollowed) {
  ASSERT_EQ(::mkdir(sim_dir_.c_str(), 0755), 0);
  ASSERT_EQ(::chown(sim_dir_.c_str(), kNobody, kNobody), 0);
  ASSERT_EQ(AsNobody("mkfifo " + sim_dir_ + "/mig-layouts").exit_code, 0);
  StartLeaseAgent();
  for (int i = 0; i < 3; ++i) {
    RunResult status =
        RunCommand({"timeout", "10", BinDir() + "/tarmac", "status", "--json", "--socket", Socket()}, Env());
    ASSERT_EQ(status.exit_code, 0) << status.err;
    EXPECT_EQ(json::parse(status.out)["gpus"].size(), 1u);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  ASSERT_EQ(AsNobody("rm " + sim_dir_ + "/mig-layouts && ln -s " + victim_ + " " + sim_dir_ + "/mig-layouts")
                .exit_code,
            0);
  RunResult direct =
      RunCommand({"timeout", "10", BinDir() + "/tarmac", "status", "--json", "--backend", "sim"}, Env());
  EXPECT_EQ(direct.exit_code, 0) << direct.err;
  EXPECT_EQ(Read(victim_), "root's file\n");
}

// A world folder of nobody's, with a dead load and loads/ended planted as
// a link to root's folder: a root program starting on it (and the root
// agent reading it) moves nothing, through the link or at all.
TEST_F(HostileUserTest, ALinkPlantedAsTheWorldsEndedLoadsIsNeverFollowedByARootProgram) {
  ASSERT_EQ(::mkdir(sim_dir_.c_str(), 0755), 0);
  ASSERT_EQ(::chown(sim_dir_.c_str(), kNobody, kNobody), 0);
  std::string roots = dir_.path() + "/roots";
  ASSERT_EQ(::mkdir(roots.c_str(), 0755), 0);
  std::string dead = sim_dir_ + "/loads/999999-1.json";
  ASSERT_EQ(AsNobody("mkdir " + sim_dir_ + "/loads && ln -s " + roots + " " + sim_dir_ +
                     "/loads/ended && printf '%s' '{\"gpus\":[0],\"memory_bytes\":1,\"pattern\":\"steady\","
                     "\"pid\":999999,\"start_ticks\":1,\"started_at_ns\":1,\"utilization_ratio\":0.5}' > " +
                     dead)
                .exit_code,
            0);
  StartLeaseAgent();
  RunResult load = RunCommand({"timeout", "10", BinDir() + "/tarmac-simload", "--memory", "1GiB", "--seconds",
                               "0.01", "--sim-dir", sim_dir_},
                              Env());
  EXPECT_EQ(load.exit_code, 0) << load.err;
  RunResult status =
      RunCommand({"timeout", "10", BinDir() + "/tarmac", "status", "--json", "--socket", Socket()}, Env());
  EXPECT_EQ(status.exit_code, 0) << status.err;
  EXPECT_EQ(::access(dead.c_str(), F_OK), 0) << "a root program moved nobody's load";
  EXPECT_NE(::access((roots + "/999999-1.json").c_str(), F_OK), 0) << "moved through the link";
}

}  // namespace
}  // namespace tarmac::testing
