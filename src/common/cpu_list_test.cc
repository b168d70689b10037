// SPDX-License-Identifier: Apache-2.0
#include "common/cpu_list.h"

#include <gtest/gtest.h>

namespace tarmac {
namespace {

TEST(CpuListTest, RoundTripsKernelNotation) {
  Result<std::vector<uint64_t>> mask = ParseCpuList("0-55,112-167");
  ASSERT_TRUE(mask.ok());
  EXPECT_EQ(mask.value().size(), 3u);
  EXPECT_EQ(FormatCpuList(mask.value()), "0-55,112-167");
  EXPECT_EQ(FormatCpuList(ParseCpuList("3,1,2,7").value()), "1-3,7");
  EXPECT_EQ(FormatCpuList(ParseCpuList("63-64").value()), "63-64");
  // Runs across and after empty 64-bit words, up to the last CPU.
  EXPECT_EQ(FormatCpuList(ParseCpuList("0,130-191,192,200,4095").value()), "0,130-192,200,4095");
  EXPECT_EQ(FormatCpuList({}), "");
}

TEST(CpuListTest, RejectsMalformedLists) {
  EXPECT_FALSE(ParseCpuList("5-3").ok());
  EXPECT_FALSE(ParseCpuList("a-b").ok());
  EXPECT_FALSE(ParseCpuList("1,,2").ok());
  EXPECT_FALSE(ParseCpuList("0-99999").ok());
}

}  // namespace
}  // namespace tarmac
