// SPDX-License-Identifier: Apache-2.0
//
// Fault injection against a real agent: SIGSTOP/SIGCONT, kill -9, a second
// agent, a small tmpfs that fills, a read-only remount, a deleted state
// directory, a crowd of clients on the Unix socket, and slow clients on
// HTTP. Mounting needs root (CI runs as root); those tests skip otherwise.
// Every wait is a bounded poll, never a timing assertion.
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <atomic>
#include <fstream>
#include <random>

#include "testutil/agent_fixture.h"

namespace tarmac::testing {
namespace {

using nlohmann::json;

class AgentFaultsTest : public AgentFixture {
 public:
  void SetUp() override { UseScenarioText("[[gpu]]\ncount = 2\n"); }
  void TearDown() override {
    for (Child* a : stopped_) ::kill(a->pid(), SIGCONT);
    agents_.clear();
    for (auto it = mounts_.rbegin(); it != mounts_.rend(); ++it) ::umount2(it->c_str(), MNT_DETACH);
  }

  std::string State() const { return dir_.path() + "/state"; }

  Child* StartFaultAgent(const std::vector<std::string>& extra = {}) {
    std::string config =
        dir_.Write("agent.toml", "[sampler]\nfast_interval = \"200ms\"\n[leases]\nkill_grace = \"1s\"\n");
    std::vector<std::string> args = {"--config", config};
    args.insert(args.end(), extra.begin(), extra.end());
    return StartAgent(args);
  }

