// SPDX-License-Identifier: Apache-2.0
//
// LeaseService with a fake clock and fake process table: what it signals and
// what it refuses to, and what survives a restart.
#include "leases/lease_service.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <set>
#include <thread>

#include "leases/lease_config.h"
#include "leases/lease_ticker.h"
#include "testutil/fake_clock.h"
#include "testutil/lease_service_fixture.h"
#include "testutil/process_views.h"
#include "testutil/testutil.h"

namespace tarmac::leases {
namespace {

using namespace test;  // NOLINT: the shared fixture.
using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;

TEST_F(LeaseServiceTest, AZombieWhosePidWasReusedIsNotSignalled) {
  LeasePolicy policy;
  policy.zombies.idle_for = seconds(1);
  std::unique_ptr<LeaseService> s = Make(policy);
  processes_.Add(4242, 1001, 777);
  s->OnTick(Machine(1, {{0, testing::Process(4242, 2 * kGiB, 0, 1001, "python", 1, 777)}}),
            clock_.SteadyNow());
  clock_.Advance(seconds(2));
  s->OnTick(Machine(1, {{0, testing::Process(4242, 2 * kGiB, 0, 1001, "python", 1, 777)}}),
            clock_.SteadyNow());
  ASSERT_EQ(Call(s.get(), "zombies", json::object())["result"]["zombies"].size(), 1u);

  // The zombie exits and a new process of the same user gets its PID.
  processes_.Add(4242, 1001, 999);
  json answer = Call(s.get(), "zombies.kill", {{"pid", 4242}});
  ASSERT_TRUE(answer["ok"].get<bool>()) << answer.dump();
  EXPECT_TRUE(answer["result"]["terminated"].empty());
  ASSERT_EQ(answer["result"]["skipped"].size(), 1u);
  EXPECT_TRUE(processes_.signals.empty()) << "the new process behind the reused PID was signalled";
  json events = Call(s.get(), "events", json::object())["result"]["events"];
  EXPECT_EQ(events.back()["kind"], "zombie_skipped");

  // The same PID and start time as seen: signalled.
  processes_.Add(4242, 1001, 777);
  answer = Call(s.get(), "zombies.kill", {{"pid", 4242}});
  EXPECT_EQ(answer["result"]["terminated"].size(), 1u);
  EXPECT_EQ(processes_.signals, (std::vector<std::pair<int64_t, int>>{{4242, SIGTERM}}));
}

// backfill.gpus says per GPU why backfill may not start there yet and
// when it will; a last use read from the history (before an agent
// restart) counts, so idle time is not counted again from the start.
TEST_F(LeaseServiceTest, BackfillSaysPerGpuWhyNotYetAndWhen) {
  LeasePolicy policy;
  policy.backfill.is_auto = false;
  policy.backfill.idle_for = std::chrono::minutes(10);
  std::unique_ptr<LeaseService> s = Make(policy);
  s->SeedBackfillLastUse({{"GPU-1", UnixSeconds(clock_.WallNow()) - 240}});
  processes_.Add(4242, 1001, 777);
  auto tick = [&] {
    s->OnTick(Machine(3, {{2, testing::Process(4242, 2 * kGiB, 0, 1001, "python", 1, 777)}}),
              clock_.SteadyNow());
  };
  tick();
  json gpus = Call(s.get(), "backfill.gpus", json::object())["result"]["gpus"];
  ASSERT_EQ(gpus.size(), 3u) << gpus.dump();
  EXPECT_EQ(gpus[0]["why"], "idle 0s of idle_for 10m 00s");
  EXPECT_EQ(gpus[0]["starts_in_seconds"], 600);
  EXPECT_EQ(gpus[1]["why"], "idle 4m 00s of idle_for 10m 00s");
  EXPECT_EQ(gpus[1]["starts_in_seconds"], 360);
  EXPECT_EQ(gpus[1]["starts_at_unix"], UnixSeconds(clock_.WallNow()) + 360);
  EXPECT_EQ(gpus[2]["why"], "in use: a process outside any lease runs on it");
  EXPECT_FALSE(gpus[2].contains("starts_in_seconds"));
  EXPECT_FALSE(gpus[0]["accepts"].get<bool>());
  // A backfill run asked for now waits, and says which free GPU opens first
  // and when, not just how many are free.
  processes_.Add(500, 1001, 10);
  json asked = Call(s.get(), "lease.request", {{"gpus", 1}, {"priority", "backfill"}}, 1001, 500);
  ASSERT_EQ(asked["result"]["state"], "queued") << asked.dump();
  EXPECT_EQ(
      asked["result"]["request"]["reason"],
      "position 1: 2 free, but backfill waits for a GPU [backfill] accepts; GPU 1: idle 4m 00s of idle_for "
      "10m 00s, opens in 6m 00s")
      << asked.dump();
  ASSERT_TRUE(Call(s.get(), "lease.release", {{"id", asked["result"]["request"]["id"]}}, 1001, 500)["ok"]
                  .get<bool>());
  clock_.Advance(std::chrono::minutes(6));
  tick();
  gpus = Call(s.get(), "backfill.gpus", json::object())["result"]["gpus"];
  EXPECT_TRUE(gpus[1]["accepts"].get<bool>()) << gpus.dump();
  EXPECT_EQ(gpus[1]["why"], "accepts backfill (idle 10m 00s)");
  EXPECT_EQ(gpus[0]["why"], "idle 6m 00s of idle_for 10m 00s");
  // A GPU already watched keeps what it saw: a later seed changes nothing.
  s->SeedBackfillLastUse({{"GPU-0", UnixSeconds(clock_.WallNow()) - 3600}});
  tick();
  gpus = Call(s.get(), "backfill.gpus", json::object())["result"]["gpus"];
  EXPECT_EQ(gpus[0]["why"], "idle 6m 00s of idle_for 10m 00s");
}

// A GPU its own readings say to drain (node/health_verdict.h) is granted to
// nobody: a request takes another GPU, or is refused saying none is healthy.
TEST_F(LeaseServiceTest, AGpuToDrainIsNeverGranted) {
  std::unique_ptr<LeaseService> s = Make(LeasePolicy());
  node::NodeView view = Machine(2);
  view.gpus[0].sample.ecc.volatile_uncorrected = 1;
  view.gpus[1].xid_count = 1;
  view.gpus[1].xid_count_by_code = {{48, 1}};
  s->OnTick(view, clock_.SteadyNow());
  processes_.Add(500, 1001, 10);  // The client.
  json asked = Call(s.get(), "lease.request", {{"gpus", 1}, {"wait", false}});
  ASSERT_FALSE(asked["ok"].get<bool>()) << asked.dump();
  EXPECT_NE(asked["error"]["message"].get<std::string>().find("only 0 of this machine's 2 are healthy"),
            std::string::npos)
      << asked.dump();
  // The ECC error clears (a reset): GPU 0 is given; GPU 1's Xid still bars it.
  view.gpus[0].sample.ecc.volatile_uncorrected = 0;
  s->OnTick(view, clock_.SteadyNow());
  json granted = Call(s.get(), "lease.request", {{"gpus", 1}});
  ASSERT_EQ(granted["result"]["state"], "granted") << granted.dump();
  EXPECT_EQ(granted["result"]["lease"]["gpus"], json::array({0}));
  processes_.Add(501, 1001, 11);
  json second = Call(s.get(), "lease.request", {{"gpus", 1}, {"wait", false}}, 1001, 501);
  EXPECT_FALSE(second["ok"].get<bool>()) << second.dump();
}

TEST_F(LeaseServiceTest, ExpiryTerminatesWithSigtermThenSigkillAfterTheGrace) {
  LeasePolicy policy;
  policy.kill_grace = seconds(5);
  std::unique_ptr<LeaseService> s = Make(policy);
  s->OnTick(Machine(2), clock_.SteadyNow());
  processes_.Add(500, 1001, 10);  // The client.
  json granted = Call(s.get(), "lease.request", {{"gpus", 1}, {"max_time_seconds", 60}});
  ASSERT_EQ(granted["result"]["state"], "granted") << granted.dump();
  int64_t id = granted["result"]["lease"]["id"].get<int64_t>();
  processes_.Add(600, 1001, 20);  // The job and a child of it.
  processes_.Add(601, 1001, 21);
  std::string token = granted["result"]["lease"]["token"].get<std::string>();
  EXPECT_EQ(token.size(), 32u);
  processes_.lease_members[token] = {600, 601};
  processes_.lease_members["another-lease"] = {602};
  processes_.Add(602, 1001, 22);
  ASSERT_TRUE(Call(s.get(), "lease.attach", {{"id", id}, {"pid", 600}})["ok"].get<bool>());

  clock_.Advance(seconds(59));
  s->OnTick(Machine(2), clock_.SteadyNow());
  EXPECT_TRUE(processes_.signals.empty());
  clock_.Advance(seconds(1));
  s->OnTick(Machine(2), clock_.SteadyNow());
  EXPECT_EQ(processes_.signals, (std::vector<std::pair<int64_t, int>>{{600, SIGTERM}, {601, SIGTERM}}));
  EXPECT_EQ(Call(s.get(), "lease.get", {{"id", id}})["result"]["state"], "ended");
  // 601 ends; 600 ignores SIGTERM and gets SIGKILL after the grace.
  processes_.table.erase(601);
  clock_.Advance(seconds(4));
  s->OnTick(Machine(2), clock_.SteadyNow());
  EXPECT_EQ(processes_.signals.size(), 2u);
  clock_.Advance(seconds(1));
  s->OnTick(Machine(2), clock_.SteadyNow());
  ASSERT_EQ(processes_.signals.size(), 3u);
  EXPECT_EQ(processes_.signals.back(), (std::pair<int64_t, int>{600, SIGKILL}));
}

TEST_F(LeaseServiceTest, RestoreReattachesLiveClientsAndEndsTheRest) {
  {
    std::unique_ptr<LeaseService> s = Make();
    s->OnTick(Machine(4), clock_.SteadyNow());
    processes_.Add(500, 1001, 10);
    processes_.Add(501, 1002, 11);
    processes_.Add(502, 1002, 12);
    ASSERT_EQ(Call(s.get(), "lease.request", {{"gpus", 2}}, 1001, 500)["result"]["state"], "granted");
    ASSERT_EQ(Call(s.get(), "lease.request", {{"gpus", 2}}, 1002, 501)["result"]["state"], "granted");
    ASSERT_EQ(Call(s.get(), "lease.request", {{"gpus", 3}}, 1002, 502)["result"]["state"], "queued");
  }
  // Across the restart: client 501 died; 500 and the queued 502 live.
  processes_.table.erase(501);
  std::unique_ptr<LeaseService> s = Make();
  ASSERT_TRUE(s->Restore().ok());
  json leases = Call(s.get(), "leases", json::object())["result"]["leases"];
  ASSERT_EQ(leases.size(), 1u);
  EXPECT_EQ(leases[0]["id"], 1);
  json queue = Call(s.get(), "queue", json::object())["result"]["queue"];
  ASSERT_EQ(queue.size(), 1u);
  EXPECT_EQ(queue[0]["id"], 3);
  // New ids continue after the saved ones.
  processes_.Add(503, 1003, 13);
  json next = Call(s.get(), "lease.request", {{"gpus", 1}, {"wait", false}}, 1003, 503);
  EXPECT_EQ(next["error"]["code"], "unavailable") << "GPUs are not known before the first tick";
  s->OnTick(Machine(4), clock_.SteadyNow());
  next = Call(s.get(), "lease.request", {{"gpus", 1}}, 1003, 503);
  const json& r = next["result"];
  EXPECT_EQ(r.contains("lease") ? r["lease"]["id"] : r["request"]["id"], 4) << next.dump();
}

TEST_F(LeaseServiceTest, ACorruptStateFileIsRefusedNamingIt) {
  std::string path = dir_.path() + "/leases.db";
  {
    std::unique_ptr<LeaseService> s = Make();
    s->OnTick(Machine(1), clock_.SteadyNow());
    processes_.Add(500, 1001, 10);
    ASSERT_EQ(Call(s.get(), "lease.request", {{"gpus", 1}})["result"]["state"], "granted");
  }
  Result<std::unique_ptr<store::LeaseState>> state = store::LeaseState::Open(path);
  ASSERT_TRUE(state.ok());
  std::vector<store::LeaseEvent> none;
  ASSERT_TRUE(state.value()->Apply({{"lease", 1, json{{"id", 1}, {"uid", "alice"}}}}, &none).ok());
  std::unique_ptr<LeaseService> s = Make();
  Status restored = s->Restore();
  EXPECT_EQ(restored.code(), StatusCode::kCorruption);
  EXPECT_NE(restored.message().find(path), std::string::npos) << restored.message();
  EXPECT_NE(restored.message().find("lease.uid: expected an integer"), std::string::npos)
      << restored.message();
}

TEST_F(LeaseServiceTest, MalformedParamsAreRefusedNamingTheField) {
  std::unique_ptr<LeaseService> s = Make({}, false);
  s->OnTick(Machine(2), clock_.SteadyNow());
  for (const auto& [method, params, says] : std::vector<std::tuple<std::string, json, std::string>>{
           {"lease.request", {{"gpus", "two"}}, "params.gpus: expected an integer"},
           {"lease.request", {{"priority", "urgent"}}, "params.priority"},
           {"lease.request", {{"wait", 1}}, "params.wait"},
           {"lease.request", {{"uuids", {1, 2}}}, "params.uuids"},
           {"lease.get", {{"id", -1}}, "params.id"},
           {"lease.extend", {{"id", 1}}, "params.seconds"},
           {"lease.release", json::object(), "params.id"},
           {"events", {{"limit", 0}}, "params.limit"},
       }) {
    json answer = Call(s.get(), method, params);
    EXPECT_FALSE(answer["ok"].get<bool>()) << method;
    EXPECT_NE(answer["error"]["message"].get<std::string>().find(says), std::string::npos) << answer.dump();
  }
  EXPECT_TRUE(Call(s.get(), "leases", json::object())["result"]["leases"].empty());
}

TEST_F(LeaseServiceTest, ARepeatedRequestKeyAnswersWithWhatTheFirstRequestMade) {
  std::unique_ptr<LeaseService> s = Make();
  s->OnTick(Machine(1), clock_.SteadyNow());
  processes_.Add(500, 1001, 10);
  json first = Call(s.get(), "lease.request", {{"gpus", 1}, {"request_key", "k1"}});
  ASSERT_EQ(first["result"]["state"], "granted") << first.dump();
  json again = Call(s.get(), "lease.request", {{"gpus", 1}, {"request_key", "k1"}});
  ASSERT_EQ(again["result"]["state"], "granted") << again.dump();
  EXPECT_EQ(again["result"]["lease"]["id"], first["result"]["lease"]["id"]);
  EXPECT_EQ(Call(s.get(), "leases", json::object())["result"]["leases"].size(), 1u);
  // Queued: the repeat is the same queue entry, not a second one.
  json queued = Call(s.get(), "lease.request", {{"gpus", 1}, {"request_key", "k2"}});
  ASSERT_EQ(queued["result"]["state"], "queued");
  json queued_again = Call(s.get(), "lease.request", {{"gpus", 1}, {"request_key", "k2"}});
  EXPECT_EQ(queued_again["result"]["request"]["id"], queued["result"]["request"]["id"]);
  EXPECT_EQ(Call(s.get(), "queue", json::object())["result"]["queue"].size(), 1u);
  // --no-wait that did not fit: the repeat says so again and queues nothing.
  json no_fit = Call(s.get(), "lease.request", {{"gpus", 1}, {"wait", false}, {"request_key", "k3"}});
  EXPECT_EQ(no_fit["error"]["code"], "no_fit");
  EXPECT_EQ(
      Call(s.get(), "lease.request", {{"gpus", 1}, {"wait", false}, {"request_key", "k3"}})["error"]["code"],
      "no_fit");
  EXPECT_EQ(Call(s.get(), "queue", json::object())["result"]["queue"].size(), 1u);
  // Keys are per user: another user's same key is another request.
  processes_.Add(501, 1002, 11);
  json other = Call(s.get(), "lease.request", {{"gpus", 1}, {"request_key", "k1"}}, 1002, 501);
  EXPECT_EQ(other["result"]["state"], "queued");
  // A key survives a restart.
  s = Make();
  ASSERT_TRUE(s->Restore().ok());
  s->OnTick(Machine(1), clock_.SteadyNow());
  EXPECT_EQ(Call(s.get(), "lease.request", {{"gpus", 1}, {"request_key", "k1"}})["result"]["lease"]["id"],
            first["result"]["lease"]["id"]);
}

TEST_F(LeaseServiceTest, NoLeaseOutlivesItsClient) {
  std::unique_ptr<LeaseService> s = Make();
  s->OnTick(Machine(2), clock_.SteadyNow());
  // A request whose client exited before the agent read it (it waited on a
  // stopped agent) makes nothing: no one would ever end the lease.
  json gone = Call(s.get(), "lease.request", {{"gpus", 1}}, 1001, 777);
  EXPECT_FALSE(gone["ok"].get<bool>());
  EXPECT_NE(gone["error"]["message"].get<std::string>().find("has exited"), std::string::npos) << gone.dump();
  EXPECT_TRUE(Call(s.get(), "leases", json::object())["result"]["leases"].empty());
  EXPECT_TRUE(Call(s.get(), "queue", json::object())["result"]["queue"].empty());
  // A saved `run` lease with no client (from an older agent) ends at the
  // next tick instead of staying forever.
  Result<std::unique_ptr<store::LeaseState>> state = store::LeaseState::Open(dir_.path() + "/leases.db");
  ASSERT_TRUE(state.ok());
  sched::Lease orphan;
  orphan.id = 9;
  orphan.uid = 1001;
  orphan.user = "alice";
  orphan.gpus = {0};
  orphan.uuids = {"GPU-0"};
  std::vector<store::LeaseEvent> none;
  sched::TimeBase base{clock_.SteadyNow(), clock_.WallNow()};
  ASSERT_TRUE(state.value()->Apply({{"lease", 9, sched::LeaseToJson(orphan, base)}}, &none).ok());
  s = Make();
  ASSERT_TRUE(s->Restore().ok());
  s->OnTick(Machine(2), clock_.SteadyNow());
  EXPECT_TRUE(Call(s.get(), "leases", json::object())["result"]["leases"].empty());
}

TEST_F(LeaseServiceTest, AChangeThatCannotBeSavedIsRefusedTakenBackAndItsIdNeverReused) {
  std::string path = dir_.path() + "/leases.db";
  std::unique_ptr<LeaseService> s = Make();
  s->OnTick(Machine(2), clock_.SteadyNow());
  processes_.Add(500, 1001, 10);
  // Every write to the state table now fails, as on a full disk.
  Result<std::unique_ptr<store::Db>> other = store::Db::Open(path, store::Db::Mode::kReadWriteCreate);
  ASSERT_TRUE(other.ok());
  ASSERT_TRUE(
      other.value()
          ->Exec("CREATE TRIGGER full BEFORE INSERT ON lease_state BEGIN SELECT RAISE(FAIL, 'database or "
                 "disk is full'); END;")
          .ok());
  json refused = Call(s.get(), "lease.request", {{"gpus", 1}, {"kind", "reservation"}});
  ASSERT_FALSE(refused["ok"].get<bool>()) << refused.dump();
  EXPECT_EQ(refused["error"]["code"], "storage_unavailable");
  EXPECT_NE(refused["error"]["message"].get<std::string>().find("disk is full"), std::string::npos);
  EXPECT_TRUE(Call(s.get(), "leases", json::object())["result"]["leases"].empty());
  EXPECT_NE(s->Problem().find(path), std::string::npos) << s->Problem();
  EXPECT_FALSE(s->StateJson()["ok"].get<bool>());
  // While it fails, ticks grant nothing.
  s->OnTick(Machine(2), clock_.SteadyNow());
  EXPECT_TRUE(Call(s.get(), "leases", json::object())["result"]["leases"].empty());

  // The disk has room again: after the retry interval, changes are saved.
  ASSERT_TRUE(other.value()->Exec("DROP TRIGGER full").ok());
  clock_.Advance(LeaseService::kStateRetryInterval + seconds(1));
  s->OnTick(Machine(2), clock_.SteadyNow());
  EXPECT_EQ(s->Problem(), "");
  json granted = Call(s.get(), "lease.request", {{"gpus", 1}, {"kind", "reservation"}});
  ASSERT_EQ(granted["result"]["state"], "granted") << granted.dump();
  EXPECT_EQ(granted["result"]["lease"]["id"], 2) << "id 1 was handed out once and is never handed out again";
  // And it is saved: a restart finds it.
  s = Make();
  ASSERT_TRUE(s->Restore().ok());
  json leases = Call(s.get(), "leases", json::object())["result"]["leases"];
  ASSERT_EQ(leases.size(), 1u);
  EXPECT_EQ(leases[0]["id"], 2);
}

TEST_F(LeaseServiceTest, AStateFileDeletedUnderTheAgentIsWrittenAnew) {
  std::string path = dir_.path() + "/leases.db";
  std::unique_ptr<LeaseService> s = Make();
  s->OnTick(Machine(2), clock_.SteadyNow());
  processes_.Add(500, 1001, 10);
  ASSERT_EQ(Call(s.get(), "lease.request", {{"gpus", 1}, {"kind", "reservation"}})["result"]["state"],
            "granted");
  for (const char* suffix : {"", "-wal", "-shm"}) ::unlink((path + suffix).c_str());
  s->OnTick(Machine(2), clock_.SteadyNow());
  EXPECT_EQ(::access(path.c_str(), F_OK), 0) << "written anew within a tick";
  json events = Call(s.get(), "events", json::object())["result"]["events"];
  bool said = false;
  for (const json& e : events) said = said || e["kind"] == "state_recreated";
  EXPECT_TRUE(said) << events.dump();
  s = Make();
  ASSERT_TRUE(s->Restore().ok());
  EXPECT_EQ(Call(s.get(), "leases", json::object())["result"]["leases"].size(), 1u);
}

TEST_F(LeaseServiceTest, IdleTimeSurvivesARestartAndTokensShowOnlyToTheirOwner) {
  std::unique_ptr<LeaseService> s = Make();
  s->OnTick(Machine(1), clock_.SteadyNow());
  processes_.Add(500, 1001, 10);
  ASSERT_EQ(Call(s.get(), "lease.request", {{"gpus", 1}, {"kind", "reservation"}})["result"]["state"],
            "granted");
  s->OnTick(Machine(1), clock_.SteadyNow());  // Idle from here.
  clock_.Advance(seconds(100));
  s->OnTick(Machine(1), clock_.SteadyNow());
  s = Make();
  ASSERT_TRUE(s->Restore().ok());
  json mine = Call(s.get(), "leases", json::object())["result"]["leases"][0];
  EXPECT_GE(mine["idle_seconds"].get<int64_t>(), 100) << mine.dump();
  EXPECT_FALSE(mine["token"].get<std::string>().empty());
  json theirs = Call(s.get(), "leases", json::object(), 1002, 501)["result"]["leases"][0];
  EXPECT_FALSE(theirs.contains("token")) << theirs.dump();
  json admin = Call(s.get(), "leases", json::object(), 0, 502)["result"]["leases"][0];
  EXPECT_TRUE(admin.contains("token"));
}

TEST_F(LeaseServiceTest, AttachRefusesInitKernelThreadsAndOtherUsersProcesses) {
  std::unique_ptr<LeaseService> s = Make();
  s->OnTick(Machine(1), clock_.SteadyNow());
  processes_.Add(500, 1001, 10);
  ASSERT_EQ(Call(s.get(), "lease.request", {{"gpus", 1}})["result"]["state"], "granted");
  processes_.table[1] = {1, 0, 1, 0, "systemd"};
  processes_.table[77] = {77, 0, 5, 2, "kworker/0:1"};
  processes_.Add(600, 1002, 20);
  for (int64_t pid : {1, 77, 600}) {
    json admin = Call(s.get(), "lease.attach", {{"id", 1}, {"pid", pid}}, 0, 500);
    EXPECT_EQ(admin["error"]["code"], "permission_denied") << pid << ": " << admin.dump();
  }
  processes_.Add(601, 1001, 21);
  EXPECT_TRUE(Call(s.get(), "lease.attach", {{"id", 1}, {"pid", 601}})["ok"].get<bool>());
}

TEST(ProcessControlTest, SignalsOnlyTheProcessWithTheStartTimeSeen) {
  pid_t child = fork();
  if (child == 0) {
    pause();
    _exit(0);
  }
  std::unique_ptr<ProcessControl> control = MakeProcessControl();
  std::optional<ProcessIdentity> who;
  for (int i = 0; i < 200 && !who; ++i) who = control->Identify(child);  // Bounded: it exists at once.
  ASSERT_TRUE(who);
  EXPECT_EQ(who->uid, static_cast<int64_t>(geteuid()));
  // As if the PID had been reused: another start time. Not signalled.
  Status s = control->Signal({child, who->start_ticks + 1}, -1, SIGTERM);
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_NE(s.message().find("now names another process"), std::string::npos) << s.message();
  // Another owner: not signalled.
  EXPECT_EQ(control->Signal({child, who->start_ticks}, who->uid + 1, SIGTERM).code(),
            StatusCode::kPermissionDenied);
  int status = 0;
  EXPECT_EQ(waitpid(child, &status, WNOHANG), 0) << "the child was signalled";
  // The one seen: signalled.
  EXPECT_TRUE(control->Signal({child, who->start_ticks}, who->uid, SIGTERM).ok());
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
  EXPECT_FALSE(control->Identify(child));
}

}  // namespace
}  // namespace tarmac::leases

