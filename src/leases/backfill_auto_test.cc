// SPDX-License-Identifier: Apache-2.0
//
// idle_for = "auto" in the lease service: backfill settles, holds off on
// GPUs kept for the head of the queue, and learns
// real arrivals from grants, kept across a restart through the journal.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "testutil/lease_service_fixture.h"

namespace tarmac::leases {
namespace {

using namespace test;  // NOLINT: the shared fixture.
using nlohmann::json;
using std::chrono::seconds;

json GpuGate(const json& gpus, int index) {
  for (const json& g : gpus) {
    if (g["gpu"] == index && !g.contains("mig_profile")) return g;
  }
  return json();
}

// A real lease shorter than a tick (granted and released between two
// readings, which never saw it) still restarts the settle: backfill does
// not take the GPU back in the same second.
TEST_F(LeaseServiceTest, ALeaseShorterThanATickStillRestartsTheSettle) {
  LeasePolicy policy;  // idle_for = "auto": settle 30 s.
  processes_.Add(500, 1001, 10);
  processes_.Add(501, 1002, 11);
  std::unique_ptr<LeaseService> s = Make(policy);
  auto tick = [&] { s->OnTick(Machine(1), clock_.SteadyNow()); };
  tick();
  clock_.Advance(seconds(40));
  tick();  // GPU 0 has settled: idle 40 s.
  json gates = Call(s.get(), "backfill.gpus", json::object())["result"];
  ASSERT_EQ(GpuGate(gates["gpus"], 0)["accepts"], true) << gates.dump();
  json job = Call(s.get(), "lease.request",
                  {{"gpus", 1}, {"kind", "reservation"}, {"max_time_seconds", 3600}}, 1002, 501);
  ASSERT_EQ(job["result"]["state"], "granted") << job.dump();
  // Its event says for how long, in words, with no clock time or UUID of
  // its own (the event's time is the reader's; the UUIDs are the lease's).
  json events = Call(s.get(), "events", json::object())["result"]["events"];
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back()["detail"], "GPU 0 for 1h 00m") << events.dump();
  clock_.Advance(std::chrono::milliseconds(300));
  ASSERT_TRUE(
      Call(s.get(), "lease.release", {{"id", job["result"]["lease"]["id"]}}, 1002, 501)["ok"].get<bool>());
  clock_.Advance(std::chrono::milliseconds(700));
  tick();
  json backfill =
      Call(s.get(), "lease.request", {{"gpus", 1}, {"priority", "backfill"}, {"kind", "reservation"}});
  EXPECT_EQ(backfill["result"]["state"], "queued") << backfill.dump();
  gates = Call(s.get(), "backfill.gpus", json::object())["result"];
  // Idle since the release, 0.7 s ago, not since the last reading.
  EXPECT_EQ(GpuGate(gates["gpus"], 0)["why"], "settling: idle 700ms of settle 30s") << gates.dump();
  clock_.Advance(seconds(30));
  tick();
  gates = Call(s.get(), "backfill.gpus", json::object())["result"];
  EXPECT_EQ(GpuGate(gates["gpus"], 0)["accepts"], true) << gates.dump();
}

// A GPU's settle that runs out between two readings asks for a reading
// then, once for that moment: backfill takes the GPU at once, not at the
// next sampling tick (up to a second later, a gap after every job).
TEST_F(LeaseServiceTest, ASettleRunningOutBetweenTicksAsksForAReadingThen) {
  LeasePolicy policy;  // idle_for = "auto": settle 30 s.
  processes_.Add(500, 1001, 10);
  std::unique_ptr<LeaseService> s = Make(policy);
  int asked = 0;
  s->OnWantsReading([&asked] { ++asked; });
  const sched::TimePoint first_look = clock_.SteadyNow();
  s->OnTick(Machine(1), first_look);
  EXPECT_FALSE(s->NextWake().has_value()) << "no backfill waits: nothing to read for";
  json backfill =
      Call(s.get(), "lease.request", {{"gpus", 1}, {"priority", "backfill"}, {"kind", "reservation"}});
  ASSERT_EQ(backfill["result"]["state"], "queued") << backfill.dump();
  int64_t id = backfill["result"]["request"]["id"];
  ASSERT_TRUE(s->NextWake().has_value());
  EXPECT_EQ(*s->NextWake(), first_look + seconds(30)) << "idle since the first look";
  clock_.Advance(seconds(29));
  s->OnWake();
  EXPECT_EQ(asked, 0) << "still settling";
  clock_.Advance(seconds(1));
  s->OnWake();
  EXPECT_EQ(asked, 1) << "the settle has run out";
  EXPECT_FALSE(s->NextWake().has_value()) << "asked once for that opening";
  s->OnWake();
  EXPECT_EQ(asked, 1);
  // The reading it asked for grants the backfill.
  s->OnTick(Machine(1), clock_.SteadyNow());
  EXPECT_EQ(Call(s.get(), "lease.get", {{"id", id}})["result"]["state"], "granted");
  EXPECT_FALSE(s->NextWake().has_value());
}

TEST_F(LeaseServiceTest, AutoGateSettlesHoldsOffForAWaitingRequestAndLearnsArrivals) {
  LeasePolicy policy;  // idle_for = "auto": settle 30 s, min_run 2 m.
  ASSERT_TRUE(policy.backfill.is_auto);
  processes_.Add(500, 1001, 10);
  processes_.Add(501, 1002, 11);
  {
    std::unique_ptr<LeaseService> s = Make(policy);
    auto tick = [&] { s->OnTick(Machine(2), clock_.SteadyNow()); };
    tick();
    // Bob's real reservation (for an hour) takes GPU 0; alice's backfill
    // waits for GPU 1 to settle.
    ASSERT_EQ(
        Call(s.get(), "lease.request", {{"gpus", 1}, {"kind", "reservation"}, {"max_time_seconds", 3600}},
             1002, 501)["result"]["state"],
        "granted");
    json backfill =
        Call(s.get(), "lease.request", {{"gpus", 1}, {"priority", "backfill"}, {"kind", "reservation"}});
    ASSERT_EQ(backfill["result"]["state"], "queued") << backfill.dump();
    int64_t backfill_id = backfill["result"]["request"]["id"];
    EXPECT_NE(backfill["result"]["request"]["reason"].get<std::string>().find(
                  "GPU 1: settling: idle 0s of settle 30s, opens in 30s"),
              std::string::npos);
    json gates = Call(s.get(), "backfill.gpus", json::object())["result"];
    EXPECT_EQ(gates["idle_for"], "auto");
    EXPECT_EQ(gates["settle_seconds"], 30);
    EXPECT_EQ(GpuGate(gates["gpus"], 1)["why"], "settling: idle 0s of settle 30s") << gates.dump();
    EXPECT_EQ(GpuGate(gates["gpus"], 1)["starts_in_seconds"], 30);
    // Bob asks for both GPUs: the head of the queue, with GPU 1 and GPU 0
    // (free in an hour) kept for it, so backfill holds off on GPU 1 even
    // once it has settled.
    json both = Call(s.get(), "lease.request", {{"gpus", 2}, {"kind", "reservation"}}, 1002, 501);
    ASSERT_EQ(both["result"]["state"], "queued") << both.dump();
    clock_.Advance(seconds(31));
    tick();
    gates = Call(s.get(), "backfill.gpus", json::object())["result"];
    EXPECT_EQ(GpuGate(gates["gpus"], 1)["why"], "holds off: kept for the request at the head of the queue");
    EXPECT_EQ(GpuGate(gates["gpus"], 1)["accepts"], false);
    EXPECT_EQ(Call(s.get(), "lease.get", {{"id", backfill_id}})["result"]["state"], "queued");
    // Bob gives up on it: backfill starts on GPU 1 at the next tick.
    Call(s.get(), "lease.release", {{"id", both["result"]["request"]["id"]}}, 1002, 501);
    tick();
    json got = Call(s.get(), "lease.get", {{"id", backfill_id}})["result"];
    ASSERT_EQ(got["state"], "granted") << got.dump();
    EXPECT_EQ(got["lease"]["gpus"][0], 1);
    gates = Call(s.get(), "backfill.gpus", json::object())["result"];
    EXPECT_EQ(GpuGate(gates["gpus"], 0)["arrivals_per_hour"], 1) << "bob's grant is an arrival";
    EXPECT_EQ(GpuGate(gates["gpus"], 1)["arrivals_per_hour"], 0) << "backfill's grant is not";
    // Defect: the GPU backfill now runs on said "starts now".
    EXPECT_EQ(GpuGate(gates["gpus"], 1)["why"].get<std::string>().rfind(
                  fmt::format("running backfill lease {} of ", backfill_id), 0),
              0u)
        << gates.dump();
    EXPECT_FALSE(GpuGate(gates["gpus"], 1).contains("starts_in_seconds")) << gates.dump();
  }
  // After a restart the arrivals are learned again from the journal.
  std::unique_ptr<LeaseService> s = Make(policy);
  ASSERT_TRUE(s->Restore().ok());
  s->OnTick(Machine(2), clock_.SteadyNow());
  json gates = Call(s.get(), "backfill.gpus", json::object())["result"];
  EXPECT_EQ(GpuGate(gates["gpus"], 0)["arrivals_per_hour"], 1) << gates.dump();
  EXPECT_EQ(GpuGate(gates["gpus"], 1)["arrivals_per_hour"], 0) << gates.dump();
}

}  // namespace
}  // namespace tarmac::leases
