// SPDX-License-Identifier: Apache-2.0
//
// Leases on MIG instances (mig_leases.cc, sched/mig_placement.h): granted
// by profile or UUID and packed, never a GPU with instances given whole,
// idle, foreign and zombie policies per instance, a layout change ending
// the leases on instances it destroyed, pods holding instances, backfill
// judged per instance.
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
using std::chrono::seconds;

node::MigInstance Instance(int gpu, int gi, const std::string& profile) {
  node::MigInstance m;
  m.uuid = fmt::format("MIG-{}-{}", gpu, gi);
  m.gpu_instance_id = gi;
  m.profile = profile;
  m.memory_total_bytes = profile == "3g.40gb" ? 40 * kGiB : 10 * kGiB;
  m.memory_used_bytes = 0;
  m.graphics_engine_active_ratio = 0;
  return m;
}

// GPU 0: 3g.40gb (gi 1) and four 1g.10gb (gi 2-5); GPU 1: seven 1g.10gb
// (gi 1-7); GPU 2: whole, no MIG.
node::NodeView MigFleet() {
  node::NodeView f = Machine(3);
  for (int g = 0; g < 2; ++g) {
    f.gpus[static_cast<size_t>(g)].info.is_mig_enabled = true;
    f.gpus[static_cast<size_t>(g)].sample.utilization_gpu_ratio.reset();
    f.gpus[static_cast<size_t>(g)].sample.has_mig_instances = true;
  }
  f.gpus[0].sample.mig_instances.push_back(Instance(0, 1, "3g.40gb"));
  for (int gi = 2; gi <= 5; ++gi) f.gpus[0].sample.mig_instances.push_back(Instance(0, gi, "1g.10gb"));
  for (int gi = 1; gi <= 7; ++gi) f.gpus[1].sample.mig_instances.push_back(Instance(1, gi, "1g.10gb"));
  return f;
}

node::ProcessView InInstance(int64_t pid, int gi, int64_t uid, int64_t start) {
  node::ProcessView p = testing::Process(pid, 2 * kGiB, 0, uid, "python", 4000, start);
  p.process.sm_utilization_ratio.reset();  // Not under MIG.
  p.process.gpu_instance_id = gi;
  p.process.compute_instance_id = 0;
  return p;
}

std::vector<std::string> Kinds(const json& events) {
  std::vector<std::string> kinds;
  for (const json& e : events) kinds.push_back(e["kind"]);
  return kinds;
}

TEST_F(LeaseServiceTest, AMigLeaseIsOneInstancePackedOntoGpusAlreadyInUse) {
  processes_.Add(500, 1001, 10);
  std::unique_ptr<LeaseService> s = Make();
  node::NodeView f = MigFleet();
  f.gpus[1].processes.push_back(InInstance(700, 7, 1002, 5));  // Someone runs in GPU 1's last instance.
  s->OnTick(f, clock_.SteadyNow());
  json a = Call(s.get(), "lease.request", {{"mig_profile", "1g.10gb"}, {"command", "a"}});
  ASSERT_EQ(a["result"]["state"], "granted") << a.dump();
  json lease = a["result"]["lease"];
  // GPU 0 has fewer free instances (5, against GPU 1's 6): packed there.
  EXPECT_EQ(lease["gpus"], json::array({0}));
  EXPECT_EQ(lease["uuids"], json::array({"MIG-0-2"}));
  EXPECT_EQ(lease["mig_profile"], "1g.10gb");
  // CUDA_VISIBLE_DEVICES for it is the MIG UUID.
  json b = Call(s.get(), "lease.request", {{"mig_profile", "1g.10gb"}, {"command", "b"}});
  EXPECT_EQ(b["result"]["lease"]["uuids"], json::array({"MIG-0-3"}));
  // Named by UUID; one already leased waits; the occupied one is not handed out.
  json c = Call(s.get(), "lease.request", {{"uuids", {"MIG-1-4"}}, {"command", "c"}});
  EXPECT_EQ(c["result"]["state"], "granted") << c.dump();
  json d = Call(s.get(), "lease.request", {{"uuids", {"MIG-0-2"}}, {"command", "d"}, {"wait", false}});
  EXPECT_NE(d["result"]["state"], "granted") << d.dump();
  // A whole-GPU request never takes a GPU with instances: one GPU is whole.
  json whole = Call(s.get(), "lease.request", {{"gpus", 1}, {"command", "whole"}});
  EXPECT_EQ(whole["result"]["lease"]["gpus"], json::array({2})) << whole.dump();
  json two = Call(s.get(), "lease.request", {{"gpus", 2}, {"command", "two"}});
  EXPECT_EQ(two["error"]["code"], ipc::kErrorBadRequest) << two.dump();
  EXPECT_NE(two["error"]["message"].get<std::string>().find("not in MIG mode"), std::string::npos)
      << two.dump();
  json named = Call(s.get(), "lease.request", {{"uuids", {"GPU-0"}}, {"command", "named"}});
  EXPECT_NE(named["error"]["message"].get<std::string>().find("is in MIG mode"), std::string::npos)
      << named.dump();
}