namespace tarmac::leases {
namespace {

using namespace test;  // NOLINT: the shared fixture.
using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;

// The real /proc scan: only processes carrying this lease's token, of its
// user, started after the given tick.
TEST(ProcessControlTest, LeaseProcessesAreFoundByTheirTokenOnly) {
  auto spawn = [](const char* token) {
    pid_t pid = fork();
    if (pid == 0) {
      setenv(kLeaseTokenEnv, token, 1);
      execlp("sleep", "sleep", "30", static_cast<char*>(nullptr));
      _exit(127);
    }
    return pid;
  };
  pid_t mine = spawn("0123456789abcdef");
  pid_t other = spawn("0123456789abcdee");  // Another lease (another agent, say).
  std::unique_ptr<ProcessControl> control = MakeProcessControl();
  std::vector<ProcessIdentity> found;
  for (int i = 0; i < 500 && found.empty(); ++i) {  // Bounded: until the exec has happened.
    found = control->LeaseProcesses("0123456789abcdef", geteuid(), 0);
    if (found.empty()) usleep(2000);
  }
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].pid, mine);
  EXPECT_TRUE(control->LeaseProcesses("0123456789abcdef", geteuid() + 1, 0).empty()) << "another owner";
  EXPECT_TRUE(control->LeaseProcesses("0123456789abcdef", geteuid(), found[0].start_ticks + 1).empty())
      << "started before the lease's client";
  EXPECT_TRUE(control->LeaseProcesses("", geteuid(), 0).empty());
  for (pid_t p : {mine, other}) {
    kill(p, SIGKILL);
    waitpid(p, nullptr, 0);
  }
}

