// SPDX-License-Identifier: Apache-2.0
//
// Pod leases (pod_leases.cc): the kubelet's allocations as leases of kind
// pod, named, adopted and ended from its pod resources, never idle-reclaimed.
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

// --- pod leases ----------------------------------------------------------------

TEST_F(LeaseServiceTest, APodAllocationIsALeaseOfKindPodThatSurvivesARestart) {
  processes_.Add(500, 1001, 10);  // The client of the requests below.
  std::unique_ptr<LeaseService> s = Make();
  EXPECT_EQ(s->HoldForPod({"GPU-0"}).code(), StatusCode::kUnavailable);  // No GPUs read yet.
  s->OnTick(Machine(4), clock_.SteadyNow());
  ASSERT_TRUE(s->HoldForPod({"GPU-0", "GPU-1"}).ok());
  ASSERT_TRUE(s->HoldForPod({"GPU-1", "GPU-0"}).ok());  // The kubelet asking again: the same lease.
  json leases = Call(s.get(), "leases", json::object())["result"]["leases"];
  ASSERT_EQ(leases.size(), 1u) << leases.dump();
  EXPECT_EQ(leases[0]["kind"], "pod");
  EXPECT_EQ(leases[0]["gpus"], json::array({0, 1}));
  // Nobody else gets those GPUs; a request for three waits.
  json asked = Call(s.get(), "lease.request", {{"gpus", 3}, {"command", "train"}});
  EXPECT_EQ(asked["result"]["state"], "queued") << asked.dump();
  // Unknown and taken GPUs are refused by name.
  Status unknown = s->HoldForPod({"GPU-9"});
  EXPECT_EQ(unknown.code(), StatusCode::kNotFound);
  EXPECT_NE(unknown.message().find("GPU-9"), std::string::npos);
  json reserved = Call(s.get(), "lease.request", {{"uuids", {"GPU-3"}}, {"kind", "reservation"}});
  ASSERT_EQ(reserved["result"]["state"], "granted") << reserved.dump();
  Status taken = s->HoldForPod({"GPU-3"});
  EXPECT_EQ(taken.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(taken.message().find("reservation"), std::string::npos) << taken.message();
  // No one releases or extends a pod lease; the kubelet ends it.
  int64_t id = leases[0]["id"].get<int64_t>();
  json refused = Call(s.get(), "lease.release", {{"id", id}}, 0);
  EXPECT_EQ(refused["error"]["code"], ipc::kErrorBadRequest) << refused.dump();
  EXPECT_NE(refused["error"]["message"].get<std::string>().find("pod"), std::string::npos);
  refused = Call(s.get(), "lease.extend", {{"id", id}, {"seconds", 60}}, 0);
  EXPECT_EQ(refused["error"]["code"], ipc::kErrorBadRequest) << refused.dump();
  EXPECT_NE(refused["error"]["message"].get<std::string>().find("pod"), std::string::npos);

  // A restart keeps it (it has no client to outlive).
  s.reset();
  s = Make();
  ASSERT_TRUE(s->Restore().ok());
  leases = Call(s.get(), "leases", json::object())["result"]["leases"];
  ASSERT_EQ(leases.size(), 2u) << leases.dump();
  EXPECT_EQ(leases[0]["kind"], "pod");
  EXPECT_EQ(leases[0]["id"], id);
}

TEST_F(LeaseServiceTest, TheKubeletsPodResourcesNameAdoptAndEndPodLeases) {
  std::unique_ptr<LeaseService> s = Make();
  s->OnTick(Machine(4), clock_.SteadyNow());
  ASSERT_TRUE(s->HoldForPod({"GPU-0"}).ok());
  ASSERT_TRUE(s->HoldForPod({"GPU-1"}).ok());
  // GPU-0's pod is listed; GPU-1's not yet; GPU-2 was allocated while the
  // agent was down.
  std::map<std::string, node::KubernetesNames> listed = {{"GPU-0", {"train-0", "ml", "trainer"}},
                                                         {"GPU-2", {"infer-0", "serve", "server"}}};
  s->SyncPods(listed);
  json leases = Call(s.get(), "leases", json::object())["result"]["leases"];
  ASSERT_EQ(leases.size(), 3u) << leases.dump();
  std::map<int, json> by_gpu;
  for (const json& l : leases) by_gpu[l["gpus"][0].get<int>()] = l;
  EXPECT_EQ(by_gpu[0]["user"], "ml/train-0");
  EXPECT_EQ(by_gpu[0]["command"], "trainer");
  EXPECT_EQ(by_gpu[1]["user"], "kubelet");
  EXPECT_EQ(by_gpu[2]["user"], "serve/infer-0");
  EXPECT_EQ(by_gpu[2]["kind"], "pod");
  // Within the grace an unlisted allocation stays; after it, it ends. A
  // listed pod that is no longer listed ends at once.
  listed.erase("GPU-0");
  s->SyncPods(listed);
  leases = Call(s.get(), "leases", json::object())["result"]["leases"];
  EXPECT_EQ(leases.size(), 2u) << leases.dump();
  clock_.Advance(LeaseService::kPodGrace + seconds(1));
  s->SyncPods(listed);
  leases = Call(s.get(), "leases", json::object())["result"]["leases"];
  ASSERT_EQ(leases.size(), 1u) << leases.dump();
  EXPECT_EQ(leases[0]["user"], "serve/infer-0");
  int ended = 0;
  json events = Call(s.get(), "events", {{"limit", 1000}}, 0);
  for (const json& e : events["result"]["events"]) ended += e["kind"] == "pod_ended";
  EXPECT_EQ(ended, 2) << events.dump();
  EXPECT_TRUE(processes_.signals.empty());  // The kubelet's pods are never signalled.
}

TEST_F(LeaseServiceTest, AnIdlePodIsReportedButNeverEndedWhateverThePolicy) {
  LeasePolicy policy;
  policy.default_idle_timeout = seconds(10);
  policy.idle_grace = seconds(5);
  policy.idle_action = IdleAction::kTerminate;
  std::unique_ptr<LeaseService> s = Make(policy);
  // A pod's process runs as another user than the lease's (root) owner.
  processes_.Add(4300, 1005, 11);
  auto fleet = [] { return Machine(2, {{0, testing::Process(4300, 2 * kGiB, 0, 1005, "python", 1, 11)}}); };
  s->OnTick(fleet(), clock_.SteadyNow());
  ASSERT_TRUE(s->HoldForPod({"GPU-0"}).ok());
  for (int i = 0; i < 10; ++i) {
    clock_.Advance(seconds(5));
    s->OnTick(fleet(), clock_.SteadyNow());
  }
  json leases = Call(s.get(), "leases", json::object())["result"]["leases"];
  ASSERT_EQ(leases.size(), 1u);
  EXPECT_FALSE(leases[0]["warning"].is_null());
  EXPECT_TRUE(leases[0]["foreign_processes"].empty());  // A pod's processes are its own.
  EXPECT_TRUE(processes_.signals.empty());
  std::set<std::string> kinds;
  json events = Call(s.get(), "events", {{"limit", 1000}}, 0);
  for (const json& e : events["result"]["events"]) kinds.insert(e["kind"]);
  EXPECT_TRUE(kinds.count("idle_warning")) << events.dump();
  EXPECT_TRUE(kinds.count("idle_kept"));
  EXPECT_FALSE(kinds.count("idle_terminated"));
}

}  // namespace
}  // namespace tarmac::leases
