// SPDX-License-Identifier: Apache-2.0
#include "client/lease_answer.h"

#include <gtest/gtest.h>

namespace tarmac::client {
namespace {

using nlohmann::json;

TEST(LeaseAnswerTest, ReadsTheThreeFormsTheAgentAnswers) {
  Result<LeaseAnswer> granted =
      LeaseAnswerFromJson({{"state", "granted"}, {"lease", {{"id", 7}, {"uuids", {"GPU-a", "GPU-b"}}}}});
  ASSERT_TRUE(granted.ok());
  EXPECT_TRUE(granted.value().is_granted());
  EXPECT_EQ(granted.value().id, 7);
  EXPECT_EQ(UuidList(granted.value().lease), "GPU-a,GPU-b");

  Result<LeaseAnswer> queued = LeaseAnswerFromJson(
      {{"state", "queued"}, {"request", {{"id", 9}, {"position", 3}, {"reason", "waiting for 1 GPU"}}}});
  ASSERT_TRUE(queued.ok());
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
  for (json bad :
       {json(), json::array(), json{{"state", "granted"}}, json{{"state", "granted"}, {"lease", 3}},
        json{{"state", "queued"}, {"request", "x"}}, json{{"state", "lost"}}}) {
    Result<LeaseAnswer> a = LeaseAnswerFromJson(bad);
    ASSERT_FALSE(a.ok()) << bad.dump();
    EXPECT_EQ(a.status().code(), StatusCode::kCorruption);
  }
  EXPECT_EQ(UuidList(json{{"uuids", {1, "GPU-a"}}}), "GPU-a");
  EXPECT_EQ(UuidList(json()), "");
}

// A loan's command is told the memory lent; any other lease's is not.
TEST(LeaseAnswerTest, ALoansEnvironmentCarriesTheMemoryLent) {
  json lease = {{"id", 9}, {"uuids", {"GPU-a"}}, {"token", "t"}, {"lent_memory_bytes", 0}};
  auto has_lent = [](const std::vector<std::pair<std::string, std::string>>& env) {
    for (const auto& [name, value] : env) {
      if (name == "TARMAC_LENT_MEMORY_BYTES") return value;
    }
    return std::string();
  };
  EXPECT_EQ(has_lent(LeaseEnvironment(lease)), "");
  lease["lent_memory_bytes"] = int64_t{56} << 30;
  EXPECT_EQ(has_lent(LeaseEnvironment(lease)), "60129542144");
  EXPECT_EQ(LeaseEnvironment(lease)[0],
            (std::pair<std::string, std::string>{"CUDA_VISIBLE_DEVICES", "GPU-a"}));
}

}  // namespace
}  // namespace tarmac::client