// --- pushed grants (lease.wait) and the lease thread --------------------------

// An 8-GPU-style head (all 4 GPUs here) behind a reservation without an
// end is passed over by 1-GPU requests for its first keep_for_head_after;
// then the GPUs free now are kept for it, a later request queues behind it,
// and the head says which GPUs wait for it.
TEST_F(LeaseServiceTest, AHeadWaitingPastKeepForHeadAfterIsNoLongerPassedOver) {
  LeasePolicy policy;
  policy.keep_for_head_after = std::chrono::minutes(10);
  std::unique_ptr<LeaseService> s = Make(policy);
  s->OnTick(Machine(4), clock_.SteadyNow());
  for (auto [pid, uid] : {std::pair{500, 1001}, {600, 1002}, {700, 1003}, {800, 1004}}) {
    processes_.Add(pid, uid, pid);
  }
  auto request = [&](int gpus, uid_t uid, pid_t pid) {
    return Call(s.get(), "lease.request", {{"gpus", gpus}, {"kind", "reservation"}}, uid, pid)["result"];
  };
  EXPECT_EQ(request(1, 1001, 500)["state"], "granted");
  EXPECT_EQ(request(4, 1002, 600)["state"], "queued");
  EXPECT_EQ(request(1, 1003, 700)["state"], "granted") << "passed over before keep_for_head_after";
  clock_.Advance(std::chrono::minutes(10));
  s->OnTick(Machine(4), clock_.SteadyNow());
  json late = request(1, 1004, 800);
  EXPECT_EQ(late["state"], "queued") << late.dump();
  json queue = Call(s.get(), "queue", json::object())["result"]["queue"];
  ASSERT_EQ(queue.size(), 2u) << queue.dump();
  EXPECT_NE(
      queue[0]["reason"].get<std::string>().find("2 free now; GPUs 0, 1, 2, 3 kept for it as they free up"),
      std::string::npos)
      << queue.dump();
  EXPECT_NE(queue[1]["reason"].get<std::string>().find("behind the head"), std::string::npos) << queue.dump();
  // Both holders let go: the head starts on all four.
  ASSERT_TRUE(Call(s.get(), "lease.release", {{"id", 1}}, 1001, 500)["ok"].get<bool>());
  ASSERT_TRUE(Call(s.get(), "lease.release", {{"id", 3}}, 1003, 700)["ok"].get<bool>());
  json after = Call(s.get(), "queue", json::object())["result"]["queue"];
  ASSERT_EQ(after.size(), 1u) << after.dump();
  EXPECT_EQ(after[0]["id"], 4) << after.dump();
}