  Result<json> Call(const std::string& method, json params = json::object()) {
    ipc::Request r;
    r.method = method;
    r.params = std::move(params);
    return ipc::CallAgent(Socket(), r, std::chrono::seconds(5));
  }
  json Leases() {
    Result<json> r = Call("leases");
    return r.ok() ? r.value()["leases"] : json::array();
  }
  RunResult T(std::vector<std::string> args) {
    args.insert(args.begin() + 1, {"--socket", Socket()});
    return Tarmac(args);
  }
  bool WaitFor(const std::function<bool()>& pred, int tries = 200) {
    for (int i = 0; i < tries; ++i) {
      if (pred()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }
  // Mounts a tmpfs of `size` at State(); false (and the test skips) when
  // this process may not mount.
  bool MountStateTmpfs(const std::string& size) {
    ::mkdir(State().c_str(), 0755);
    if (::mount("tarmac-test", State().c_str(), "tmpfs", 0, ("size=" + size).c_str()) != 0) return false;
    mounts_.push_back(State());
    return true;
  }
  // Fills the file system under `dir` (a tmpfs) to the last byte.
  void Fill(const std::string& dir) {
    std::ofstream out(dir + "/filler", std::ios::binary);
    std::string block(65536, 'x');
    while (out.write(block.data(), static_cast<std::streamsize>(block.size()))) {
    }
    out.close();
    std::ofstream small(dir + "/filler-tail", std::ios::binary);
    while (small.put('x')) {
    }
  }

  std::vector<Child*> stopped_;
  std::vector<std::string> mounts_;
};

// Defect: with the agent stopped past the client's call timeout, the
// client resent lease.request and one `run` held two leases, both ownerless
// once the client died. Now: --no-wait gives up in bounded time with 69,
// and whatever the stopped agent later reads, no lease outlives the client.
TEST_F(AgentFaultsTest, AStoppedAgentNeverLeavesALeaseWithoutItsClient) {
  Child* agent = StartFaultAgent();
  ::kill(agent->pid(), SIGSTOP);
  stopped_.push_back(agent);
  RunResult r = T({"run", "--no-wait", "--", "true"});
  EXPECT_EQ(r.exit_code, 69) << r.err;
  EXPECT_NE(r.err.find("did not answer"), std::string::npos) << r.err;
  ::kill(agent->pid(), SIGCONT);
  stopped_.clear();
  EXPECT_TRUE(WaitFor([&] { return Leases().empty(); })) << Leases().dump();
  // A request sent twice (the same key, as a retrying client sends it) is
  // one lease.
  Child holder({"sleep", "30"}, Env());
  (void)holder;
  json params = {{"gpus", 1}, {"kind", "reservation"}, {"request_key", "retry-1"}};
  Result<json> first = Call("lease.request", params);
  Result<json> second = Call("lease.request", params);
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(first.value()["lease"]["id"], second.value()["lease"]["id"]);
  EXPECT_EQ(Leases().size(), 1u);
}

// Defect: two agents shared one state directory and both granted lease 1
// on GPU 0.
TEST_F(AgentFaultsTest, ASecondAgentOnTheSameStateOrSocketRefusesBeforeWritingAnything) {
  Child* first = StartFaultAgent();
  RunResult same_state =
      Tarmac({"agent", "--backend", "nvml", "--nvml-library", FakeNvmlPath(), "--socket",
              dir_.path() + "/second.sock", "--state-dir", State(), "--http-listen", "off"});
  EXPECT_EQ(same_state.exit_code, 1) << same_state.err;
  EXPECT_NE(same_state.err.find("another agent (pid " + std::to_string(first->pid()) +
                                ") is using the state directory"),
            std::string::npos)
      << same_state.err;
  EXPECT_EQ(::access((dir_.path() + "/second.sock").c_str(), F_OK), -1);

  std::string other_state = dir_.path() + "/other-state";
  RunResult same_socket = Tarmac({"agent", "--backend", "nvml", "--nvml-library", FakeNvmlPath(), "--socket",
                                  Socket(), "--state-dir", other_state, "--http-listen", "off"});
  EXPECT_EQ(same_socket.exit_code, 1) << same_socket.err;
  EXPECT_NE(same_socket.err.find("another agent is serving " + Socket()), std::string::npos)
      << same_socket.err;
  EXPECT_EQ(::access(other_state.c_str(), F_OK), -1) << "nothing opened or written";
  // The first agent still serves, alone.
  EXPECT_TRUE(Call("hello").ok());

  // kill -9 releases the lock: a new agent takes the directory over.
  first->KillAndWait(SIGKILL);
  StartFaultAgent();
  EXPECT_TRUE(Call("hello").ok());
}

// Defect: on a full disk `reserve` answered "granted" without saving, and
// after a restart the same id and GPU were handed out again.
TEST_F(AgentFaultsTest, AFullDiskRefusesLeaseChangesAndTheyResumeWhenThereIsRoom) {
  if (!MountStateTmpfs("4m")) GTEST_SKIP() << "mounting a tmpfs needs root";
  StartFaultAgent();
  RunResult ok = T({"reserve", "--gpus", "1", "--for", "1h"});
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  Fill(State());
  RunResult full = T({"reserve", "--gpus", "1", "--for", "1h"});
  EXPECT_EQ(full.exit_code, 74) << full.out << full.err;
  EXPECT_NE(full.err.find("cannot be saved"), std::string::npos) << full.err;
  EXPECT_EQ(Leases().size(), 1u) << "nothing granted that is not saved";
  std::string health = HttpGet("/health");
  EXPECT_EQ(health.rfind("HTTP/1.1 503", 0), 0u) << health;
  EXPECT_NE(health.find("lease state"), std::string::npos) << health;
  Result<json> hello = Call("hello");
  ASSERT_TRUE(hello.ok());
  EXPECT_FALSE(hello.value()["lease_state"]["ok"].get<bool>()) << hello.value().dump();

  ::unlink((State() + "/filler").c_str());
  ::unlink((State() + "/filler-tail").c_str());
  EXPECT_TRUE(WaitFor([&] { return HttpGet("/health").rfind("HTTP/1.1 200", 0) == 0; }))
      << HttpGet("/health");
  RunResult again = T({"reserve", "--gpus", "1", "--for", "1h", "--json"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  // Ids are never reused: a request refused when its own save failed took
  // id 2, which is not handed out again. (When a tick's save failed first,
  // the agent refuses changes before taking an id: then 2 is still free.)
  json leases = Leases();
  ASSERT_EQ(leases.size(), 2u);
  EXPECT_EQ(leases[0]["id"], 1);
  bool took_an_id = full.err.find("nothing was changed") != std::string::npos;
  EXPECT_GE(leases[1]["id"].get<int64_t>(), took_an_id ? 3 : 2) << full.err;

  // A restart finds exactly what was acknowledged.
  agents_.back()->KillAndWait(SIGKILL);
  StartFaultAgent();
  EXPECT_EQ(Leases().size(), 2u);
}

// Defect: a store opened while read-only kept a read-only handle for ever.
TEST_F(AgentFaultsTest, AHistoryStoreThatWasReadOnlyResumesWhenWritableAgain) {
  std::string history = dir_.path() + "/history";
  ::mkdir(history.c_str(), 0755);
  if (::mount("tarmac-test", history.c_str(), "tmpfs", MS_RDONLY, "size=16m") != 0) {
    GTEST_SKIP() << "mounting a tmpfs needs root";
  }
  mounts_.push_back(history);
  std::string config = dir_.Write(
      "agent.toml", "[sampler]\nfast_interval = \"200ms\"\n[store]\npath = \"" + history + "/tarmac.db\"\n");
  StartAgent({"--config", config});
  EXPECT_TRUE(WaitFor([&] { return HttpGet("/health").find("history paused") != std::string::npos; }))
      << HttpGet("/health");
  EXPECT_EQ(HttpGet("/health").rfind("HTTP/1.1 503", 0), 0u);
  ASSERT_EQ(::mount(nullptr, history.c_str(), nullptr, MS_REMOUNT, "size=16m"), 0) << std::strerror(errno);
  // Within the documented retry interval (10 s), history is written again.
  EXPECT_TRUE(WaitFor([&] { return HttpGet("/health").rfind("HTTP/1.1 200", 0) == 0; }, 200))
      << HttpGet("/health");
  EXPECT_TRUE(WaitForLog("history resumed")) << ReadLog();
  EXPECT_EQ(::access((history + "/tarmac.db").c_str(), F_OK), 0);
}

TEST_F(AgentFaultsTest, ADeletedStateDirectoryIsNoticedAndWrittenAnew) {
  StartFaultAgent();
  ASSERT_EQ(T({"reserve", "--gpus", "1", "--for", "1h"}).exit_code, 0);
  ASSERT_EQ(std::system(("rm -rf " + State()).c_str()), 0);
  EXPECT_TRUE(WaitFor([&] { return ::access((State() + "/leases.db").c_str(), F_OK) == 0; }));
  EXPECT_TRUE(WaitForLog("was deleted under the agent")) << ReadLog();
  // The agent holds its state directory again: a second agent is refused.
  EXPECT_TRUE(WaitFor([&] { return ::access((State() + "/agent.lock").c_str(), F_OK) == 0; }));
  RunResult second = Tarmac({"agent", "--backend", "nvml", "--nvml-library", FakeNvmlPath(), "--socket",
                             dir_.path() + "/second.sock", "--state-dir", State(), "--http-listen", "off"});
  EXPECT_EQ(second.exit_code, 1) << second.err;
  EXPECT_NE(second.err.find("is using the state directory"), std::string::npos) << second.err;
  ASSERT_EQ(T({"reserve", "--gpus", "1", "--for", "1h"}).exit_code, 0);
  agents_.back()->KillAndWait(SIGKILL);
  StartFaultAgent();
  EXPECT_EQ(Leases().size(), 2u) << "both leases are in the file written anew";
}

// Defect: 200 concurrent `tarmac status` made 34 exit 3 ("no NVIDIA driver")
// and 108 read NVML directly. A busy agent is waited for, never bypassed.
TEST_F(AgentFaultsTest, AConcurrentCrowdOfStatusClientsIsAllAnsweredByTheAgent) {
  StartFaultAgent();
  constexpr int kClients = 200;
  std::vector<pid_t> pids;
  for (int i = 0; i < kClients; ++i) {
    std::string out = dir_.path() + "/status-" + std::to_string(i);
    pid_t pid = fork();
    if (pid == 0) {
      FILE* f = std::freopen(out.c_str(), "w", stdout);
      (void)f;
      std::freopen("/dev/null", "w", stderr);
      std::string tarmac = BinDir() + "/tarmac";
      // No GPU library or simulated world is reachable from the clients:
      // only the agent can answer (a direct read would exit 3).
      for (const char* name : {"TARMAC_SIM_SCENARIO", "TARMAC_SIM_DIR", "TARMAC_SIM_NOW"}) ::unsetenv(name);
      ::execl(tarmac.c_str(), tarmac.c_str(), "status", "--json", "--socket", Socket().c_str(), nullptr);
      ::_exit(120);
    }
    pids.push_back(pid);
  }
  int answered = 0;
  for (size_t i = 0; i < pids.size(); ++i) {
    int st = 0;
    ::waitpid(pids[i], &st, 0);
    std::ifstream in(dir_.path() + "/status-" + std::to_string(i));
    std::stringstream text;
    text << in.rdbuf();
    json j = json::parse(text.str(), nullptr, false);
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0 && !j.is_discarded() && j["gpus"].size() == 2) ++answered;
  }
  EXPECT_EQ(answered, kClients);
}

// Defect: eight clients sending one header line a second took /health and
// /metrics offline.
TEST_F(AgentFaultsTest, SlowHttpClientsDoNotHoldTheEndpoint) {
  StartFaultAgent();
  ASSERT_GT(HttpPort(), 0) << ReadLog();
  std::atomic<bool> stop{false};
  std::vector<std::thread> slow;
  std::atomic<int> cut_off{0};
  for (int i = 0; i < 16; ++i) {
    slow.emplace_back([&] {
      int fd = HttpConnect();
      if (fd < 0) return;
      std::string head = "GET /metrics HTTP/1.1\r\n";
      ::send(fd, head.data(), head.size(), MSG_NOSIGNAL);
      for (int line = 0; line < 100 && !stop; ++line) {
        std::string h = "X-Slow-" + std::to_string(line) + ": 1\r\n";
        if (::send(fd, h.data(), h.size(), MSG_NOSIGNAL) < 0) {
          cut_off++;
          break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
      }
      ::close(fd);
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  for (int i = 0; i < 5; ++i) {
    std::string health = HttpGet("/health");
    EXPECT_EQ(health.rfind("HTTP/1.1 200", 0), 0u) << health;
    std::string metrics = HttpGet("/metrics");
    EXPECT_NE(metrics.find("DCGM_FI_DEV_GPU_UTIL"), std::string::npos);
  }
  // The whole head has a deadline (5 s): the trickling clients are cut off.
  EXPECT_TRUE(WaitFor([&] { return cut_off.load() == 16; }, 150)) << cut_off.load();
  stop = true;
  for (std::thread& t : slow) t.join();
}

// kill -9 at random points while clients come and go: after every restart
// no GPU is in two leases, every request was granted at most once and ended
// at most once, and nothing is left once the clients are gone.
TEST_F(AgentFaultsTest, KillNineAtRandomPointsLeavesConsistentLeases) {
  std::mt19937 random(7);
  StartFaultAgent();
  for (int round = 0; round < 4; ++round) {
    std::vector<Child*> runs;
    for (int i = 0; i < 4; ++i) {
      std::vector<std::string> argv = {
          BinDir() + "/tarmac", "run", "--socket", Socket(), "--", "sleep", "0.3"};
      children_.push_back(std::make_unique<Child>(argv, Env()));
      runs.push_back(children_.back().get());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50 + random() % 400));
    agents_.back()->KillAndWait(SIGKILL);
    StartFaultAgent();
    for (Child* r : runs) r->Wait();
  }
  EXPECT_TRUE(WaitFor([&] { return Leases().empty(); })) << Leases().dump();
  Result<json> events = Call("events", {{"limit", 100000}});
  ASSERT_TRUE(events.ok());
  std::map<int64_t, int> granted, ended;
  std::map<int, int64_t> holder;  // GPU -> lease holding it, replaying the log.
  for (const json& e : events.value()["events"]) {
    int64_t lease = e["lease"].get<int64_t>();
    std::string kind = e["kind"].get<std::string>();
    if (kind == "granted") {
      granted[lease]++;
      for (const json& g : e["gpus"]) {
        EXPECT_EQ(holder.count(g.get<int>()), 0u)
            << "GPU " << g << " granted to " << lease << " while held by " << holder[g.get<int>()];
        holder[g.get<int>()] = lease;
      }
    } else if (kind == "released" || kind == "client_gone" || kind == "expired" || kind == "idle_released" ||
               kind == "idle_terminated") {
      if (granted.count(lease) == 0) continue;  // A queued request that went.
      ended[lease]++;
      for (auto it = holder.begin(); it != holder.end();)
        it = it->second == lease ? holder.erase(it) : std::next(it);
    }
  }
  EXPECT_FALSE(granted.empty());
  for (const auto& [lease, n] : granted) {
    EXPECT_EQ(n, 1) << "lease " << lease;
    EXPECT_EQ(ended[lease], 1) << "lease " << lease;
  }
}

// Half-open and silent clients on the Unix socket do not hold the agent.
TEST_F(AgentFaultsTest, HalfOpenUnixClientsDoNotHoldTheAgent) {
  StartFaultAgent();
  std::vector<int> fds;
  for (int i = 0; i < 32; ++i) {
    int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", Socket().c_str());
    ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    std::string partial = "{\"v\":1,\"id\":1,\"method\":\"sta";  // Never finished.
    ::send(fd, partial.data(), partial.size(), MSG_NOSIGNAL);
    if (i % 2 == 0) ::shutdown(fd, SHUT_WR);  // Half-open: no more to say, still reading.
    fds.push_back(fd);
  }
  RunResult status = T({"status", "--json"});
  EXPECT_EQ(status.exit_code, 0) << status.err;
  EXPECT_EQ(T({"reserve", "--gpus", "1", "--for", "1m"}).exit_code, 0);
  for (int fd : fds) ::close(fd);
}

// A request no state of the GPUs could grant is refused at once.
TEST_F(AgentFaultsTest, ARequestThatCanNeverFitIsRefusedAtOnce) {
  StartFaultAgent();
  RunResult r = T({"run", "--min-free-memory", "1TiB", "--", "true"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("can never fit"), std::string::npos) << r.err;
  r = T({"run", "--gpus", "3", "--", "true"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(Call("queue").value()["queue"].empty());
}

// No command aborts on a corrupt, foreign, newer or truncated database.
TEST_F(AgentFaultsTest, StoreCommandsNeverAbortOnABadDatabase) {
  StartFaultAgent();
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  agents_.back()->KillAndWait(SIGKILL);  // Leaves a WAL behind.
  std::string db = State() + "/tarmac.db";
  ASSERT_EQ(std::system(("cp " + db + " " + dir_.path() + "/good.db").c_str()), 0);
  struct Case {
    std::string name;
    std::function<void(const std::string&)> damage;
  };
  auto write_at = [](const std::string& path, long offset, const std::string& bytes) {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(offset);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  };
  std::vector<Case> cases = {
      {"garbage in its WAL",
       [&](const std::string& p) {
         std::ofstream(p + "-wal", std::ios::binary) << std::string(40000, '\x7f');
       }},
      {"garbage in its pages",
       [&](const std::string& p) {
         ASSERT_EQ(std::system(("sqlite3 " + p + " 'PRAGMA wal_checkpoint(TRUNCATE)' >/dev/null").c_str()),
                   0);
         write_at(p, 4096, std::string(16384, '\x5a'));
       }},
      {"truncated", [&](const std::string& p) { ASSERT_EQ(::truncate(p.c_str(), 1000), 0); }},
      {"foreign",
       [&](const std::string& p) {
         ::unlink(p.c_str());
         ::unlink((p + "-wal").c_str());
         ASSERT_EQ(std::system(("sqlite3 " + p + " 'CREATE TABLE songs(title TEXT)'").c_str()), 0);
       }},
      {"newer",
       [&](const std::string& p) {
         ASSERT_EQ(std::system(("sqlite3 " + p + " 'PRAGMA user_version = 99'").c_str()), 0);
       }},
  };
  for (const Case& c : cases) {
    std::string path = dir_.path() + "/case.db";
    for (const char* suffix : {"", "-wal", "-shm"}) ::unlink((path + suffix).c_str());
    ASSERT_EQ(std::system(("cp " + dir_.path() + "/good.db " + path).c_str()), 0);
    c.damage(path);
    for (std::vector<std::string> args :
         std::vector<std::vector<std::string>>{{"store", "info", "--db", path},
                                               {"report", "--db", path, "--since", "1h"},
                                               {"history", "--db", path, "--since", "1h"},
                                               {"export", "--db", path, "--since", "1h"}}) {
      RunResult r = Tarmac(args);
      std::string what = c.name + ": tarmac " + args[0] + " " + args[1];
      EXPECT_TRUE(r.exit_code == 1 || r.exit_code == 0) << what << " exited " << r.exit_code << ": " << r.err;
      if (r.exit_code == 1) {
        EXPECT_NE(r.err.find(path), std::string::npos) << what << ": " << r.err;
      }
      EXPECT_EQ(r.err.find("check failed"), std::string::npos) << what << ": " << r.err;
      if (args[1] == "info") {
        EXPECT_EQ(r.exit_code, 1) << what << ": says what is wrong, and fails";
      }
    }
  }
}

TEST_F(AgentFaultsTest, APrivateAgentOfANormalUserKeepsItsStateInTheUsersStateHome) {
  // As a normal user (nobody, when the test runs as root).
  std::vector<std::string> prefix;
  if (::getuid() == 0) prefix = {"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"};
  ::chmod(dir_.path().c_str(), 0777);
  std::string home = dir_.path() + "/xdg";
  std::map<std::string, std::string> env = Env();
  env["XDG_STATE_HOME"] = home;
  std::vector<std::string> argv = prefix;
  for (const std::string& a :
       {BinDir() + "/tarmac", std::string("agent"), std::string("--backend"), std::string("sim"),
        std::string("--scenario"), scenario_, std::string("--socket"), Socket(), std::string("--http-listen"),
        std::string("off"), std::string("--log-level"), std::string("info")}) {
    argv.push_back(a);
  }
  Child agent(argv, env, Log());
  ASSERT_TRUE(WaitUntilServing()) << ReadLog();
  EXPECT_EQ(::access((home + "/tarmac/leases.db").c_str(), F_OK), 0) << ReadLog();
  EXPECT_TRUE(WaitForLog("state in " + home + "/tarmac")) << ReadLog();
}

}  // namespace
}  // namespace tarmac::testing
