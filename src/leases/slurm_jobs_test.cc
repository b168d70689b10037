// SPDX-License-Identifier: Apache-2.0
//
// Slurm jobs' leases (slurm_jobs.cc): prolog to epilog, the leftovers
// terminated, and the [slurm] idle policy run through Slurm's commands.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <set>

#include "leases/lease_service.h"
#include "testutil/lease_service_fixture.h"
#include "testutil/process_views.h"

namespace tarmac::leases {
namespace {

using namespace test;  // NOLINT: the shared fixture.
using nlohmann::json;
using std::chrono::seconds;

// --- Slurm jobs -----------------------------------------------------------------

TEST_F(LeaseServiceTest, ASlurmJobsGpusAreALeaseFromItsPrologToItsEpilog) {
  processes_.Add(500, 1001, 10);   // A `tarmac run` client.
  processes_.Add(7001, 1005, 71);  // The job's process, left behind.
  processes_.Add(7002, 1009, 72);  // Another user's process on the same GPU.
  std::unique_ptr<LeaseService> s = Make();
  auto fleet = [] {
    return Machine(4, {{2, testing::Process(7001, 2 * kGiB, 0, 1005, "python", 1, 71)},
                       {2, testing::Process(7002, 1 * kGiB, 0, 1009, "python", 1, 72)}});
  };
  s->OnTick(fleet(), clock_.SteadyNow());
  json prolog = {{"job", "4242"}, {"uid", 1005}, {"user", "erin"}, {"gpus", {2, 3}}};
  // Only Slurm (root) runs the prolog.
  EXPECT_EQ(Call(s.get(), "slurm.prolog", prolog, 1005)["error"]["code"], ipc::kErrorPermissionDenied);
  json held = Call(s.get(), "slurm.prolog", prolog, 0);
  ASSERT_TRUE(held["ok"].get<bool>()) << held.dump();
  EXPECT_EQ(held["result"]["lease"]["kind"], "slurm");
  EXPECT_EQ(held["result"]["lease"]["user"], "erin");
  EXPECT_EQ(held["result"]["lease"]["uid"], 1005);
  EXPECT_EQ(held["result"]["lease"]["slurm_job"], "4242");
  int64_t id = held["result"]["lease"]["id"].get<int64_t>();
  // Run twice: the same lease.
  EXPECT_EQ(Call(s.get(), "slurm.prolog", prolog, 0)["result"]["lease"]["id"], id);
  // tarmac run waits for the job's GPUs; nobody releases them but the epilog.
  EXPECT_EQ(Call(s.get(), "lease.request", {{"uuids", {"GPU-2"}}})["result"]["state"], "queued");
  EXPECT_EQ(Call(s.get(), "lease.release", {{"id", id}}, 0)["error"]["code"], ipc::kErrorBadRequest);
  // Bad input changes nothing.
  EXPECT_EQ(Call(s.get(), "slurm.prolog", {{"job", "x1"}, {"uid", 1}, {"user", "u"}, {"gpus", {0}}},
                 0)["error"]["code"],
            ipc::kErrorBadRequest);
  json unknown = Call(s.get(), "slurm.prolog", {{"job", "9"}, {"uid", 1}, {"user", "u"}, {"gpus", {7}}}, 0);
  EXPECT_NE(unknown["error"]["message"].get<std::string>().find("no GPU 7"), std::string::npos)
      << unknown.dump();
  EXPECT_EQ(Call(s.get(), "slurm.epilog", {{"job", "999"}}, 0)["error"]["code"], ipc::kErrorNotFound);

  // The restart keeps it.
  s.reset();
  s = Make();
  ASSERT_TRUE(s->Restore().ok());
  s->OnTick(fleet(), clock_.SteadyNow());
  clock_.Advance(seconds(60));
  // The epilog: the lease ends, the job's leftover is terminated, the
  // other user's process is not.
  json ended = Call(s.get(), "slurm.epilog", {{"job", "4242"}}, 0);
  ASSERT_TRUE(ended["ok"].get<bool>()) << ended.dump();
  EXPECT_EQ(ended["result"]["lease"], id);
  ASSERT_EQ(ended["result"]["terminated"].size(), 1u) << ended.dump();
  EXPECT_EQ(ended["result"]["terminated"][0]["pid"], 7001);
  EXPECT_NEAR(ended["result"]["held_seconds"].get<double>(), 60, 1);
  EXPECT_EQ(ended["result"]["mean_utilization_ratio"], 0.0);  // Its GPUs read 0 % while watched.
  EXPECT_TRUE(ended["result"]["idle_gpu_seconds"].is_number());
  ASSERT_EQ(processes_.signals.size(), 1u);
  EXPECT_EQ(processes_.signals[0], std::make_pair(int64_t{7001}, SIGTERM));
  json leases = Call(s.get(), "leases", json::object())["result"]["leases"];
  for (const json& l : leases) EXPECT_NE(l["kind"], "slurm") << leases.dump();
}

TEST_F(LeaseServiceTest, AJobsPrologTakesGpusWhoseLastJobsEpilogWasMissedButNeverAReservation) {
  processes_.Add(500, 1001, 10);
  std::unique_ptr<LeaseService> s = Make();
  s->OnTick(Machine(4), clock_.SteadyNow());
  ASSERT_TRUE(Call(s.get(), "slurm.prolog", {{"job", "1"}, {"uid", 1005}, {"user", "erin"}, {"gpus", {0, 1}}},
                   0)["ok"]);
  json next =
      Call(s.get(), "slurm.prolog", {{"job", "2"}, {"uid", 1006}, {"user", "finn"}, {"gpus", {1}}}, 0);
  ASSERT_TRUE(next["ok"].get<bool>()) << next.dump();
  json leases = Call(s.get(), "leases", json::object())["result"]["leases"];
  ASSERT_EQ(leases.size(), 1u);
  EXPECT_EQ(leases[0]["slurm_job"], "2");
  ASSERT_EQ(
      Call(s.get(), "lease.request", {{"uuids", {"GPU-3"}}, {"kind", "reservation"}})["result"]["state"],
      "granted");
  json clash =
      Call(s.get(), "slurm.prolog", {{"job", "3"}, {"uid", 1005}, {"user", "erin"}, {"gpus", {3}}}, 0);
  EXPECT_EQ(clash["error"]["code"], ipc::kErrorBadRequest) << clash.dump();
  EXPECT_NE(clash["error"]["message"].get<std::string>().find("reservation"), std::string::npos);
}

TEST_F(LeaseServiceTest, AnIdleSlurmJobIsAskedAboutThroughSlurmByPartitionAfterADryRun) {
  LeasePolicy policy;
  policy.idle_grace = seconds(5);
  policy.slurm.idle_after = seconds(20);
  policy.slurm.action = SlurmIdleAction::kWarn;
  policy.slurm.action_by_partition["debug"] = SlurmIdleAction::kCancel;
  std::vector<std::vector<std::string>> ran;
  auto run = [&](LeaseService* s) {
    s->SetSlurmCommand([&ran](const std::vector<std::string>& argv) {
      ran.push_back(argv);
      return argv[0] == "scontrol" ? Status::Internal("scontrol exited with 1") : Status::OK();
    });
  };
  auto idle_for = [&](LeaseService* s, int seconds_idle) {
    for (int i = 0; i < seconds_idle / 5; ++i) {
      clock_.Advance(seconds(5));
      s->OnTick(Machine(2), clock_.SteadyNow());
    }
  };
  auto kinds = [&](LeaseService* s) {
    std::vector<std::string> out;
    json events = Call(s, "events", {{"limit", 1000}}, 0);
    for (const json& e : events["result"]["events"]) out.push_back(e["kind"]);
    return out;
  };
  // Dry run (the default): nothing runs, the event says what would.
  {
    policy.slurm.is_dry_run = true;
    std::unique_ptr<LeaseService> s = Make(policy, false);
    run(s.get());
    s->OnTick(Machine(2), clock_.SteadyNow());
    ASSERT_TRUE(Call(s.get(), "slurm.prolog",
                     {{"job", "11"}, {"uid", 1005}, {"user", "erin"}, {"gpus", {0}}, {"partition", "debug"}},
                     0)["ok"]);
    idle_for(s.get(), 40);
    EXPECT_TRUE(ran.empty());
    json leases = Call(s.get(), "leases", json::object())["result"]["leases"];
    ASSERT_EQ(leases.size(), 1u);  // Never ended by tarmac.
    std::string warning = leases[0]["warning"].get<std::string>();
    EXPECT_NE(warning.find("policy 'cancel (dry run)'"), std::string::npos) << warning;
    EXPECT_NE(warning.find("would have run `scancel 11`"), std::string::npos) << warning;
    EXPECT_EQ(warning.find("acts in"), std::string::npos) << "it has acted: " << warning;
  }
  // For real: cancel in `debug`, warn elsewhere; a failing command is said.
  policy.slurm.is_dry_run = false;
  std::unique_ptr<LeaseService> s = Make(policy);
  run(s.get());
  s->OnTick(Machine(2), clock_.SteadyNow());
  ASSERT_TRUE(Call(s.get(), "slurm.prolog",
                   {{"job", "12"}, {"uid", 1005}, {"user", "erin"}, {"gpus", {0}}, {"partition", "debug"}},
                   0)["ok"]);
  ASSERT_TRUE(Call(s.get(), "slurm.prolog",
                   {{"job", "13"}, {"uid", 1006}, {"user", "finn"}, {"gpus", {1}}, {"partition", "gpu"}},
                   0)["ok"]);
  idle_for(s.get(), 15);
  EXPECT_TRUE(ran.empty());  // Not idle long enough yet.
  idle_for(s.get(), 10);
  // Warned: the listing counts down to the action.
  auto warning_of = [&](const std::string& job) {
    json listing = Call(s.get(), "leases", json::object());
    for (const json& l : listing["result"]["leases"]) {
      if (l["slurm_job"] == job)
        return l["warning"].is_string() ? l["warning"].get<std::string>() : std::string();
    }
    return std::string("no lease");
  };
  EXPECT_NE(warning_of("12").find("policy 'cancel' acts in 5s"), std::string::npos) << warning_of("12");
  idle_for(s.get(), 20);
  ASSERT_EQ(ran.size(), 2u);
  // Acted: the listing says what ran, or what failed, not "acts in".
  EXPECT_NE(warning_of("12").find("acted: ran `scancel 12`"), std::string::npos) << warning_of("12");
  EXPECT_NE(warning_of("13").find("did not act: `scontrol notify 13` failed"), std::string::npos)
      << warning_of("13");
  std::sort(ran.begin(), ran.end());
  EXPECT_EQ(ran[0], (std::vector<std::string>{"scancel", "12"}));
  EXPECT_EQ(ran[1][0], "scontrol");
  EXPECT_EQ(ran[1][1], "notify");
  EXPECT_EQ(ran[1][2], "13");
  idle_for(s.get(), 30);
  EXPECT_EQ(ran.size(), 2u);  // Once per idle stretch.
  std::vector<std::string> k = kinds(s.get());
  EXPECT_NE(std::find(k.begin(), k.end(), "slurm_idle_cancel"), k.end());
  EXPECT_NE(std::find(k.begin(), k.end(), "slurm_action_failed"), k.end());
}

TEST_F(LeaseServiceTest, RegressionAPrologWithAnImpossibleUidOrAHostileUserNameIsRefused) {
  processes_.Add(500, 1001, 10);
  std::unique_ptr<LeaseService> s = Make();
  s->OnTick(Machine(2), clock_.SteadyNow());
  auto prolog = [&](json uid, json user) {
    return Call(s.get(), "slurm.prolog", {{"job", "5"}, {"uid", uid}, {"user", user}, {"gpus", {0}}}, 0);
  };
  EXPECT_EQ(prolog(int64_t{99999999999}, "erin")["error"]["code"], ipc::kErrorBadRequest);
  EXPECT_EQ(prolog(int64_t{4294967295}, "erin")["error"]["code"], ipc::kErrorBadRequest);
  EXPECT_EQ(prolog(1005, std::string("er\0in", 5))["error"]["code"], ipc::kErrorBadRequest);
  EXPECT_EQ(prolog(1005, "er\u202Ein")["error"]["code"], ipc::kErrorBadRequest);
  EXPECT_EQ(prolog(1005, std::string(60000, 'a'))["error"]["code"], ipc::kErrorBadRequest);
  EXPECT_EQ(prolog(1005, "er\nin")["error"]["code"], ipc::kErrorBadRequest);
  EXPECT_TRUE(Call(s.get(), "leases", json::object())["result"]["leases"].empty()) << "nothing recorded";
  json ok = prolog(1005, "erin.d-2");
  EXPECT_TRUE(ok["ok"].get<bool>()) << ok.dump();
}

TEST_F(LeaseServiceTest, RegressionBackfillGivesWayToASlurmJobWithItsGraceAndTheClaimedGpuGoesToNoOneElse) {
  std::unique_ptr<LeaseService> s = BackfilledGpus(2, seconds(5));
  int64_t gpu = Call(s.get(), "lease.get", {{"id", 1}})["result"]["lease"]["gpus"][0].get<int64_t>();
  json prolog_params = {{"job", "8"}, {"uid", 1005}, {"user", "erin"}, {"gpus", {gpu}}};
  // Slurm gives the first backfill's GPU to a job: the backfill is revoked
  // with its grace, and the prolog is told to ask again.
  json prolog = Call(s.get(), "slurm.prolog", prolog_params, 0);
  ASSERT_TRUE(prolog["ok"].get<bool>()) << prolog.dump();
  EXPECT_TRUE(prolog["result"]["waiting"].get<bool>()) << prolog.dump();
  EXPECT_TRUE(prolog["result"]["lease"].is_null());
  EXPECT_NE(prolog["result"]["detail"].get<std::string>().find("lease 1 of"), std::string::npos)
      << prolog.dump();
  json lease = Call(s.get(), "lease.get", {{"id", 1}})["result"];
  EXPECT_EQ(lease["state"], "granted") << "its grace first";
  EXPECT_FALSE(lease["lease"]["revoke_by_unix"].is_null()) << lease.dump();
  EXPECT_TRUE(Call(s.get(), "slurm.prolog", prolog_params, 0)["result"]["waiting"].get<bool>());
  json events = Call(s.get(), "events", json::object());
  EXPECT_EQ(CountKind(events, "preempting"), 1) << "asked twice, revoked once: " << events.dump();
  // Meanwhile a real request for one GPU takes the other one, never the
  // claimed GPU, even once that backfill has ended.
  json real = Call(s.get(), "lease.request", {{"gpus", 1}, {"kind", "reservation"}}, 1002, 501);
  ASSERT_EQ(real["result"]["state"], "queued") << real.dump();
  clock_.Advance(seconds(5));
  s->OnWake();
  s->OnTick(Machine(2), clock_.SteadyNow());  // Taken after the kill: the GPU is empty.
  EXPECT_EQ(Call(s.get(), "lease.get", {{"id", 1}})["result"]["state"], "ended");
  json granted = Call(s.get(), "lease.get", {{"id", 3}})["result"];
  ASSERT_EQ(granted["state"], "granted") << granted.dump();
  EXPECT_NE(granted["lease"]["gpus"][0].get<int64_t>(), gpu) << granted.dump();
  // The prolog asks again: the job holds its GPU.
  prolog = Call(s.get(), "slurm.prolog", prolog_params, 0);
  ASSERT_TRUE(prolog["ok"].get<bool>()) << prolog.dump();
  EXPECT_EQ(prolog["result"]["lease"]["kind"], "slurm") << prolog.dump();
  EXPECT_EQ(prolog["result"]["lease"]["gpus"][0].get<int64_t>(), gpu);
  events = Call(s.get(), "events", json::object());
  bool names_the_job = false;
  for (const json& e : events["result"]["events"]) {
    names_the_job |=
        e["kind"] == "preempted" && e["detail"].get<std::string>().find("Slurm job 8") != std::string::npos;
  }
  EXPECT_TRUE(names_the_job) << events.dump();
}

TEST_F(LeaseServiceTest, RegressionBackfillGivesWayToAPodWithItsGrace) {
  std::unique_ptr<LeaseService> s = BackfilledGpus(1, seconds(5));
  Result<bool> held = s->TryHoldForPod({"GPU-0"});
  ASSERT_TRUE(held.ok()) << held.status().message();
  EXPECT_FALSE(held.value()) << "the backfill has its grace first";
  EXPECT_EQ(Call(s.get(), "lease.get", {{"id", 1}})["result"]["state"], "granted");
  clock_.Advance(seconds(5));
  s->OnWake();
  s->OnTick(Machine(1), clock_.SteadyNow());  // Taken after the kill: the GPU is empty.
  held = s->TryHoldForPod({"GPU-0"});
  ASSERT_TRUE(held.ok()) << held.status().message();
  EXPECT_TRUE(held.value());
  json leases = Call(s.get(), "leases", json::object())["result"]["leases"];
  ASSERT_EQ(leases.size(), 1u) << leases.dump();
  EXPECT_EQ(leases[0]["kind"], "pod");
  json events = Call(s.get(), "events", json::object());
  EXPECT_EQ(CountKind(events, "preempting"), 1) << events.dump();
  EXPECT_EQ(CountKind(events, "preempted"), 1) << events.dump();
}

TEST_F(LeaseServiceTest, APodsAllocateWaitsForBackfillAtMostItsBoundThenSaysWhatHeldIt) {
  std::unique_ptr<LeaseService> s = BackfilledGpus(1, seconds(5));
  // Nothing ends the backfill lease here (no lease thread): the call gives
  // up at its bound, on the service's clock, and says why.
  sched::TimePoint start = clock_.SteadyNow();
  Status held = s->HoldForPod({"GPU-0"});
  EXPECT_EQ(held.code(), StatusCode::kUnavailable);
  EXPECT_NE(held.message().find("backfill lease 1 of"), std::string::npos) << held.message();
  EXPECT_GE(clock_.SteadyNow() - start, s->ClaimBound());
  EXPECT_EQ(s->ClaimBound(), seconds(5) + LeaseService::kHandoverBound + LeaseService::kClaimSlack);
}

TEST_F(LeaseServiceTest, RegressionTheEpilogEndsAndCountsOnlyTheJobsOwnProcesses) {
  processes_.Add(600, 0, 50);      // The prolog (slurmd runs it as root).
  processes_.Add(7000, 1005, 40);  // erin's, on the GPU before the job began.
  processes_.Add(7001, 1005, 71);  // The job's, left behind.
  processes_.Add(7002, 1009, 72);  // Another user's, 30 GiB.
  std::unique_ptr<LeaseService> s = Make();
  node::NodeView f = Machine(1, {{0, testing::Process(7000, 1 * kGiB, 0, 1005, "python", 1, 40)},
                                 {0, testing::Process(7001, 2 * kGiB, 0, 1005, "python", 1, 71)},
                                 {0, testing::Process(7002, 30 * kGiB, 0, 1009, "python", 1, 72)}});
  s->OnTick(f, clock_.SteadyNow());
  ASSERT_TRUE(Call(s.get(), "slurm.prolog", {{"job", "5"}, {"uid", 1005}, {"user", "erin"}, {"gpus", {0}}}, 0,
                   600)["ok"]);
  s->OnTick(f, clock_.SteadyNow());
  json ended = Call(s.get(), "slurm.epilog", {{"job", "5"}}, 0);
  ASSERT_TRUE(ended["ok"].get<bool>()) << ended.dump();
  ASSERT_EQ(ended["result"]["terminated"].size(), 1u) << ended.dump();
  EXPECT_EQ(ended["result"]["terminated"][0]["pid"], 7001);
  EXPECT_EQ(processes_.signals, (std::vector<std::pair<int64_t, int>>{{7001, SIGTERM}}));
  // Its peak memory is erin's 3 GiB, not the GPU's 33.
  EXPECT_EQ(ended["result"]["memory_max_bytes"], 3 * kGiB) << ended.dump();
}

}  // namespace
}  // namespace tarmac::leases

