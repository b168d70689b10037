// SPDX-License-Identifier: Apache-2.0
#include "store/lease_state.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "testutil/testutil.h"

namespace tarmac::store {
namespace {

mode_t ModeOf(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

// Leases' tokens are in the file: no one but the agent reads it, its log
// or its shared memory.
TEST(LeaseStateTest, RegressionTheFileAndItsLogAreTheAgentsOnly) {
  testing::TempDir dir;
  std::string path = dir.path() + "/leases.db";
  Result<std::unique_ptr<LeaseState>> state = LeaseState::Open(path);
  ASSERT_TRUE(state.ok()) << state.status().ToString();
  std::vector<LeaseEvent> events;
  ASSERT_TRUE(state.value()->Apply({{"lease", 1, {{"token", "secret"}}}}, &events).ok());
  EXPECT_EQ(ModeOf(path), 0600u);
  EXPECT_EQ(ModeOf(path + "-wal"), 0600u);
  EXPECT_EQ(ModeOf(path + "-shm"), 0600u);
}

TEST(LeaseStateTest, RegressionAFileLeftReadableByAnEarlierVersionIsMadePrivate) {
  testing::TempDir dir;
  std::string path = dir.path() + "/leases.db";
  {
    Result<std::unique_ptr<LeaseState>> state = LeaseState::Open(path);
    ASSERT_TRUE(state.ok());
  }
  ASSERT_EQ(::chmod(path.c_str(), 0644), 0);
  Result<std::unique_ptr<LeaseState>> again = LeaseState::Open(path);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(ModeOf(path), 0600u);
}

}  // namespace
}  // namespace tarmac::store