class LeaseWaitTest : public LeaseServiceTest {
 public:
  // Holds GPU 0 of a one-GPU node for uid 1001 (lease 1) and queues a
  // request of uid 1002 (request 2).
  std::unique_ptr<LeaseService> MakeWithQueue() {
    std::unique_ptr<LeaseService> s = Make();
    s->OnTick(Machine(1), clock_.SteadyNow());
    processes_.Add(500, 1001, 10);
    processes_.Add(600, 1002, 20);
    EXPECT_EQ(Call(s.get(), "lease.request", {{"gpus", 1}, {"kind", "reservation"}})["result"]["state"],
              "granted");
    EXPECT_EQ(
        Call(s.get(), "lease.request", {{"gpus", 1}, {"kind", "reservation"}}, 1002, 600)["result"]["state"],
        "queued");
    return s;
  }
  // lease.wait from uid 1002; the answer lands in `slot`.
  std::optional<std::string> Wait(LeaseService* s, json params,
                                  const std::shared_ptr<ipc::Reply::Slot>& slot) {
    ipc::Request r;
    r.id = 42;
    r.method = "lease.wait";
    r.params = std::move(params);
    return s->Handle(r, ipc::PeerCredentials{600, 1002, 1002}, ipc::Reply(slot));
  }
  static json Sent(const std::shared_ptr<ipc::Reply::Slot>& slot) {
    MutexLock lock(&slot->mu);
    return slot->line ? json::parse(*slot->line) : json();
  }
};

