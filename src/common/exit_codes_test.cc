// SPDX-License-Identifier: Apache-2.0
#include "common/exit_codes.h"

#include <gtest/gtest.h>

namespace tarmac {
namespace {

TEST(ExitCodesTest, OneTableTwoReadingsOfUnavailable) {
  // Reading the GPUs: no driver is 3; asking the agent: no agent is 69.
  EXPECT_EQ(ExitCodeFor(StatusCode::kUnavailable, Needed::kGpus), kExitNoDriver);
  EXPECT_EQ(ExitCodeFor(StatusCode::kUnavailable, Needed::kAgent), kExitNoAgent);
  // The same for both.
  for (Needed n : {Needed::kGpus, Needed::kAgent}) {
    EXPECT_EQ(ExitCodeFor(StatusCode::kOk, n), kExitOk);
    EXPECT_EQ(ExitCodeFor(StatusCode::kInvalidArgument, n), kExitUsage);
    EXPECT_EQ(ExitCodeFor(StatusCode::kDeadlineExceeded, n), kExitNoAgent);
    EXPECT_EQ(ExitCodeFor(StatusCode::kInternal, n), kExitError);
  }
  // The lease commands' own codes (docs/cli.md, "Exit codes").
  EXPECT_EQ(ExitCodeFor(StatusCode::kFailedPrecondition, Needed::kAgent), kExitNoAgent);
  EXPECT_EQ(ExitCodeFor(StatusCode::kIOError, Needed::kAgent), kExitStorage);
  EXPECT_EQ(ExitCodeFor(StatusCode::kResourceExhausted, Needed::kAgent), kExitNoFit);
  EXPECT_EQ(ExitCodeFor(StatusCode::kPermissionDenied, Needed::kAgent), kExitNotPermitted);
  // A file the reading commands cannot read is an error, not "could not save".
  EXPECT_EQ(ExitCodeFor(StatusCode::kIOError, Needed::kGpus), kExitError);
  EXPECT_TRUE(IsNoAgent(kExitNoAgent));
  EXPECT_FALSE(IsNoAgent(kExitNoDriver));
}

}  // namespace
}  // namespace tarmac
