// SPDX-License-Identifier: Apache-2.0
//
// Drains (gpu_drains.h): by hand and by the health policy; admins only;
// kept across a restart; a drained GPU is never granted, its lease's
// holder is told; and, over random health events, drains and requests, no
// grant ever lands on a drained GPU or one its readings say to drain.
#include "leases/gpu_drains.h"

#include <gtest/gtest.h>

#include <random>
#include <set>

#include "node/health_verdict.h"
#include "node/lease_marks.h"
#include "testutil/lease_service_fixture.h"

namespace tarmac::leases {
namespace {

using namespace test;  // NOLINT: the shared fixture.
using nlohmann::json;

constexpr uid_t kRoot = 0;

std::vector<json> EventsOfKind(const json& events, const std::string& kind) {
  std::vector<json> out;
  for (const json& e : events["result"]["events"]) {
    if (e["kind"] == kind) out.push_back(e);
  }
  return out;
}

TEST_F(LeaseServiceTest, AnAdminDrainsAGpuByHandAndItStaysDrainedAcrossARestart) {
  processes_.Add(500, 1001, 10);  // Alice's client.
  processes_.Add(1, kRoot, 1);    // Root's.
  {
    std::unique_ptr<LeaseService> s = Make();
    s->OnTick(Machine(2), clock_.SteadyNow());
    json held = Call(s.get(), "lease.request", {{"gpus", 1}, {"kind", "reservation"}});
    ASSERT_EQ(held["result"]["lease"]["gpus"], json::array({0})) << held.dump();
    int64_t lease = held["result"]["lease"]["id"];

    // Only an admin; the reason is printable and short; the GPU must exist.
    json refused = Call(s.get(), "gpu.drain", {{"gpu", "0"}, {"reason", "flaky"}});
    EXPECT_EQ(refused["error"]["code"], "permission_denied") << refused.dump();
    EXPECT_EQ(Call(s.get(), "gpu.drain", {{"gpu", "0"}, {"reason", "a\x1b[2Jb"}}, kRoot, 1)["error"]["code"],
              "bad_request");
    EXPECT_EQ(Call(s.get(), "gpu.drain", {{"gpu", "0"}, {"reason", std::string(201, 'x')}}, kRoot,
                   1)["error"]["code"],
              "bad_request");
    EXPECT_EQ(Call(s.get(), "gpu.drain", {{"gpu", "7"}, {"reason", "x"}}, kRoot, 1)["error"]["code"],
              "not_found");

    // GPU 0 is drained while alice holds it: she keeps it and is told.
    json drained =
        Call(s.get(), "gpu.drain", {{"gpu", "GPU-0"}, {"reason", "ECC storm, RMA 4411"}}, kRoot, 1);
    ASSERT_TRUE(drained["ok"].get<bool>()) << drained.dump();
    EXPECT_EQ(drained["result"]["lease"], lease);
    EXPECT_EQ(drained["result"]["drained"]["by"], "root");
    EXPECT_EQ(Call(s.get(), "gpu.drain", {{"gpu", "0"}, {"reason", "again"}}, kRoot, 1)["error"]["code"],
              "bad_request");
    json events = Call(s.get(), "events", json::object());
    std::vector<json> told = EventsOfKind(events, "gpu_drained");
    ASSERT_EQ(told.size(), 2u) << events.dump();
    EXPECT_EQ(told[1]["lease"], lease);
    EXPECT_EQ(told[1]["uid"], 1001);
    EXPECT_NE(told[1]["detail"].get<std::string>().find("the lease keeps it until it ends"),
              std::string::npos);
    EXPECT_EQ(Call(s.get(), "lease.get", {{"id", lease}})["result"]["state"], "granted");

    // Released, GPU 0 goes to nobody; GPU 1 still does.
    ASSERT_TRUE(Call(s.get(), "lease.release", {{"id", lease}})["ok"].get<bool>());
    s->OnTick(Machine(2), clock_.SteadyNow());
    json next = Call(s.get(), "lease.request", {{"gpus", 1}, {"kind", "reservation"}});
    EXPECT_EQ(next["result"]["lease"]["gpus"], json::array({1})) << next.dump();
    json none = Call(s.get(), "lease.request", {{"gpus", 1}, {"kind", "reservation"}, {"wait", false}});
    EXPECT_FALSE(none["ok"].get<bool>()) << none.dump();
    // Status marks it: the drain is the verdict's first reason.
    node::NodeView view = Machine(2);
    node::ApplyLeaseMarks(*s->Marks(), &view);
    ASSERT_TRUE(view.gpus[0].drained.has_value());
    node::HealthVerdict v = node::JudgeGpu(view.gpus[0]);
    EXPECT_EQ(v.verdict, node::Verdict::kDrain);
    EXPECT_EQ(v.reasons[0], "drained by root: ECC storm, RMA 4411");
  }
  // After a restart: still drained, until undrained.
  std::unique_ptr<LeaseService> s = Make();
  ASSERT_TRUE(s->Restore().ok());
  s->OnTick(Machine(2), clock_.SteadyNow());
  node::NodeView view = Machine(2);
  node::ApplyLeaseMarks(*s->Marks(), &view);
  ASSERT_TRUE(view.gpus[0].drained.has_value());
  EXPECT_EQ(view.gpus[0].drained->reason, "ECC storm, RMA 4411");
  EXPECT_FALSE(Call(s.get(), "lease.request", {{"gpus", 1}, {"kind", "reservation"}, {"wait", false}})["ok"]);
  EXPECT_EQ(Call(s.get(), "gpu.undrain", {{"gpu", "0"}})["error"]["code"], "permission_denied");
  ASSERT_TRUE(Call(s.get(), "gpu.undrain", {{"gpu", "0"}}, kRoot, 1)["ok"].get<bool>());
  EXPECT_EQ(Call(s.get(), "gpu.undrain", {{"gpu", "0"}}, kRoot, 1)["error"]["code"], "bad_request");
  s->OnTick(Machine(2), clock_.SteadyNow());  // Its readings judge it again.
  json granted = Call(s.get(), "lease.request", {{"gpus", 1}, {"kind", "reservation"}, {"wait", false}});
  EXPECT_EQ(granted["result"]["lease"]["gpus"], json::array({0})) << granted.dump();
  std::vector<json> undrained = EventsOfKind(Call(s.get(), "events", json::object()), "gpu_undrained");
  ASSERT_EQ(undrained.size(), 1u);
  EXPECT_EQ(undrained[0]["actor"], "root");
}

// [leases] auto_drain: a critical Xid drains the GPU for good (an agent
// restart forgets the Xid, the drain stays), and the lease on it is told,
// not ended.
TEST_F(LeaseServiceTest, TheHealthPolicyDrainsOnCriticalEvidenceAndTellsTheHolder) {
  LeasePolicy policy;
  policy.is_auto_drain = true;
  processes_.Add(500, 1001, 10);
  std::unique_ptr<LeaseService> s = Make(policy);
  s->OnTick(Machine(2), clock_.SteadyNow());
  json held = Call(s.get(), "lease.request", {{"uuids", {"GPU-1"}}, {"kind", "reservation"}});
  int64_t lease = held["result"]["lease"]["id"];
  node::NodeView bad = Machine(2);
  bad.gpus[1].xid_count = 1;
  bad.gpus[1].xid_count_by_code = {{13, 2}};  // An application Xid: no drain.
  s->OnTick(bad, clock_.SteadyNow());
  EXPECT_TRUE(EventsOfKind(Call(s.get(), "events", json::object()), "gpu_drained").empty());
  bad.gpus[1].xid_count_by_code = {{13, 2}, {48, 1}};
  s->OnTick(bad, clock_.SteadyNow());
  s->OnTick(bad, clock_.SteadyNow());  // Once only.
  std::vector<json> drained = EventsOfKind(Call(s.get(), "events", json::object()), "gpu_drained");
  ASSERT_EQ(drained.size(), 2u);
  EXPECT_EQ(drained[0]["actor"], "policy");
  EXPECT_NE(drained[0]["detail"].get<std::string>().find("drained by policy: Xid 48"), std::string::npos)
      << drained[0].dump();
  EXPECT_EQ(drained[1]["lease"], lease);
  EXPECT_EQ(Call(s.get(), "lease.get", {{"id", lease}})["result"]["state"], "granted");
  // The Xid forgotten (a new reading without it): still drained.
  ASSERT_TRUE(Call(s.get(), "lease.release", {{"id", lease}})["ok"].get<bool>());
  s->OnTick(Machine(2), clock_.SteadyNow());
  json asked =
      Call(s.get(), "lease.request", {{"uuids", {"GPU-1"}}, {"kind", "reservation"}, {"wait", false}});
  EXPECT_FALSE(asked["ok"].get<bool>()) << asked.dump();
}

// A GPU to drain on Xid evidence is cleared by an admin's undrain (after a
// reset, say): the agent forgets its Xids now, and the clearing is kept so
// that the history's Xids from before it count no more after a restart.
TEST_F(LeaseServiceTest, UndrainClearsTheXidsCountedAgainstAGpu) {
  processes_.Add(1, kRoot, 1);
  std::vector<std::string> forgotten;
  int64_t cleared_at = 0;
  {
    std::unique_ptr<LeaseService> s = Make();
    s->OnUndrain([&](const std::string& uuid) { forgotten.push_back(uuid); });
    node::NodeView view = Machine(2);
    view.gpus[1].earlier_xid_count_by_code = {{48, 1}};
    s->OnTick(view, clock_.SteadyNow());
    EXPECT_EQ(Call(s.get(), "gpu.undrain", {{"gpu", "0"}}, kRoot, 1)["error"]["code"], "bad_request");
    json cleared = Call(s.get(), "gpu.undrain", {{"gpu", "1"}}, kRoot, 1);
    ASSERT_TRUE(cleared["ok"].get<bool>()) << cleared.dump();
    EXPECT_EQ(forgotten, std::vector<std::string>{"GPU-1"});
    std::vector<json> events = EventsOfKind(Call(s.get(), "events", json::object()), "gpu_undrained");
    ASSERT_EQ(events.size(), 1u);
    EXPECT_NE(events[0]["detail"].get<std::string>().find("its Xids cleared by root (Xid 48 (logged before"),
              std::string::npos)
        << events[0].dump();
    ASSERT_EQ(s->XidsClearedAt().count("GPU-1"), 1u);
    cleared_at = s->XidsClearedAt().at("GPU-1");
  }
  std::unique_ptr<LeaseService> s = Make();
  ASSERT_TRUE(s->Restore().ok());
  EXPECT_EQ(s->XidsClearedAt(), (std::map<std::string, int64_t>{{"GPU-1", cleared_at}}));
}

// --allow-unhealthy: an admin who knows may take a GPU its readings say to
// drain; nobody else may ask, and a GPU drained by hand is never taken.
TEST_F(LeaseServiceTest, AnAdminMayTakeAGpuToDrainOnEvidenceButNotOneDrainedByHand) {
  processes_.Add(1, kRoot, 1);
  processes_.Add(500, 1001, 10);
  std::unique_ptr<LeaseService> s = Make();
  node::NodeView view = Machine(2);
  view.gpus[0].sample.ecc.volatile_uncorrected = 1;
  s->OnTick(view, clock_.SteadyNow());
  ASSERT_TRUE(Call(s.get(), "gpu.drain", {{"gpu", "1"}, {"reason", "rma"}}, kRoot, 1)["ok"].get<bool>());
  json ask = {{"gpus", 1}, {"kind", "reservation"}, {"wait", false}, {"allow_unhealthy", true}};
  EXPECT_EQ(Call(s.get(), "lease.request", ask)["error"]["code"], "permission_denied");
  json plain =
      Call(s.get(), "lease.request", {{"gpus", 1}, {"kind", "reservation"}, {"wait", false}}, kRoot, 1);
  EXPECT_FALSE(plain["ok"].get<bool>()) << plain.dump();
  json granted = Call(s.get(), "lease.request", ask, kRoot, 1);
  ASSERT_EQ(granted["result"]["state"], "granted") << granted.dump();
  EXPECT_EQ(granted["result"]["lease"]["gpus"], json::array({0}));
  json named = Call(
      s.get(), "lease.request",
      {{"uuids", {"GPU-1"}}, {"kind", "reservation"}, {"wait", false}, {"allow_unhealthy", true}}, kRoot, 1);
  EXPECT_FALSE(named["ok"].get<bool>()) << named.dump();
}

// Model: random readings (evidence comes and goes), drains, undrains,
// requests and releases. Invariant: a grant never lands on a GPU drained
// at that moment or whose last reading says to drain it.
TEST_F(LeaseServiceTest, ModelNoGrantEverLandsOnADrainedGpu) {
  std::mt19937 rng(4949);
  processes_.Add(500, 1001, 10);
  processes_.Add(1, kRoot, 1);
  constexpr int kGpus = 6;
  std::unique_ptr<LeaseService> s = Make(LeasePolicy(), /*with_state=*/false);
  node::NodeView view = Machine(kGpus);
  std::set<int> drained;  // The model.
  std::vector<int64_t> leases;
  int grants = 0;
  auto pick = [&](int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng); };
  s->OnTick(view, clock_.SteadyNow());
  for (int step = 0; step < 3000; ++step) {
    SCOPED_TRACE(step);
    switch (pick(6)) {
      case 0: {  // Evidence comes or goes on one GPU.
        node::GpuView& g = view.gpus[static_cast<size_t>(pick(kGpus))];
        g.sample.ecc.volatile_uncorrected = pick(3) == 0 ? 1 : 0;
        s->OnTick(view, clock_.SteadyNow());
        break;
      }
      case 1: {
        int gpu = pick(kGpus);
        json a = Call(s.get(), "gpu.drain", {{"gpu", std::to_string(gpu)}, {"reason", "model"}}, kRoot, 1);
        EXPECT_EQ(a["ok"].get<bool>(), drained.count(gpu) == 0) << a.dump();
        drained.insert(gpu);
        break;
      }
      case 2: {
        int gpu = pick(kGpus);
        json a = Call(s.get(), "gpu.undrain", {{"gpu", std::to_string(gpu)}}, kRoot, 1);
        EXPECT_EQ(a["ok"].get<bool>(), drained.count(gpu) != 0) << a.dump();
        drained.erase(gpu);
        break;
      }
      case 3:
      case 4: {
        json a =
            Call(s.get(), "lease.request", {{"gpus", 1 + pick(2)}, {"kind", "reservation"}, {"wait", false}});
        if (!a["ok"].get<bool>()) break;
        ++grants;
        leases.push_back(a["result"]["lease"]["id"]);
        for (const json& gpu : a["result"]["lease"]["gpus"]) {
          int i = gpu.get<int>();
          EXPECT_EQ(drained.count(i), 0u) << "granted drained GPU " << i;
          EXPECT_NE(node::JudgeGpu(view.gpus[static_cast<size_t>(i)]).verdict, node::Verdict::kDrain)
              << "granted GPU " << i << " whose reading says to drain it";
        }
        break;
      }
      default:
        if (!leases.empty()) {
          size_t i = static_cast<size_t>(pick(static_cast<int>(leases.size())));
          Call(s.get(), "lease.release", {{"id", leases[i]}});
          leases.erase(leases.begin() + static_cast<std::ptrdiff_t>(i));
        }
        break;
    }
  }
  EXPECT_GT(grants, 200);
}

}  // namespace
}  // namespace tarmac::leases
