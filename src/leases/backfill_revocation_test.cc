// SPDX-License-Identifier: Apache-2.0
//
// Backfill giving way: revocations across a restart, a GPU handed over only
// once the driver lists none of the revoked lease's processes (and read
// again as soon as they have exited), the hand-over bound, and the gate
// that decides when a GPU may take backfill at all.
#include <gtest/gtest.h>
#include <signal.h>

#include "leases/backfill_gate.h"
#include "leases/lease_service.h"
#include "testutil/lease_service_fixture.h"
#include "testutil/process_views.h"

namespace tarmac::leases {
namespace {

using namespace test;  // NOLINT: the shared fixture.
using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;

// Backfill may start at once on an idle GPU and has `grace` to yield.
LeasePolicy BackfillAtOnce(seconds grace) {
  LeasePolicy policy;
  policy.backfill.grace = grace;
  policy.backfill.is_auto = false;
  policy.backfill.idle_for = seconds(0);
  return policy;
}

// Alice's backfill lease (1, grace 10 s) on the one GPU, her process 600
// listed there, revoked for bob's request (2); `asked` counts the readings
// the service asks for. Null when a step fails.
class RevocationTest : public LeaseServiceTest {
 protected:
  std::unique_ptr<LeaseService> RevokedWithAProcessListed(int* asked) {
    processes_.Add(500, 1001, 10);
    processes_.Add(501, 1002, 11);
    processes_.Add(600, 1001, 20);
    std::unique_ptr<LeaseService> s = Make(BackfillAtOnce(seconds(10)));
    s->OnWantsReading([asked] { ++*asked; });
    s->OnTick(Machine(1), clock_.SteadyNow());
    json batch = Call(s.get(), "lease.request",
                      {{"gpus", 1}, {"priority", "backfill"}, {"kind", "reservation"}}, 1001, 500);
    if (batch["result"]["state"] != "granted") return nullptr;
    node::NodeView held = Machine(1);
    held.gpus[0].processes.push_back(testing::Process(600, 8 * kGiB, 0, 1001, "engine", 4000, 20));
    s->OnTick(held, clock_.SteadyNow());
    json real = Call(s.get(), "lease.request", {{"gpus", 1}, {"kind", "reservation"}}, 1002, 501);
    if (real["result"]["state"] != "queued") return nullptr;
    return s;
  }
};

TEST_F(LeaseServiceTest, ARevocationSurvivesARestartAndEndsTheLeaseWhenItsGraceHasPassed) {
  LeasePolicy policy = BackfillAtOnce(seconds(10));
  double revoke_by = 0;
  processes_.Add(500, 1001, 10);
  processes_.Add(501, 1002, 11);
  {
    std::unique_ptr<LeaseService> s = Make(policy);
    s->OnTick(Machine(1), clock_.SteadyNow());
    json batch = Call(s.get(), "lease.request",
                      {{"gpus", 1}, {"priority", "backfill"}, {"kind", "reservation"}}, 1001, 500);
    ASSERT_EQ(batch["result"]["state"], "granted") << batch.dump();
    json real = Call(s.get(), "lease.request", {{"gpus", 1}, {"kind", "reservation"}}, 1002, 501);
    ASSERT_EQ(real["result"]["state"], "queued") << real.dump();
    json lease = Call(s.get(), "lease.get", {{"id", 1}})["result"]["lease"];
    EXPECT_FALSE(lease["revoke_by_unix"].is_null()) << lease.dump();
    EXPECT_EQ(lease["revoked_for"], 2);
    revoke_by = lease["revoke_by_unix"].get<double>();
  }
  // The agent restarts 4 s later: still revoking, the same deadline.
  clock_.Advance(seconds(4));
  std::unique_ptr<LeaseService> s = Make(policy);
  ASSERT_TRUE(s->Restore().ok());
  s->OnTick(Machine(1), clock_.SteadyNow());
  json lease = Call(s.get(), "lease.get", {{"id", 1}})["result"];
  ASSERT_EQ(lease["state"], "granted") << lease.dump();
  EXPECT_EQ(lease["lease"]["revoke_by_unix"].get<double>(), revoke_by);
  // In its grace the lease thread looks every 5 ms (for a reading once its
  // processes are gone), until the grace ends.
  ASSERT_TRUE(s->NextWake().has_value());
  EXPECT_EQ(*s->NextWake(), clock_.SteadyNow() + milliseconds(5));
  clock_.Advance(seconds(5));
  s->OnWake();
  EXPECT_EQ(Call(s.get(), "lease.get", {{"id", 1}})["result"]["state"], "granted") << "1 s of grace left";
  clock_.Advance(seconds(1));
  int asked = 0;
  s->OnWantsReading([&asked] { ++asked; });
  // Its grace ends: what it ran is terminated and a reading asked for at
  // once, not at the next tick; the lease ends and the waiting request is
  // granted once that reading, taken after the kill, shows the GPU empty.
  s->OnWake();
  EXPECT_EQ(asked, 1);
  EXPECT_EQ(Call(s.get(), "lease.get", {{"id", 1}})["result"]["state"], "granted") << "no reading since";
  s->OnTick(Machine(1), clock_.SteadyNow());
  EXPECT_EQ(Call(s.get(), "lease.get", {{"id", 1}})["result"]["state"], "ended");
  EXPECT_EQ(Call(s.get(), "lease.get", {{"id", 2}})["result"]["state"], "granted");
  EXPECT_FALSE(s->NextWake().has_value());
  json events = Call(s.get(), "events", json::object())["result"]["events"];
  std::vector<std::string> kinds;
  for (const json& e : events) kinds.push_back(e["kind"].get<std::string>());
  EXPECT_EQ(std::count(kinds.begin(), kinds.end(), "preempting"), 1) << json(kinds).dump();
  EXPECT_EQ(std::count(kinds.begin(), kinds.end(), "preempted"), 1) << json(kinds).dump();
}

TEST_F(LeaseServiceTest, RegressionARevokedBackfillsGpuIsHandedOnOnlyOnceTheDriverListsNoneOfItsProcesses) {
  LeasePolicy policy = BackfillAtOnce(seconds(10));
  processes_.Add(500, 1001, 10);
  processes_.Add(501, 1002, 11);
  processes_.Add(600, 1001, 20);  // Detached from the batch: no lease token, still holding memory.
  std::unique_ptr<LeaseService> s = Make(policy);
  s->OnTick(Machine(1), clock_.SteadyNow());
  json batch = Call(s.get(), "lease.request",
                    {{"gpus", 1}, {"priority", "backfill"}, {"kind", "reservation"}}, 1001, 500);
  ASSERT_EQ(batch["result"]["state"], "granted") << batch.dump();
  node::NodeView held = Machine(1);
  held.gpus[0].processes.push_back(testing::Process(600, 60 * kGiB, 0, 1001, "python", 4000, 20));
  s->OnTick(held, clock_.SteadyNow());
  json real = Call(s.get(), "lease.request", {{"gpus", 1}, {"kind", "reservation"}}, 1002, 501);
  ASSERT_EQ(real["result"]["state"], "queued") << real.dump();
  clock_.Advance(seconds(10));
  s->OnWake();
  // The grace is over: its process is killed at once, but the lease stays
  // (revoking for request 2, which takes no other GPU) while the driver
  // still lists the process.
  EXPECT_EQ(Call(s.get(), "lease.get", {{"id", 1}})["result"]["state"], "granted");
  EXPECT_EQ(Call(s.get(), "lease.get", {{"id", 2}})["result"]["state"], "queued");
  EXPECT_NE(
      std::find(processes_.signals.begin(), processes_.signals.end(), std::pair<int64_t, int>{600, SIGKILL}),
      processes_.signals.end());
  s->OnTick(held, clock_.SteadyNow());  // Still listed (a process takes a moment to die).
  EXPECT_EQ(Call(s.get(), "lease.get", {{"id", 2}})["result"]["state"], "queued");
  s->OnTick(Machine(1), clock_.SteadyNow());  // Gone: now the GPU is empty.
  EXPECT_EQ(Call(s.get(), "lease.get", {{"id", 1}})["result"]["state"], "ended");
  EXPECT_EQ(Call(s.get(), "lease.get", {{"id", 2}})["result"]["state"], "granted");
  EXPECT_EQ(
      std::count(processes_.signals.begin(), processes_.signals.end(), std::pair<int64_t, int>{600, SIGKILL}),
      1)
      << "killed once";
}

TEST_F(RevocationTest, RegressionAKilledBackfillsGpuIsReadAgainAsSoonAsItsListedProcessesHaveExited) {
  int asked = 0;
  std::unique_ptr<LeaseService> s = RevokedWithAProcessListed(&asked);
  ASSERT_NE(s, nullptr);
  clock_.Advance(seconds(10));
  s->OnWake();  // Killed; the process has not exited yet.
  EXPECT_EQ(asked, 0);
  // While it drains, the lease thread looks again well within a tick:
  // every millisecond in the first 100 ms after the kill (a real job waits
  // on each look), every 5 ms after that.
  ASSERT_TRUE(s->NextWake().has_value());
  EXPECT_EQ(*s->NextWake(), clock_.SteadyNow() + milliseconds(1));
  clock_.Advance(milliseconds(50));
  s->OnWake();
  EXPECT_EQ(asked, 0) << "the listed process is still alive";
  processes_.table.erase(600);  // It exits.
  clock_.Advance(milliseconds(50));
  s->OnWake();
  EXPECT_EQ(asked, 1) << "a reading would now show the GPU empty";
  clock_.Advance(milliseconds(50));
  s->OnWake();
  EXPECT_EQ(asked, 1) << "asks are at most every 100 ms";
  ASSERT_TRUE(s->NextWake().has_value());
  EXPECT_EQ(*s->NextWake(), clock_.SteadyNow() + milliseconds(5)) << "150 ms after the kill";
  // That reading hands the GPU on at once.
  s->OnTick(Machine(1), clock_.SteadyNow());
  EXPECT_EQ(Call(s.get(), "lease.get", {{"id", 2}})["result"]["state"], "granted");
}

// A batch stops its engine on notice and lets go once a reading taken after
// that shows the memory free: within the grace, the agent asks for that
// reading as soon as the listed processes have exited, or, while the last
// reading lists none (an engine started since), every 100 ms.
TEST_F(RevocationTest, RegressionInItsGraceARevokedGpuIsReadAgainOnceItsProcessesHaveExited) {
  int asked = 0;
  std::unique_ptr<LeaseService> s = RevokedWithAProcessListed(&asked);
  ASSERT_NE(s, nullptr);
  // In its grace, the lease thread looks every millisecond at first (every
  // 5 ms after 100 ms), not at the grace's end.
  ASSERT_TRUE(s->NextWake().has_value());
  EXPECT_EQ(*s->NextWake(), clock_.SteadyNow() + milliseconds(1));
  clock_.Advance(milliseconds(20));
  s->OnWake();
  EXPECT_EQ(asked, 0) << "the engine still runs";
  processes_.table.erase(600);  // The engine stops on notice.
  clock_.Advance(milliseconds(20));
  s->OnWake();
  EXPECT_EQ(asked, 1) << "a reading would now show the GPU empty";
  EXPECT_TRUE(processes_.signals.empty()) << "still in its grace";
  // That reading lists nothing: until the lease ends, a reading every 100 ms.
  s->OnTick(Machine(1), clock_.SteadyNow());
  clock_.Advance(milliseconds(20));
  s->OnWake();
  EXPECT_EQ(asked, 1);
  clock_.Advance(milliseconds(100));
  s->OnWake();
  EXPECT_EQ(asked, 2);
  // A reading that lists its process again: once that exits, the ask is at
  // once, not 100 ms after the last.
  processes_.Add(601, 1001, 21);
  node::NodeView engine = Machine(1);
  engine.gpus[0].processes.push_back(testing::Process(601, 8 * kGiB, 0, 1001, "engine", 4000, 21));
  s->OnTick(engine, clock_.SteadyNow());
  processes_.table.erase(601);
  clock_.Advance(milliseconds(5));
  s->OnWake();
  EXPECT_EQ(asked, 3);
}

TEST_F(LeaseServiceTest, RegressionARequestWaitingForADrainingGpuRevokesNoOtherBackfillAndTheBoundEndsIt) {
  std::unique_ptr<LeaseService> s = BackfilledGpus(2, seconds(2));
  int64_t first_gpu = Call(s.get(), "lease.get", {{"id", 1}})["result"]["lease"]["gpus"][0].get<int64_t>();
  node::NodeView stuck = Machine(2);
  stuck.gpus[static_cast<size_t>(first_gpu)].processes.push_back(
      testing::Process(600, 60 * kGiB, 0, 1001, "python", 4000, 20));
  s->OnTick(stuck, clock_.SteadyNow());
  ASSERT_EQ(
      Call(s.get(), "lease.request", {{"gpus", 1}, {"kind", "reservation"}}, 1002, 501)["result"]["state"],
      "queued");
  int64_t revoked = 0;
  for (int id : {1, 2})
    revoked += !Call(s.get(), "lease.get", {{"id", id}})["result"]["lease"]["revoke_by_unix"].is_null();
  ASSERT_EQ(revoked, 1);
  // Past the grace, its GPU still listing a process (stuck in the driver):
  // tick after tick the request waits for it and revokes no other lease.
  for (int i = 0; i < 5; ++i) {
    clock_.Advance(seconds(1));
    s->OnWake();
    s->OnTick(stuck, clock_.SteadyNow());
  }
  json events = Call(s.get(), "events", json::object());
  int preempting = CountKind(events, "preempting");
  EXPECT_EQ(preempting, 1) << "another backfill lease was revoked for the same request: " << events.dump();
  EXPECT_EQ(Call(s.get(), "lease.get", {{"id", 3}})["result"]["state"], "queued");
  // The hand-over bound: the lease ends even though the process is still listed.
  clock_.Advance(seconds(10));
  s->OnWake();
  s->OnTick(stuck, clock_.SteadyNow());
  int ended = 0;
  for (int id : {1, 2}) ended += Call(s.get(), "lease.get", {{"id", id}})["result"]["state"] == "ended";
  EXPECT_EQ(ended, 1);
}

TEST_F(LeaseServiceTest, RegressionARevokedLeaseLetGoWhileItsGpuStillListsAProcessStaysUntilItIsEmpty) {
  std::unique_ptr<LeaseService> s = BackfilledGpus(2, seconds(30));
  ASSERT_EQ(
      Call(s.get(), "lease.request", {{"gpus", 1}, {"kind", "reservation"}}, 1002, 501)["result"]["state"],
      "queued");
  int64_t revoked =
      !Call(s.get(), "lease.get", {{"id", 1}})["result"]["lease"]["revoke_by_unix"].is_null() ? 1 : 2;
  int64_t gpu = Call(s.get(), "lease.get", {{"id", revoked}})["result"]["lease"]["gpus"][0].get<int64_t>();
  node::NodeView stuck = Machine(2);
  stuck.gpus[static_cast<size_t>(gpu)].processes.push_back(
      testing::Process(600, 60 * kGiB, 0, 1001, "python", 4000, 20));
  s->OnTick(stuck, clock_.SteadyNow());
  // Its holder lets go; a child it left still holds the GPU.
  EXPECT_EQ(Call(s.get(), "lease.release", {{"id", revoked}}, 1001, 500)["result"]["released"], revoked);
  EXPECT_NE(
      std::find(processes_.signals.begin(), processes_.signals.end(), std::pair<int64_t, int>{600, SIGKILL}),
      processes_.signals.end());
  s->OnTick(stuck, clock_.SteadyNow());
  EXPECT_EQ(Call(s.get(), "lease.get", {{"id", 3}})["result"]["state"], "queued");
  json events = Call(s.get(), "events", json::object());
  int preempting = CountKind(events, "preempting");
  EXPECT_EQ(preempting, 1) << "a second backfill lease was revoked while the first GPU drained: "
                           << events.dump();
  s->OnTick(Machine(2), clock_.SteadyNow());
  EXPECT_EQ(Call(s.get(), "lease.get", {{"id", revoked}})["result"]["state"], "ended");
  json granted = Call(s.get(), "lease.get", {{"id", 3}})["result"];
  ASSERT_EQ(granted["state"], "granted") << granted.dump();
  EXPECT_EQ(granted["lease"]["gpus"][0], gpu);
}

// Its holder lets go of a revoked lease while the last reading lists
// nothing on its GPU: an engine started after that reading may hold it
// still. The GPU goes to the waiting request only once a reading taken
// since (asked for within the release) shows it empty; what such a reading
// lists is killed first.
TEST_F(LeaseServiceTest,
       RegressionAHolderLettingGoOfARevokedLeaseHandsOverOnlyOnceAReadingSinceShowsItEmpty) {
  std::unique_ptr<LeaseService> s = BackfilledGpus(1, seconds(30));
  int asked = 0;
  s->OnWantsReading([&asked] { ++asked; });
  ASSERT_EQ(
      Call(s.get(), "lease.request", {{"gpus", 1}, {"kind", "reservation"}}, 1002, 501)["result"]["state"],
      "queued");
  EXPECT_EQ(Call(s.get(), "lease.release", {{"id", 1}}, 1001, 500)["result"]["released"], 1);
  EXPECT_EQ(asked, 1) << "a reading is asked for in the release";
  EXPECT_EQ(Call(s.get(), "lease.get", {{"id", 1}})["result"]["state"], "granted") << "no reading since";
  EXPECT_EQ(Call(s.get(), "lease.get", {{"id", 2}})["result"]["state"], "queued");
  EXPECT_TRUE(processes_.signals.empty()) << "nothing listed: /proc is not searched in the release";
  // The reading lists alice's process started since: it is killed, and the
  // GPU stays the lease's.
  node::NodeView late = Machine(1);
  late.gpus[0].processes.push_back(testing::Process(600, 8 * kGiB, 0, 1001, "engine", 4000, 20));
  s->OnTick(late, clock_.SteadyNow());
  EXPECT_NE(
      std::find(processes_.signals.begin(), processes_.signals.end(), std::pair<int64_t, int>{600, SIGKILL}),
      processes_.signals.end());
  EXPECT_EQ(Call(s.get(), "lease.get", {{"id", 2}})["result"]["state"], "queued");
  // Empty: handed over.
  s->OnTick(Machine(1), clock_.SteadyNow());
  EXPECT_EQ(Call(s.get(), "lease.get", {{"id", 1}})["result"]["state"], "ended");
  EXPECT_EQ(Call(s.get(), "lease.get", {{"id", 2}})["result"]["state"], "granted");
  json events = Call(s.get(), "events", json::object());
  EXPECT_EQ(CountKind(events, "released"), 1) << events.dump();
  EXPECT_EQ(CountKind(events, "preempted"), 0) << events.dump();
}

// --- which GPUs accept backfill --------------------------------------------------

// A batch's runner (one the agent started: the kernel vouches for its PID
// and start time) holds backfill that yields at notice, kept across a
// restart; a client's own word never makes it so. A real request that
// must revoke one of two backfill leases revokes the runner's, which stops
// in milliseconds, not the plain command's, which may take its grace.
TEST_F(LeaseServiceTest, ABatchRunnersBackfillIsRevokedBeforeAPlainCommands) {
  LeasePolicy policy = BackfillAtOnce(seconds(10));
  processes_.Add(500, 1001, 10);  // Alice's plain backfill command.
  processes_.Add(510, 1001, 12);  // Alice's batch runner.
  processes_.Add(501, 1002, 11);  // Bob.
  auto runners = [](const sched::ProcessRef& p) { return p.pid == 510 && p.start_ticks == 12; };
  {
    std::unique_ptr<LeaseService> s = Make(policy);
    s->SetBatchRunners(runners);
    s->OnTick(Machine(3), clock_.SteadyNow());
    json plain = Call(s.get(), "lease.request", {{"gpus", 1}, {"priority", "backfill"}}, 1001, 500);
    ASSERT_EQ(plain["result"]["state"], "granted") << plain.dump();
    EXPECT_EQ(plain["result"]["lease"]["yields_at_notice"], false);
    // Not the client's to say: the field is not read.
    json claimed = Call(s.get(), "lease.request",
                        {{"gpus", 1}, {"priority", "backfill"}, {"yields_at_notice", true}}, 1001, 500);
    ASSERT_EQ(claimed["result"]["state"], "granted") << claimed.dump();
    EXPECT_EQ(claimed["result"]["lease"]["yields_at_notice"], false);
    json batch = Call(s.get(), "lease.request", {{"gpus", 1}, {"priority", "backfill"}}, 1001, 510);
    ASSERT_EQ(batch["result"]["state"], "granted") << batch.dump();
    EXPECT_EQ(batch["result"]["lease"]["yields_at_notice"], true);
  }
  // After a restart (the saved leases), bob's one-GPU request revokes the
  // runner's lease (3, on GPU 2) though the plain ones are on GPUs 0 and 1.
  std::unique_ptr<LeaseService> s = Make(policy);
  s->SetBatchRunners(runners);
  ASSERT_TRUE(s->Restore().ok());
  s->OnTick(Machine(3), clock_.SteadyNow());
  json real = Call(s.get(), "lease.request", {{"gpus", 1}, {"kind", "reservation"}}, 1002, 501);
  ASSERT_EQ(real["result"]["state"], "queued") << real.dump();
  json runner_lease = Call(s.get(), "lease.get", {{"id", 3}})["result"]["lease"];
  EXPECT_EQ(runner_lease["yields_at_notice"], true) << runner_lease.dump();
  EXPECT_FALSE(runner_lease["revoke_by_unix"].is_null()) << runner_lease.dump();
  for (int plain : {1, 2}) {
    json lease = Call(s.get(), "lease.get", {{"id", plain}})["result"]["lease"];
    EXPECT_TRUE(lease["revoke_by_unix"].is_null()) << lease.dump();
  }
}

TEST(BackfillGateTest, OnlyOtherWorkResetsTheIdleClockAndLimitsApply) {
  BackfillPolicy policy;
  policy.is_auto = false;
  policy.idle_for = seconds(60);
  policy.max_temperature_celsius = 80;
  BackfillGate gate(policy);
  sched::TimePoint t0 = sched::TimePoint{} + std::chrono::hours(1);
  node::NodeView f = Machine(3);
  std::vector<Holder> none(3, Holder::kNone);
  int noon = 12 * 60;
  EXPECT_EQ(gate.Observe(f, none, t0, LocalAt(noon)), (std::vector<bool>{false, false, false}))
      << "a fresh agent waits too";
  // GPU 1 computes (no lease), GPU 2 is held by a normal lease.
  f.gpus[1].sample.utilization_gpu_ratio = 0.5;
  gate.Observe(f, {Holder::kNone, Holder::kNone, Holder::kOther}, t0 + seconds(30), LocalAt(noon));
  f.gpus[1].sample.utilization_gpu_ratio = 0;
  EXPECT_EQ(gate.Observe(f, none, t0 + seconds(60), LocalAt(noon)), (std::vector<bool>{true, false, false}));
  EXPECT_EQ(gate.Observe(f, none, t0 + seconds(90), LocalAt(noon)), (std::vector<bool>{true, true, true}));
  // Backfill's own use does not reset the clock.
  f.gpus[0].sample.utilization_gpu_ratio = 1.0;
  EXPECT_EQ(
      gate.Observe(f, {Holder::kBackfill, Holder::kNone, Holder::kNone}, t0 + seconds(100), LocalAt(noon))[0],
      true);
  // Too hot: no new backfill there.
  f.gpus[2].sample.temperature_celsius = 85;
  EXPECT_EQ(gate.Observe(f, none, t0 + seconds(110), LocalAt(noon))[2], false);
}

TEST(BackfillGateTest, WindowsAreLocalTimesOfDayAndMayWrapPastMidnight) {
  EXPECT_TRUE(InWindow("00:00-06:00", 0));
  EXPECT_TRUE(InWindow("00:00-06:00", 5 * 60 + 59));
  EXPECT_FALSE(InWindow("00:00-06:00", 6 * 60));
  EXPECT_TRUE(InWindow("22:00-06:00", 23 * 60));
  EXPECT_TRUE(InWindow("22:00-06:00", 60));
  EXPECT_FALSE(InWindow("22:00-06:00", 12 * 60));
  EXPECT_FALSE(InWindow("25:00-06:00", 60));
  EXPECT_FALSE(InWindow("06:00-06:00", 6 * 60));
  BackfillPolicy policy;
  policy.is_auto = false;
  policy.idle_for = seconds(0);
  policy.windows = {"22:00-06:00"};
  BackfillGate gate(policy);
  node::NodeView f = Machine(1);
  sched::TimePoint t0 = sched::TimePoint{} + std::chrono::hours(1);
  EXPECT_FALSE(gate.Observe(f, {Holder::kNone}, t0, LocalAt(12 * 60))[0]);
  EXPECT_TRUE(gate.Observe(f, {Holder::kNone}, t0, LocalAt(23 * 60))[0]);
}

}  // namespace
}  // namespace tarmac::leases
