// SPDX-License-Identifier: Apache-2.0
#include "sched/fair_share.h"

#include <gtest/gtest.h>

namespace tarmac::sched {
namespace {

using std::chrono::hours;

TEST(FairShareTest, UseHalvesEachHalfLifeAndAddsUp) {
  FairShare share(hours(24));
  std::chrono::steady_clock::time_point t0{};
  share.Charge(1001, 3600, t0);
  EXPECT_DOUBLE_EQ(share.Usage(1001, t0), 3600);
  EXPECT_DOUBLE_EQ(share.Usage(1001, t0 + hours(24)), 1800);
  EXPECT_DOUBLE_EQ(share.Usage(1001, t0 + hours(48)), 900);
  share.Charge(1001, 100, t0 + hours(24));
  EXPECT_DOUBLE_EQ(share.Usage(1001, t0 + hours(24)), 1900);
  EXPECT_DOUBLE_EQ(share.Usage(1002, t0), 0);
}

TEST(FairShareTest, OldHeavyUseFallsBelowRecentLightUse) {
  FairShare share(hours(1));
  std::chrono::steady_clock::time_point t0{};
  share.Charge(1001, 8 * 3600, t0);        // A night on 8 GPUs...
  share.Charge(1002, 600, t0 + hours(9));  // ...against ten minutes now.
  EXPECT_LT(share.Usage(1001, t0 + hours(10)), share.Usage(1002, t0 + hours(10)));
}

}  // namespace
}  // namespace tarmac::sched
