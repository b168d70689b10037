// SPDX-License-Identifier: Apache-2.0
#include "node/counter_rate.h"

#include <gtest/gtest.h>

namespace tarmac::node {
namespace {

std::chrono::system_clock::time_point At(int seconds) {
  return std::chrono::system_clock::time_point(std::chrono::seconds(1'800'000'000 + seconds));
}

TEST(CounterRateTest, ChangeOverTheTimeBetweenItsOwnReadings) {
  CounterRate r;
  r.Observe(1000, At(0));
  EXPECT_FALSE(r.per_second.has_value());
  r.Observe(1000, At(0));          // The same reading, carried: nothing.
  r.Observe(std::nullopt, At(3));  // Not read: nothing.
  EXPECT_FALSE(r.per_second.has_value());
  r.Observe(6000, At(5));
  EXPECT_DOUBLE_EQ(*r.per_second, 1000.0);
  r.Observe(6000, At(5));  // Carried again: the rate holds.
  EXPECT_DOUBLE_EQ(*r.per_second, 1000.0);
  r.Observe(6000, At(10));  // Read again, unchanged: nothing moved.
  EXPECT_DOUBLE_EQ(*r.per_second, 0.0);
}

TEST(CounterRateTest, ADriverReloadOrATimeGoingBackStartsOver) {
  CounterRate r;
  r.Observe(1000, At(0));
  r.Observe(2000, At(1));
  ASSERT_TRUE(r.per_second.has_value());
  r.Observe(10, At(2));  // The counter went backwards.
  EXPECT_FALSE(r.per_second.has_value());
  r.Observe(110, At(3));
  EXPECT_DOUBLE_EQ(*r.per_second, 100.0);
  r.Observe(500, At(1));  // The wall clock stepped back.
  EXPECT_FALSE(r.per_second.has_value());
}

}  // namespace
}  // namespace tarmac::node