TEST_F(LeaseServiceTest, AProfileOrInstanceThatDoesNotExistIsRefusedByName) {
  processes_.Add(500, 1001, 10);
  std::unique_ptr<LeaseService> s = Make();
  s->OnTick(MigFleet(), clock_.SteadyNow());
  json unknown = Call(s.get(), "lease.request", {{"mig_profile", "2g.20gb"}, {"command", "x"}});
  ASSERT_FALSE(unknown["ok"].get<bool>()) << unknown.dump();
  EXPECT_EQ(
      unknown["error"]["message"],
      "can never fit: no MIG instance of profile '2g.20gb' on this machine (it has 1g.10gb x11, 3g.40gb x1)");
  json malformed = Call(s.get(), "lease.request", {{"mig_profile", "big"}, {"command", "x"}});
  EXPECT_NE(malformed["error"]["message"].get<std::string>().find("params.mig_profile"), std::string::npos);
  json gone = Call(s.get(), "lease.request", {{"uuids", {"MIG-9-9"}}, {"command", "x"}});
  EXPECT_NE(gone["error"]["message"].get<std::string>().find("MIG-9-9"), std::string::npos) << gone.dump();
  EXPECT_TRUE(Call(s.get(), "leases", json::object())["result"]["leases"].empty());
}

TEST_F(LeaseServiceTest, AnotherInstancesProcessIsNotForeignToAMigLease) {
  processes_.Add(500, 1001, 10);
  LeasePolicy policy;
  policy.terminates_foreign = true;
  std::unique_ptr<LeaseService> s = Make(policy);
  s->OnTick(MigFleet(), clock_.SteadyNow());
  json a = Call(s.get(), "lease.request", {{"uuids", {"MIG-1-3"}}, {"command", "a"}});
  ASSERT_EQ(a["result"]["state"], "granted") << a.dump();
  // Bob runs in instance 4 of the same GPU (his own), then in the leased one.
  processes_.Add(800, 1002, 30);
  node::NodeView f = MigFleet();
  f.gpus[1].processes.push_back(InInstance(800, 4, 1002, 30));
  s->OnTick(f, clock_.SteadyNow());
  EXPECT_TRUE(processes_.signals.empty());
  std::vector<std::string> kinds = Kinds(Call(s.get(), "events", json::object())["result"]["events"]);
  EXPECT_EQ(std::count(kinds.begin(), kinds.end(), "foreign_process"), 0) << json(kinds).dump();
  f.gpus[1].processes[0].process.gpu_instance_id = 3;
  s->OnTick(f, clock_.SteadyNow());
  kinds = Kinds(Call(s.get(), "events", json::object())["result"]["events"]);
  EXPECT_EQ(std::count(kinds.begin(), kinds.end(), "foreign_process"), 1) << json(kinds).dump();
  EXPECT_EQ(processes_.signals, (std::vector<std::pair<int64_t, int>>{{800, SIGTERM}}));
}

