// SPDX-License-Identifier: Apache-2.0
// A lease request as a client sends it: what is refused, and what is kept.
#include "sched/lease_json.h"

#include <gtest/gtest.h>

namespace tarmac::sched {
namespace {

using nlohmann::json;

TEST(LeaseJsonTest, RegressionACommandWithANulByteIsRefused) {
  Result<LeaseRequest> r = LeaseRequestFromJson({{"gpus", 1}, {"command", std::string("sleep\0 60", 9)}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("params.command"), std::string::npos) << r.status().message();
}

TEST(LeaseJsonTest, RegressionALongCommandIsCutWhereACharacterBeginsSoItCanBeWrittenAgain) {
  // 4095 bytes, then a three-byte character across the 4096-byte limit.
  std::string command = std::string(4095, 'a') + "\u65e5" + "tail";
  Result<LeaseRequest> r = LeaseRequestFromJson({{"gpus", 1}, {"command", command}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r.value().command, std::string(4095, 'a'));
  EXPECT_NO_THROW(json(r.value().command).dump());
}

TEST(LeaseJsonTest, ABidiMarkInACommandIsKeptAsGiven) {
  // Kept exactly (JSON carries it); every text view shows it escaped
  // (common/terminal_text.h).
  Result<LeaseRequest> r = LeaseRequestFromJson({{"gpus", 1}, {"command", "a\u202eb"}});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value().command, "a\u202eb");
}

}  // namespace
}  // namespace tarmac::sched
