// SPDX-License-Identifier: Apache-2.0
#include "common/closest_name.h"

#include <gtest/gtest.h>

namespace tarmac {
namespace {

TEST(ClosestNameTest, ASlipFindsItsNameAndAnUnrelatedWordNothing) {
  std::vector<std::string> commands = {"status", "query", "pick", "reserve", "release", "leases", "zombies"};
  EXPECT_EQ(ClosestName("stauts", commands), "status");  // Two letters swapped.
  EXPECT_EQ(ClosestName("statu", commands), "status");
  EXPECT_EQ(ClosestName("releas", commands), "release");
  EXPECT_EQ(ClosestName("zombie", commands), "zombies");
  EXPECT_EQ(ClosestName("frobnicate", commands), std::nullopt);
  EXPECT_EQ(ClosestName("pik", commands), "pick");
  EXPECT_EQ(ClosestName("xyz", commands), std::nullopt);     // Short words: one slip only.
  EXPECT_EQ(ClosestName("status", commands), std::nullopt);  // Not a slip.
  EXPECT_EQ(ClosestName("", commands), std::nullopt);
  EXPECT_EQ(DidYouMean("--gpuss", {"--gpus", "--gpu", "--json"}), "; did you mean '--gpus'?");
  EXPECT_EQ(DidYouMean("--zzz", {"--gpus"}), "");
}

}  // namespace
}  // namespace tarmac
