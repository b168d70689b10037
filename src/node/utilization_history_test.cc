// SPDX-License-Identifier: Apache-2.0
#include "node/utilization_history.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace tarmac::node {
namespace {

using std::chrono::seconds;

TEST(UtilizationHistoryTest, MeanCoversOnlyTheWindow) {
  UtilizationHistory h;
  auto t0 = std::chrono::steady_clock::time_point{} + std::chrono::hours(1);
  for (int i = 0; i < 60; ++i) h.Record(0, t0 + seconds(i), i < 50 ? 1.0 : 0.0);
  auto now = t0 + seconds(59);
  EXPECT_DOUBLE_EQ(*h.Mean(0, now, seconds(10)), 0.0);  // The last ten readings: idle.
  EXPECT_DOUBLE_EQ(*h.Mean(0, now, seconds(20)), 0.5);  // Ten busy, ten idle.
  EXPECT_NEAR(*h.Mean(0, now, seconds(600)), 50.0 / 60.0, 1e-9);
  EXPECT_FALSE(h.Mean(1, now, seconds(10)));                 // No such GPU.
  EXPECT_FALSE(h.Mean(0, now + seconds(100), seconds(10)));  // Nothing that recent.
}

TEST(UtilizationHistoryTest, KeepsAtMostCapacityReadings) {
  UtilizationHistory h;
  auto t0 = std::chrono::steady_clock::time_point{} + std::chrono::hours(1);
  size_t total = UtilizationHistory::kCapacity + 100;
  for (size_t i = 0; i < total; ++i) h.Record(3, t0 + seconds(i), i < 100 ? 1.0 : 0.25);
  // The first hundred (busy) readings have been overwritten.
  EXPECT_DOUBLE_EQ(*h.Mean(3, t0 + seconds(total - 1), seconds(100000)), 0.25);
}

TEST(UtilizationHistoryTest, SeriesIsTheWindowOldestFirstAcrossTheRingsWrap) {
  UtilizationHistory h;
  auto t0 = std::chrono::steady_clock::time_point{} + std::chrono::hours(1);
  size_t total = UtilizationHistory::kCapacity + 7;  // The ring has wrapped.
  for (size_t i = 0; i < total; ++i) h.Record(2, t0 + seconds(i), static_cast<double>(i) / total);
  auto now = t0 + seconds(total - 1);
  std::vector<double> last5 = h.Series(2, now, seconds(5));
  ASSERT_EQ(last5.size(), 5u);
  for (size_t i = 0; i < 5; ++i) EXPECT_DOUBLE_EQ(last5[i], static_cast<double>(total - 5 + i) / total);
  std::vector<double> all = h.Series(2, now, seconds(100000));
  ASSERT_EQ(all.size(), UtilizationHistory::kCapacity);
  EXPECT_DOUBLE_EQ(all.front(), 7.0 / total);  // The oldest kept.
  EXPECT_TRUE(std::is_sorted(all.begin(), all.end()));
  EXPECT_TRUE(h.Series(9, now, seconds(5)).empty());
}

}  // namespace
}  // namespace tarmac::node