TEST_F(LeaseWaitTest, AWaiterHearsOfItsGrantTheMomentItIsSaved) {
  std::unique_ptr<LeaseService> s = MakeWithQueue();
  auto slot = std::make_shared<ipc::Reply::Slot>();
  EXPECT_FALSE(Wait(s.get(), {{"id", 2}, {"timeout_ms", 60000}}, slot).has_value());
  EXPECT_EQ(s->waiter_count(), 1u);
  EXPECT_TRUE(Sent(slot).is_null());
  // GPU 0 is given back: request 2 is granted within the release call, and
  // its waiter answered, without a tick.
  ASSERT_TRUE(Call(s.get(), "lease.release", {{"id", 1}})["ok"].get<bool>());
  json sent = Sent(slot);
  ASSERT_FALSE(sent.is_null());
  EXPECT_EQ(sent["id"], 42);
  EXPECT_EQ(sent["result"]["state"], "granted") << sent.dump();
  EXPECT_EQ(sent["result"]["lease"]["id"], 2);
  EXPECT_TRUE(sent["result"]["lease"].contains("token")) << "the waiter owns the lease";
  EXPECT_EQ(s->waiter_count(), 0u);
  // Waiting on what is already granted answers at once.
  std::optional<std::string> now = Wait(s.get(), {{"id", 2}}, std::make_shared<ipc::Reply::Slot>());
  ASSERT_TRUE(now.has_value());
  EXPECT_EQ(json::parse(*now)["result"]["state"], "granted");
}

