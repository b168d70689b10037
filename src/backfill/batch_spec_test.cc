// SPDX-License-Identifier: Apache-2.0
#include "backfill/batch_spec.h"

#include <gtest/gtest.h>

namespace tarmac::backfill {
namespace {

BatchSpec Valid() {
  BatchSpec s;
  s.input = "/home/alice/in.jsonl";
  s.output = "/home/alice/out.jsonl";
  s.errors = "/home/alice/errors.jsonl";
  s.engine.url = "http://127.0.0.1:11434";
  return s;
}

TEST(BatchSpecTest, AValidSpecPasses) { EXPECT_TRUE(CheckBatchSpec(Valid()).ok()); }

TEST(BatchSpecTest, RegressionANegativeTotalIsRefusedNamingTheField) {
  BatchSpec s = Valid();
  s.total = -5;
  Status checked = CheckBatchSpec(s);
  ASSERT_FALSE(checked.ok());
  EXPECT_EQ(checked.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(checked.message().find("total -5"), std::string::npos) << checked.message();
  s.total = 0;
  EXPECT_TRUE(CheckBatchSpec(s).ok());
}

}  // namespace
}  // namespace tarmac::backfill
