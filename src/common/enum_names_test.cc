// SPDX-License-Identifier: Apache-2.0
#include "common/enum_names.h"

#include <gtest/gtest.h>

namespace tarmac {
namespace {

enum class Color { kRed, kGreen, kBlue };
constexpr std::pair<Color, const char*> kColorNames[] = {
    {Color::kRed, "red"}, {Color::kGreen, "green"}, {Color::kBlue, "blue"}};

TEST(EnumNamesTest, OneTableReadBothWaysAndListed) {
  Color c = Color::kRed;
  EXPECT_TRUE(ParseEnum(kColorNames, "blue", &c));
  EXPECT_EQ(c, Color::kBlue);
  EXPECT_FALSE(ParseEnum(kColorNames, "Blue", &c));
  EXPECT_STREQ(EnumName(kColorNames, Color::kGreen), "green");
  EXPECT_STREQ(EnumName(kColorNames, static_cast<Color>(9)), "red");  // The first row: the default.
  EXPECT_EQ(EnumNames(kColorNames), (std::vector<std::string>{"red", "green", "blue"}));
  EXPECT_EQ(EnumNameList(kColorNames), "red, green or blue");
}

}  // namespace
}  // namespace tarmac
