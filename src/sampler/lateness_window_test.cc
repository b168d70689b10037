// SPDX-License-Identifier: Apache-2.0
#include "sampler/lateness_window.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace tarmac::sampler {
namespace {

using std::chrono::microseconds;

TEST(LatenessWindowTest, ThePercentileIsOfTheLastWindowOnly) {
  LatenessWindow window;
  EXPECT_EQ(LatenessWindow::P99(window.Values()), microseconds(0));
  // 200 very late ticks, then a full window of ticks 1 to 1024 us late.
  for (int i = 0; i < 200; ++i) window.Add(microseconds(1'000'000));
  EXPECT_EQ(window.Values().size(), 200u);
  EXPECT_EQ(LatenessWindow::P99(window.Values()), microseconds(1'000'000));
  for (int i = 1; i <= static_cast<int>(kLatenessWindow); ++i) window.Add(microseconds(i));
  std::vector<int64_t> values = window.Values();
  ASSERT_EQ(values.size(), kLatenessWindow);
  EXPECT_EQ(*std::max_element(values.begin(), values.end()), static_cast<int64_t>(kLatenessWindow));
  // Index 1024 * 99 / 100 = 1013 of 1..1024 in order: 1014.
  EXPECT_EQ(LatenessWindow::P99(values), microseconds(1014));
}

TEST(LatenessWindowTest, OneLateTickInAFewIsThePercentile) {
  LatenessWindow window;
  for (int i = 0; i < 9; ++i) window.Add(microseconds(10));
  window.Add(microseconds(5000));
  EXPECT_EQ(LatenessWindow::P99(window.Values()), microseconds(5000));
}

}  // namespace
}  // namespace tarmac::sampler