TEST_F(LeaseServiceTest, TheIdlePolicyJudgesAMigLeaseByItsInstancesEngine) {
  processes_.Add(500, 1001, 10);
  LeasePolicy policy;
  policy.default_idle_timeout = seconds(60);
  policy.idle_grace = seconds(30);
  policy.idle_action = IdleAction::kRelease;
  std::unique_ptr<LeaseService> s = Make(policy);
  node::NodeView f = MigFleet();
  s->OnTick(f, clock_.SteadyNow());
  json a = Call(s.get(), "lease.request", {{"uuids", {"MIG-1-2"}}, {"command", "a"}});
  ASSERT_EQ(a["result"]["state"], "granted") << a.dump();
  // The GPU's other instance is busy: that says nothing of this lease.
  f.gpus[1].sample.mig_instances[5].graphics_engine_active_ratio = 0.9;
  f.gpus[1].sample.graphics_engine_active_ratio = 0.9 / 7;
  // Without GPM the instance's activity is unknown: the policy never acts.
  f.gpus[1].sample.mig_instances[1].graphics_engine_active_ratio.reset();
  for (int i = 0; i < 5; ++i) {
    clock_.Advance(seconds(60));
    s->OnTick(f, clock_.SteadyNow());
  }
  EXPECT_EQ(Call(s.get(), "leases", json::object())["result"]["leases"].size(), 1u);
  // With GPM saying 0, it warns, then releases after the grace.
  f.gpus[1].sample.mig_instances[1].graphics_engine_active_ratio = 0.0;
  for (int i = 0; i < 5; ++i) {
    clock_.Advance(seconds(40));
    s->OnTick(f, clock_.SteadyNow());
  }
  std::vector<std::string> kinds = Kinds(Call(s.get(), "events", json::object())["result"]["events"]);
  EXPECT_EQ(std::count(kinds.begin(), kinds.end(), "idle_warning"), 1) << json(kinds).dump();
  EXPECT_EQ(std::count(kinds.begin(), kinds.end(), "idle_released"), 1) << json(kinds).dump();
  EXPECT_TRUE(Call(s.get(), "leases", json::object())["result"]["leases"].empty());
}

TEST_F(LeaseServiceTest, ALayoutChangeEndsTheLeasesOnInstancesItDestroyed) {
  processes_.Add(500, 1001, 10);
  std::unique_ptr<LeaseService> s = Make();
  node::NodeView f = MigFleet();
  s->OnTick(f, clock_.SteadyNow());
  ASSERT_EQ(Call(s.get(), "lease.request", {{"uuids", {"MIG-0-1"}}, {"command", "a"}})["result"]["state"],
            "granted");
  ASSERT_EQ(Call(s.get(), "lease.request", {{"uuids", {"MIG-1-1"}}, {"command", "b"}})["result"]["state"],
            "granted");
  // A read that could not list the instances changes nothing.
  node::NodeView unknown = f;
  unknown.gpus[0].sample.mig_instances.clear();
  unknown.gpus[0].sample.has_mig_instances = false;
  s->OnTick(unknown, clock_.SteadyNow());
  EXPECT_EQ(Call(s.get(), "leases", json::object())["result"]["leases"].size(), 2u);
  // GPU 0 is reshaped into one 7g.80gb instance.
  f.gpus[0].sample.mig_instances = {Instance(0, 0, "7g.80gb")};
  f.gpus[0].sample.mig_instances[0].uuid = "MIG-0-new";
  s->OnTick(f, clock_.SteadyNow());
  json leases = Call(s.get(), "leases", json::object())["result"]["leases"];
  ASSERT_EQ(leases.size(), 1u) << leases.dump();
  EXPECT_EQ(leases[0]["uuids"], json::array({"MIG-1-1"}));
  json events = Call(s.get(), "events", json::object())["result"]["events"];
  EXPECT_EQ(events.back()["kind"], "mig_instance_gone") << events.dump();
  EXPECT_NE(events.back()["detail"].get<std::string>().find("MIG-0-1"), std::string::npos);
  // The new instance can be leased at once.
  json c = Call(s.get(), "lease.request", {{"mig_profile", "7g.80gb"}, {"command", "c"}});
  EXPECT_EQ(c["result"]["lease"]["uuids"], json::array({"MIG-0-new"})) << c.dump();
}

