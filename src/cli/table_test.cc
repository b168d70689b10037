// SPDX-License-Identifier: Apache-2.0
#include "cli/table.h"

#include <gtest/gtest.h>

namespace tarmac::cli {
namespace {

TEST(TableTest, EveryColumnIsAsWideAsItsWidestCell) {
  std::string out = RenderTable(
      {{"LEASE", true}, {"USER"}, {"GPUS"}, {"KIND"}},
      {{"7", "alice", "0,1,2,3,4,5,6,7", "reservation"}, {"12", "a-very-long-user-name", "3", "run"}});
  EXPECT_EQ(out,
            "LEASE  USER                   GPUS             KIND\n"
            "    7  alice                  0,1,2,3,4,5,6,7  reservation\n"
            "   12  a-very-long-user-name  3                run\n");
}

}  // namespace
}  // namespace tarmac::cli