TEST_F(LeaseWaitTest, AWaiterIsAnsweredWithItsPositionWhenItsTimeoutPasses) {
  std::unique_ptr<LeaseService> s = MakeWithQueue();
  auto slot = std::make_shared<ipc::Reply::Slot>();
  EXPECT_FALSE(Wait(s.get(), {{"id", 2}, {"timeout_ms", 2000}}, slot).has_value());
  clock_.Advance(seconds(1));
  s->OnTick(Machine(1), clock_.SteadyNow());
  EXPECT_TRUE(Sent(slot).is_null());
  clock_.Advance(seconds(2));
  s->OnTick(Machine(1), clock_.SteadyNow());
  json sent = Sent(slot);
  ASSERT_FALSE(sent.is_null());
  EXPECT_EQ(sent["result"]["state"], "queued");
  EXPECT_EQ(sent["result"]["request"]["position"], 1);
  EXPECT_EQ(s->waiter_count(), 0u);
}

TEST_F(LeaseWaitTest, AWaiterThatHungUpIsDroppedAndBadTimeoutsAreRefused) {
  std::unique_ptr<LeaseService> s = MakeWithQueue();
  auto slot = std::make_shared<ipc::Reply::Slot>();
  EXPECT_FALSE(Wait(s.get(), {{"id", 2}}, slot).has_value());
  {
    MutexLock lock(&slot->mu);
    slot->is_open = false;  // The caller's connection closed.
  }
  s->OnTick(Machine(1), clock_.SteadyNow());
  EXPECT_EQ(s->waiter_count(), 0u);
  for (json bad : {json(-1), json(600001), json("soon")}) {
    std::optional<std::string> refused =
        Wait(s.get(), {{"id", 2}, {"timeout_ms", bad}}, std::make_shared<ipc::Reply::Slot>());
    ASSERT_TRUE(refused.has_value());
    EXPECT_EQ(json::parse(*refused)["error"]["code"], "bad_request") << *refused;
    EXPECT_NE(refused->find("params.timeout_ms"), std::string::npos);
  }
}

