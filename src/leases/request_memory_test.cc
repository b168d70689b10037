// SPDX-License-Identifier: Apache-2.0
// What the lease service remembers of requests that left its book: a
// retry's key answers with the first try's id, and why each recent one
// ended; both bounded, the oldest forgotten first.
#include "leases/request_memory.h"

#include <gtest/gtest.h>

namespace tarmac::leases {
namespace {

TEST(RequestMemoryTest, ARetrysKeyFindsTheFirstTrysIdForItsOwnerOnly) {
  RequestMemory m;
  m.RememberKey(1001, "k-1", 7);
  m.RememberKey(1001, "", 8);  // No key: nothing to recognize.
  EXPECT_EQ(m.FindKey(1001, "k-1"), 7);
  EXPECT_FALSE(m.FindKey(1002, "k-1").has_value());  // Another user's key is another request.
  EXPECT_FALSE(m.FindKey(1001, "").has_value());
}

TEST(RequestMemoryTest, WhyEachEndedAndTheOldestForgottenFirst) {
  RequestMemory m;
  m.RememberEnded(1, "released by alice", "released");
  ASSERT_NE(m.FindEnded(1), nullptr);
  EXPECT_EQ(m.FindEnded(1)->kind, "released");
  EXPECT_EQ(m.FindEnded(1)->why, "released by alice");
  EXPECT_EQ(m.FindEnded(2), nullptr);
  for (int64_t id = 2; id <= static_cast<int64_t>(RequestMemory::kMaxEnded); ++id) m.RememberEnded(id, "x");
  EXPECT_NE(m.FindEnded(1), nullptr);  // Exactly full.
  m.RememberEnded(1, "told again");    // The same id again takes no new place.
  EXPECT_EQ(m.FindEnded(1)->why, "told again");
  m.RememberEnded(RequestMemory::kMaxEnded + 1, "one more");
  EXPECT_EQ(m.FindEnded(1), nullptr);  // The oldest id made room.
  EXPECT_NE(m.FindEnded(2), nullptr);
}

TEST(RequestMemoryTest, KeysAreBoundedTooTheLowestIdGoingFirst) {
  RequestMemory m;
  const int64_t limit = 2 * static_cast<int64_t>(RequestMemory::kMaxEnded);
  for (int64_t id = 1; id <= limit; ++id) m.RememberKey(1001, "k-" + std::to_string(id), id);
  EXPECT_EQ(m.FindKey(1001, "k-1"), 1);
  m.RememberKey(1001, "k-new", limit + 1);
  EXPECT_FALSE(m.FindKey(1001, "k-1").has_value());
  EXPECT_EQ(m.FindKey(1001, "k-2"), 2);
  EXPECT_EQ(m.FindKey(1001, "k-new"), limit + 1);
}

}  // namespace
}  // namespace tarmac::leases
