// SPDX-License-Identifier: Apache-2.0
//
// MIG through a real agent over the fake libnvidia-ml: `tarmac run --mig`
// gets an instance and CUDA_VISIBLE_DEVICES names it (a stand-in CUDA
// program runs in it), status shows the instance's lease, bad requests are
// refused by name, the metrics carry dcgm-exporter's MIG labels, and a
// layout change on the timeline ends the lease on the vanished instance.
#include <gtest/gtest.h>

#include <fstream>

#include "testutil/lease_fixture.h"
#include "testutil/mig_views.h"

namespace tarmac::testing {
namespace {

using nlohmann::json;

class MigTest : public LeaseFixture {
 public:
  // Commands that outlive the test (a backfill run whose agent is stopped
  // first) are killed: every one names this test's private directory.
  void TearDown() override {
    RunResult r = RunCommand({"pkill", "-KILL", "-f", dir_.path() + "/"}, {});
    (void)r;
  }
};

TEST_F(MigTest, RunMigLeasesOneInstanceAndTheJobRunsInIt) {
  UseScenarioText(kSplitAndWholeH100);
  StartLeaseAgent();
  json status = AgentStatus();
  ASSERT_EQ(status["gpus"][0]["mig_instances"].size(), 3u) << status.dump();
  std::string first = status["gpus"][0]["mig_instances"][1]["uuid"];
  RunResult r = T({"run", "--mig", "1g.10gb", "--", "sh", "-c", "echo \"$CUDA_VISIBLE_DEVICES\""});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, first + "\n");
  // A stand-in CUDA program runs inside the instance it was given, and only
  // there: 12 GiB does not fit a 1g.10gb.
  r = T({"run", "--mig", "1g.10gb", "--", BinDir() + "/tarmac-simload", "--memory", "2GiB", "--seconds",
         "0.2"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = T({"run", "--mig", "1g.10gb", "--", BinDir() + "/tarmac-simload", "--memory", "12GiB", "--seconds",
         "0.2"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("out of memory on MIG-"), std::string::npos) << r.err;

  // A reservation shows on its instance in status, in JSON and text.
  RunResult reserved = T({"reserve", "--mig", "3g.40gb", "--for", "1h", "--json"});
  ASSERT_EQ(reserved.exit_code, 0) << reserved.err;
  json lease = json::parse(reserved.out);
  EXPECT_EQ(lease["mig_profile"], "3g.40gb");
  status = AgentStatus();
  EXPECT_EQ(status["gpus"][0]["mig_instances"][0]["lease"]["id"], lease["id"]) << status.dump();
  EXPECT_FALSE(status["gpus"][0].contains("lease")) << "the GPU itself is not leased whole";
  RunResult text = T({"status"});
  EXPECT_NE(text.out.find("MIG 3g.40gb   gi 1  ci 0"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("lease " + lease["id"].dump() + " (root)"), std::string::npos) << text.out;

  // Whole GPUs: only the one without MIG.
  r = T({"run", "--gpus", "2", "--", "true"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("not in MIG mode"), std::string::npos) << r.err;
  r = T({"run", "--", "sh", "-c", "echo \"$CUDA_VISIBLE_DEVICES\""});
  EXPECT_EQ(r.out, Uuid(1) + "\n") << r.err;
  // A profile this machine has no instance of, and a malformed one.
  r = T({"run", "--mig", "2g.20gb", "--", "true"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(
      r.err.find("no MIG instance of profile '2g.20gb' on this machine (it has 1g.10gb x2, 3g.40gb x1)"),
      std::string::npos)
      << r.err;
  r = T({"run", "--mig", "big", "--", "true"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--mig: expected a MIG profile such as 1g.10gb"), std::string::npos) << r.err;

  // /metrics: per-instance series with dcgm-exporter's MIG labels.
  std::string metrics = HttpGet("/metrics");
  EXPECT_NE(metrics.find("DCGM_FI_DEV_FB_USED{gpu=\"0\",UUID=\"" + Uuid(0) + "\""), std::string::npos);
  EXPECT_NE(metrics.find(",GPU_I_PROFILE=\"1g.10gb\",GPU_I_ID=\"2\"} "), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("tarmac_mig_instance_info{"), std::string::npos);
}

TEST_F(MigTest, ALayoutChangeEndsTheLeaseOnTheVanishedInstance) {
  // GPU 0 is reshaped 10 s into the world: its 1g.10gb instances are gone.
  UseScenarioText(R"(
[[gpu]]
model = "NVIDIA H100 80GB HBM3"
mig_layout = ["1g.10gb", "1g.10gb", "3g.40gb"]
[[fault]]
kind = "mig_reconfigure"
gpu = 0
at = "10s"
mig_layout = ["7g.80gb"]
)");
  StartLeaseAgent();
  RunResult reserved = T({"reserve", "--mig", "1g.10gb", "--for", "1h", "--json"});
  ASSERT_EQ(reserved.exit_code, 0) << reserved.err;
  int64_t id = json::parse(reserved.out)["id"].get<int64_t>();
  std::string uuid = json::parse(reserved.out)["uuids"][0];
  ASSERT_TRUE(WaitFor([&] { return Leases().empty(); }, 300)) << Leases().dump();
  std::vector<std::string> kinds = EventKinds(id);
  EXPECT_TRUE(Has(kinds, "mig_instance_gone")) << json(kinds).dump();
  json status = AgentStatus();
  ASSERT_EQ(status["gpus"][0]["mig_instances"].size(), 1u) << status.dump();
  EXPECT_EQ(status["gpus"][0]["mig_instances"][0]["profile"], "7g.80gb");
  // The driver's config-change event reached the agent.
  EXPECT_GE(Call("hello")["sampler"]["mig_config_changes"].get<int>(), 1);
  // The new instance is leased at once.
  RunResult next = T({"reserve", "--mig", "7g.80gb", "--for", "1h", "--json"});
  ASSERT_EQ(next.exit_code, 0) << next.err;
  EXPECT_NE(json::parse(next.out)["uuids"][0], uuid);
}

// Backfill on instances yields to real work as on whole GPUs: a request for
// a profile whose instances backfill holds revokes one backfill lease (the
// first), waits for it, and gets that instance; the other backfill lease
// and its command are left alone.
TEST_F(MigTest, ARealRequestRevokesOneBackfillLeaseOnAnInstanceOfItsProfile) {
  UseScenarioText(kSplitAndWholeH100);
  StartLeaseAgent("[backfill]\ngrace = \"2s\"\nidle_for = \"0s\"\n");
  std::string d = dir_.path();
  Child* first =
      StartRun({"--priority", "backfill", "--mig", "1g.10gb"},
               {"sh", "-c",
                "trap 'echo told > " + d + "/first.told; exit 0' TERM; echo \"$CUDA_VISIBLE_DEVICES\" > " +
                    d + "/first.up; while :; do sleep 0.1; done"},
               {}, "first.err");
  ASSERT_TRUE(WaitFor([&] { return Leases().size() == 1 && std::ifstream(d + "/first.up").good(); }));
  Child* second =
      StartRun({"--priority", "backfill", "--mig", "1g.10gb"},
               {"sh", "-c", "touch " + d + "/second.up; while :; do sleep 0.1; done"}, {}, "second.err");
  ASSERT_TRUE(WaitFor([&] { return Leases().size() == 2 && std::ifstream(d + "/second.up").good(); }));
  std::string first_instance;
  std::getline(std::ifstream(d + "/first.up"), first_instance);
  ASSERT_EQ(first_instance.rfind("MIG-", 0), 0u) << first_instance;
  // Backfill never revokes backfill: a third backfill request waits.
  ipc::Request third;
  third.method = "lease.request";
  third.params = {
      {"mig_profile", "1g.10gb"}, {"priority", "backfill"}, {"command", "third"}, {"wait", false}};
  Result<json> refused = ipc::CallAgent(Socket(), third, std::chrono::seconds(5));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kResourceExhausted) << refused.status().ToString();
  EXPECT_FALSE(Has(EventKinds(1), "preempting"));
  EXPECT_FALSE(Has(EventKinds(2), "preempting"));

  RunResult r = T({"run", "--mig", "1g.10gb", "--", "sh", "-c", "echo \"$CUDA_VISIBLE_DEVICES\""});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, first_instance + "\n") << "the real run got the revoked lease's instance";
  EXPECT_TRUE(std::ifstream(d + "/first.told").good());
  EXPECT_EQ(WEXITSTATUS(first->Wait()), 0);
  std::vector<std::string> first_events = EventKinds(1);
  EXPECT_TRUE(Has(first_events, "preempting")) << json(first_events).dump();
  // The second backfill lease was not revoked, and its command still runs.
  EXPECT_FALSE(Has(EventKinds(2), "preempting")) << json(EventKinds(2)).dump();
  json leases = Leases();
  ASSERT_EQ(leases.size(), 1u) << leases.dump();
  EXPECT_EQ(leases[0]["id"], 2);
  EXPECT_TRUE(IsRunning(second->pid()));
}

}  // namespace
}  // namespace tarmac::testing