TEST_F(LeaseWaitTest, AGrantThatCannotBeSavedIsNeverHeard) {
  std::unique_ptr<LeaseService> s = MakeWithQueue();
  auto slot = std::make_shared<ipc::Reply::Slot>();
  EXPECT_FALSE(Wait(s.get(), {{"id", 2}, {"timeout_ms", 600000}}, slot).has_value());
  Result<std::unique_ptr<store::Db>> other =
      store::Db::Open(dir_.path() + "/leases.db", store::Db::Mode::kReadWriteCreate);
  ASSERT_TRUE(other.ok());
  ASSERT_TRUE(other.value()
                  ->Exec("CREATE TRIGGER full BEFORE UPDATE ON lease_state BEGIN SELECT RAISE(FAIL, 'disk "
                         "is full'); END; CREATE TRIGGER full2 BEFORE DELETE ON lease_state BEGIN SELECT "
                         "RAISE(FAIL, 'disk is full'); END;")
                  .ok());
  json refused = Call(s.get(), "lease.release", {{"id", 1}});
  EXPECT_EQ(refused["error"]["code"], "storage_unavailable") << refused.dump();
  s->OnTick(Machine(1), clock_.SteadyNow());
  EXPECT_TRUE(Sent(slot).is_null()) << "a grant taken back is not told";
  EXPECT_EQ(s->waiter_count(), 1u);
  // Saving works again: the release goes through and the waiter hears.
  ASSERT_TRUE(other.value()->Exec("DROP TRIGGER full; DROP TRIGGER full2").ok());
  clock_.Advance(LeaseService::kStateRetryInterval + seconds(1));
  s->OnTick(Machine(1), clock_.SteadyNow());
  ASSERT_TRUE(Call(s.get(), "lease.release", {{"id", 1}})["ok"].get<bool>());
  EXPECT_EQ(Sent(slot)["result"]["state"], "granted") << Sent(slot).dump();
}

