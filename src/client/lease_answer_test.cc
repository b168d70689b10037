// SPDX-License-Identifier: Apache-2.0
// The lease answers a client reads: decoded once into the structs the agent
// encodes from (a lease as the agent writes it comes back the same), and
// anything else, wrong types included, a kCorruption naming the field.
#include "client/lease_answer.h"

#include <gtest/gtest.h>

namespace tarmac::client {
namespace {

using nlohmann::json;

sched::Lease TwoGpus() {
  sched::Lease l;
  l.id = 7;
  l.uid = 1000;
  l.user = "alice";
  l.gpus = {0, 1};
  l.uuids = {"GPU-a", "GPU-b"};
  l.token = "t0k";
  l.granted_at = sched::TimePoint(std::chrono::seconds(1700000000));
  l.ends_at = l.granted_at + std::chrono::hours(1);
  return l;
}

TEST(LeaseAnswerTest, ReadsTheThreeFormsTheAgentAnswers) {
  sched::LeaseShown shown;
  shown.lease = TwoGpus();
  shown.held_seconds = 30;
  shown.warning = "idle for 10m";
  shown.foreign_processes = {{1, 4242, "bob", "python x.py"}};
  const sched::TimeBase base = sched::UnixTimeBase();
  Result<LeaseAnswer> granted =
      LeaseAnswerFromJson({{"state", "granted"}, {"lease", sched::LeaseShownToJson(shown, base)}});
  ASSERT_TRUE(granted.ok()) << granted.status().ToString();
  EXPECT_TRUE(granted.value().is_granted());
  EXPECT_EQ(granted.value().id, 7);
  const sched::LeaseShown& back = granted.value().lease;
  EXPECT_EQ(UuidList(back.lease), "GPU-a,GPU-b");
  EXPECT_EQ(GpuNames(back.lease), "GPUs 0,1");
  EXPECT_EQ(back.lease.token, "t0k");
  EXPECT_EQ(back.lease.ends_at, shown.lease.ends_at);
  EXPECT_EQ(back.held_seconds, 30);
  EXPECT_EQ(back.warning, "idle for 10m");
  ASSERT_EQ(back.foreign_processes.size(), 1u);
  EXPECT_EQ(back.foreign_processes[0].pid, 4242);
  EXPECT_FALSE(back.revoke_by_unix.has_value());
  EXPECT_EQ(sched::LeaseShownToJson(back, base), sched::LeaseShownToJson(shown, base));

  sched::PendingShown pending;
  pending.pending.id = 9;
  pending.pending.owner = {1000, "alice", false};
  pending.pending.request.wants.gpu_count = 2;
  pending.position = 3;
  pending.reason = "waiting for 1 GPU";
  Result<LeaseAnswer> queued =
      LeaseAnswerFromJson({{"state", "queued"}, {"request", sched::PendingShownToJson(pending, base)}});
  ASSERT_TRUE(queued.ok()) << queued.status().ToString();
  EXPECT_TRUE(queued.value().is_queued());
  EXPECT_EQ(queued.value().id, 9);
  EXPECT_EQ(queued.value().position, 3);
  EXPECT_EQ(queued.value().reason, "waiting for 1 GPU");

  Result<LeaseAnswer> ended = LeaseAnswerFromJson({{"state", "ended"}, {"reason", "expired"}}, 4);
  ASSERT_TRUE(ended.ok());
  EXPECT_TRUE(ended.value().is_ended());
  EXPECT_EQ(ended.value().id, 4);
  EXPECT_EQ(ended.value().reason, "expired");
}

TEST(LeaseAnswerTest, AnythingElseIsCorruptionNotACrash) {
  sched::LeaseShown shown;
  shown.lease = TwoGpus();
  json lease = sched::LeaseShownToJson(shown, sched::UnixTimeBase());
  json wrong_id = lease;
  wrong_id["id"] = "seven";
  json wrong_foreign = lease;
  wrong_foreign["foreign_processes"] = {{{"gpu", "one"}, {"pid", 1}}};
  json wrong_warning = lease;
  wrong_warning["warning"] = 3;
  for (json bad :
       {json(), json::array(), json{{"state", "granted"}}, json{{"state", "granted"}, {"lease", 3}},
        json{{"state", "granted"}, {"lease", wrong_id}}, json{{"state", "granted"}, {"lease", wrong_foreign}},
        json{{"state", "granted"}, {"lease", wrong_warning}}, json{{"state", "queued"}, {"request", "x"}},
        json{{"state", "lost"}}, json{{"state", 3}}, json{{"state", "ended"}, {"reason", 3}}}) {
    Result<LeaseAnswer> a = LeaseAnswerFromJson(bad);
    ASSERT_FALSE(a.ok()) << bad.dump();
    EXPECT_EQ(a.status().code(), StatusCode::kCorruption) << bad.dump();
  }
  EXPECT_FALSE(LeasesFromJson({{"leases", {wrong_id}}}).ok());
  EXPECT_FALSE(LeasesFromJson({{"leases", 3}}).ok());
  EXPECT_EQ(LeasesFromJson({{"leases", {lease}}}).value().size(), 1u);
  EXPECT_FALSE(QueueFromJson(json::object()).ok());
}

TEST(LeaseAnswerTest, AReleaseSaysReleasedCancelledOrAlreadyEnded) {
  EXPECT_FALSE(ReleaseAnswerFromJson({{"released", 3}}).value().was_ended);
  EXPECT_TRUE(ReleaseAnswerFromJson({{"cancelled", 3}}).value().was_cancelled);
  Result<ReleaseAnswer> ended = ReleaseAnswerFromJson(
      {{"state", "ended"}, {"reason", "its time is up"}, {"ended_by", "expired"}, {"released", nullptr}});
  ASSERT_TRUE(ended.ok());
  EXPECT_TRUE(ended.value().was_ended);
  EXPECT_EQ(ended.value().ended_by, "expired");
  EXPECT_FALSE(ReleaseAnswerFromJson({{"reason", 3}}).ok());
  EXPECT_FALSE(ReleaseAnswerFromJson(json::object()).ok());
}

// A loan's command is told the memory lent; any other lease's is not.
TEST(LeaseAnswerTest, ALoansEnvironmentCarriesTheMemoryLent) {
  sched::Lease lease;
  lease.id = 9;
  lease.uuids = {"GPU-a"};
  lease.token = "t";
  auto has_lent = [](const std::vector<std::pair<std::string, std::string>>& env) {
    for (const auto& [name, value] : env) {
      if (name == "TARMAC_LENT_MEMORY_BYTES") return value;
    }
    return std::string();
  };
  EXPECT_EQ(has_lent(LeaseEnvironment(lease)), "");
  lease.lent_memory_bytes = int64_t{56} << 30;
  EXPECT_EQ(has_lent(LeaseEnvironment(lease)), "60129542144");
  EXPECT_EQ(LeaseEnvironment(lease)[0],
            (std::pair<std::string, std::string>{"CUDA_VISIBLE_DEVICES", "GPU-a"}));
}

}  // namespace
}  // namespace tarmac::client
