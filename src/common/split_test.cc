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

TEST(SplitTest, SplitAtOneCharacterKeepsItemsWholeAndDropsEmptyOnes) {
  const std::string environ("A=1\0B= x \0\0C=\0", 14);
  EXPECT_EQ(SplitAt(environ, '\0'), (std::vector<std::string_view>{"A=1", "B= x ", "C="}));
  EXPECT_EQ(SplitAt("a=1::b=2:", ':'), (std::vector<std::string_view>{"a=1", "b=2"}));
  EXPECT_TRUE(SplitAt("", ':').empty());
  EXPECT_TRUE(SplitAt(":", ':').empty());
}

}  // namespace
}  // namespace tarmac