TEST_F(LeaseServiceTest, APodsMigInstancesAreOneLeaseEach) {
  std::unique_ptr<LeaseService> s = Make();
  s->OnTick(MigFleet(), clock_.SteadyNow());
  ASSERT_TRUE(s->HoldForPod({"MIG-1-1", "MIG-1-2"}).ok());
  ASSERT_TRUE(s->HoldForPod({"MIG-1-2", "MIG-1-1"}).ok());  // Asked again: nothing new.
  json leases = Call(s.get(), "leases", json::object())["result"]["leases"];
  ASSERT_EQ(leases.size(), 2u) << leases.dump();
  EXPECT_EQ(leases[0]["kind"], "pod");
  EXPECT_EQ(leases[0]["uuids"], json::array({"MIG-1-1"}));
  EXPECT_EQ(leases[1]["uuids"], json::array({"MIG-1-2"}));
  EXPECT_EQ(s->HoldForPod({"MIG-7-7"}).code(), StatusCode::kNotFound);
  // Named and attributed per instance from the pod resources.
  s->SyncPods({{"MIG-1-1", {"train-0", "ml", "trainer"}},
               {"MIG-1-2", {"train-0", "ml", "trainer"}},
               {"MIG-0-3", {"infer-1", "serve", "server"}}});
  leases = Call(s.get(), "leases", json::object())["result"]["leases"];
  ASSERT_EQ(leases.size(), 3u) << leases.dump();
  EXPECT_EQ(leases[0]["user"], "ml/train-0");
  EXPECT_EQ(leases[2]["uuids"], json::array({"MIG-0-3"}));
  EXPECT_EQ(leases[2]["user"], "serve/infer-1");
  std::shared_ptr<const LeaseService::Publication> marks = s->Marks();
  EXPECT_EQ(marks->mig_leases.size(), 3u);
  EXPECT_TRUE(marks->leases.empty()) << "no GPU is marked leased whole";
}

// Each instance is a device of its own for backfill: work in one (a process
// outside a lease, engine activity, a lease of another priority) keeps
// backfill out of it only, backfill's own work does not count, and the
// GPU's limits apply to all its instances.
TEST(MigBackfillGateTest, EachInstanceIsJudgedByItsOwnUse) {
  BackfillPolicy policy;
  policy.is_auto = false;
  policy.idle_for = seconds(60);
  policy.max_temperature_celsius = 80;
  BackfillGate gate(policy);
  sched::TimePoint t0 = sched::TimePoint{} + std::chrono::hours(1);
  node::NodeView f = MigFleet();
  int noon = 12 * 60;
  std::map<std::string, bool> accepts = gate.ObserveInstances(f, {}, t0, LocalAt(noon));
  EXPECT_EQ(accepts.size(), 12u);
  EXPECT_FALSE(accepts["MIG-0-2"]) << "a fresh agent waits too";
  // GPU 0: a process outside any lease in gi 2, engine activity in gi 3, a
  // normal lease on gi 4, a backfill lease computing in gi 5.
  f.gpus[0].processes.push_back(InInstance(700, 2, 1002, 5));
  f.gpus[0].sample.mig_instances[2].graphics_engine_active_ratio = 0.4;  // gi 3
  f.gpus[0].processes.push_back(InInstance(701, 5, 1003, 6));
  f.gpus[0].sample.mig_instances[4].graphics_engine_active_ratio = 0.9;  // gi 5
  std::map<std::string, Holder> holders = {{"MIG-0-4", Holder::kOther}, {"MIG-0-5", Holder::kBackfill}};
  accepts = gate.ObserveInstances(f, holders, t0 + seconds(60), LocalAt(noon));
  EXPECT_TRUE(accepts["MIG-0-1"]) << "the 3g.40gb beside them is idle";
  EXPECT_FALSE(accepts["MIG-0-2"]);
  EXPECT_FALSE(accepts["MIG-0-3"]);
  EXPECT_FALSE(accepts["MIG-0-4"]);
  EXPECT_TRUE(accepts["MIG-0-5"]) << "backfill's own work does not count";
  EXPECT_TRUE(accepts["MIG-1-7"]);
  // The work ends; a minute later the instances accept backfill again.
  f.gpus[0].processes.clear();
  f.gpus[0].sample.mig_instances[2].graphics_engine_active_ratio = 0;
  accepts = gate.ObserveInstances(f, {}, t0 + seconds(90), LocalAt(noon));
  EXPECT_FALSE(accepts["MIG-0-2"]);
  accepts = gate.ObserveInstances(f, {}, t0 + seconds(120), LocalAt(noon));
  EXPECT_TRUE(accepts["MIG-0-2"] && accepts["MIG-0-3"] && accepts["MIG-0-4"]);
  // A hot GPU takes no new backfill in any of its instances.
  f.gpus[1].sample.temperature_celsius = 85;
  accepts = gate.ObserveInstances(f, {}, t0 + seconds(130), LocalAt(noon));
  EXPECT_FALSE(accepts["MIG-1-1"]);
  EXPECT_TRUE(accepts["MIG-0-1"]);
}