TEST_F(LeaseServiceTest, TheLeaseThreadTicksOnTheSnapshotsItIsHanded) {
  std::unique_ptr<LeaseService> s = Make();
  s->OnTick(Machine(1), clock_.SteadyNow());
  processes_.Add(500, 1001, 10);
  ASSERT_EQ(Call(s.get(), "lease.request",
                 {{"gpus", 1}, {"kind", "reservation"}, {"max_time_seconds", 1}})["result"]["state"],
            "granted");
  LeaseTicker ticker(s.get());
  ticker.Start();
  clock_.Advance(seconds(2));
  auto snapshot = std::make_shared<node::Snapshot>();
  snapshot->node_view = Machine(1);
  snapshot->taken_at_steady = clock_.SteadyNow();
  ticker.Submit(snapshot);
  for (int i = 0; i < 500 && ticker.ticks() == 0; ++i) std::this_thread::sleep_for(milliseconds(10));
  ticker.Stop();
  EXPECT_EQ(ticker.ticks(), 1);
  // The tick ran on the lease thread: the lease's time was up.
  EXPECT_TRUE(Call(s.get(), "leases", json::object())["result"]["leases"].empty());
  ticker.Submit(snapshot);  // After Stop: kept, never run.
  EXPECT_EQ(ticker.ticks(), 1);
}

TEST_F(LeaseServiceTest, RegressionAnEmptyUuidListOrProfileIsABadRequestNotAnyGpu) {
  processes_.Add(500, 1001, 10);
  std::unique_ptr<LeaseService> s = Make();
  s->OnTick(Machine(2), clock_.SteadyNow());
  for (json params : {json{{"uuids", json::array()}, {"command", "x"}},
                      json{{"mig_profile", ""}, {"command", "x"}}, json{{"uuids", {""}}, {"command", "x"}}}) {
    json r = Call(s.get(), "lease.request", params);
    EXPECT_EQ(r["error"]["code"], ipc::kErrorBadRequest) << params.dump() << " -> " << r.dump();
  }
  EXPECT_TRUE(Call(s.get(), "leases", json::object())["result"]["leases"].empty());
}

}  // namespace
}  // namespace tarmac::leases
