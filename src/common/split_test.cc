// SPDX-License-Identifier: Apache-2.0
#include "common/split.h"

#include <gtest/gtest.h>

namespace tarmac {
namespace {

TEST(SplitTest, ItemsAreTrimmedAndEmptyOnesLeftOut) {
  EXPECT_EQ(SplitCommas("0,1"), (std::vector<std::string>{"0", "1"}));
  EXPECT_EQ(SplitCommas(" GPU-a , GPU-b,,"), (std::vector<std::string>{"GPU-a", "GPU-b"}));
  EXPECT_TRUE(SplitCommas("").empty());
  EXPECT_TRUE(SplitCommas(" , ").empty());
}

TEST(SplitTest, EmptyItemsAreKeptWhenAsked) {
  EXPECT_EQ(SplitCommas(" a ,,b,", Empties::kKeep), (std::vector<std::string>{"a", "", "b", ""}));
  EXPECT_EQ(SplitCommas("", Empties::kKeep), (std::vector<std::string>{""}));
}

}  // namespace
}  // namespace tarmac