// --- one occupancy: a GPU and its instances never have two holders ----------

TEST_F(LeaseServiceTest, RegressionAnInstanceLeaseBlocksASlurmJobAndAPodOnItsWholeGpu) {
  processes_.Add(500, 1001, 10);
  std::unique_ptr<LeaseService> s = Make();
  s->OnTick(MigFleet(), clock_.SteadyNow());
  json a = Call(s.get(), "lease.request", {{"uuids", {"MIG-1-3"}}, {"command", "a"}});
  ASSERT_EQ(a["result"]["state"], "granted") << a.dump();
  // Slurm hands out GPU 1 whole: refused, naming the instance's lease.
  json prolog =
      Call(s.get(), "slurm.prolog", {{"job", "7"}, {"uid", 1005}, {"user", "erin"}, {"gpus", {1}}}, 0);
  ASSERT_FALSE(prolog["ok"].get<bool>()) << prolog.dump();
  EXPECT_NE(prolog["error"]["message"].get<std::string>().find("MIG-1-3"), std::string::npos)
      << prolog.dump();
  // The kubelet allocates GPU 1 whole: refused too.
  EXPECT_FALSE(s->HoldForPod({"GPU-1"}).ok());
  json leases = Call(s.get(), "leases", json::object())["result"]["leases"];
  ASSERT_EQ(leases.size(), 1u) << leases.dump();
  EXPECT_EQ(leases[0]["uuids"], json::array({"MIG-1-3"}));
}

TEST_F(LeaseServiceTest, RegressionAWholeGpuHeldBySlurmOrAPodGivesNoneOfItsInstances) {
  processes_.Add(500, 1001, 10);
  std::unique_ptr<LeaseService> s = Make();
  s->OnTick(MigFleet(), clock_.SteadyNow());
  ASSERT_TRUE(
      Call(s.get(), "slurm.prolog", {{"job", "7"}, {"uid", 1005}, {"user", "erin"}, {"gpus", {1}}}, 0)["ok"]);
  // GPU 1's instances are the job's: by UUID it waits, by profile it goes
  // to GPU 0, and the kubelet cannot take one either.
  json named = Call(s.get(), "lease.request", {{"uuids", {"MIG-1-2"}}, {"command", "x"}, {"wait", false}});
  EXPECT_NE(named["result"]["state"], "granted") << named.dump();
  for (int i = 0; i < 4; ++i) {
    json any =
        Call(s.get(), "lease.request", {{"mig_profile", "1g.10gb"}, {"command", "y"}, {"wait", false}});
    ASSERT_EQ(any["result"]["state"], "granted") << any.dump();
    EXPECT_EQ(any["result"]["lease"]["gpus"], json::array({0})) << any.dump();
  }
  json fifth =
      Call(s.get(), "lease.request", {{"mig_profile", "1g.10gb"}, {"command", "z"}, {"wait", false}});
  EXPECT_NE(fifth["result"]["state"], "granted")
      << "GPU 0's 1g.10gb are all leased; GPU 1 is Slurm's: " << fifth.dump();
  EXPECT_FALSE(s->HoldForPod({"MIG-1-5"}).ok());
}

}  // namespace
}  // namespace tarmac::leases