namespace tarmac::leases {
namespace {

using namespace test;  // NOLINT: the shared fixture.
using nlohmann::json;

// A job given a GPU to drain fails its prolog, naming the GPU and why (with
// --strict, Slurm then drains the node and requeues the job); a GPU drained
// by hand fails it too, and no lease is recorded.
TEST_F(LeaseServiceTest, APrologOnAGpuToDrainIsRefusedNamingTheEvidence) {
  processes_.Add(1, 0, 1);
  std::unique_ptr<LeaseService> s = Make();
  node::NodeView view = Machine(3);
  view.gpus[1].xid_count = 1;
  view.gpus[1].xid_count_by_code = {{79, 1}};
  s->OnTick(view, clock_.SteadyNow());
  json refused =
      Call(s.get(), "slurm.prolog", {{"job", "51"}, {"uid", 1005}, {"user", "erin"}, {"gpus", {0, 1}}}, 0);
  ASSERT_FALSE(refused["ok"].get<bool>()) << refused.dump();
  EXPECT_NE(refused["error"]["message"].get<std::string>().find("GPU 1 is to drain: Xid 79"),
            std::string::npos)
      << refused.dump();
  EXPECT_TRUE(Call(s.get(), "leases", json::object())["result"]["leases"].empty());
  ASSERT_TRUE(Call(s.get(), "gpu.drain", {{"gpu", "2"}, {"reason", "fan"}}, 0, 1)["ok"].get<bool>());
  json drained =
      Call(s.get(), "slurm.prolog", {{"job", "52"}, {"uid", 1005}, {"user", "erin"}, {"gpus", {2}}}, 0);
  EXPECT_NE(drained["error"]["message"].get<std::string>().find("GPU 2 is to drain: drained by root: fan"),
            std::string::npos)
      << drained.dump();
  json fine =
      Call(s.get(), "slurm.prolog", {{"job", "53"}, {"uid", 1005}, {"user", "erin"}, {"gpus", {0}}}, 0);
  EXPECT_EQ(fine["result"]["lease"]["gpus"], json::array({0})) << fine.dump();
}

}  // namespace
}  // namespace tarmac::leases
