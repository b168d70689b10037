// SPDX-License-Identifier: Apache-2.0
#include "common/status.h"

#include <gtest/gtest.h>

#include "common/result.h"

namespace tarmac {
namespace {

TEST(StatusTest, CarriesCodeMessageAndContext) {
  Status s = Status::NotFound("gpu", "7");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.ToString(), "not found: gpu: 7");
  EXPECT_EQ(s.WithContext("pick").message(), "pick: gpu: 7");
  EXPECT_TRUE(Status::OK().WithContext("x").ok());
  EXPECT_EQ(Status::OK().ToString(), "OK");
}

TEST(StatusTest, ResultHoldsValueOrStatus) {
  Result<int> good = 3;
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(good.value(), 3);
  Result<int> bad = Status::Unavailable("nvml");
  EXPECT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kUnavailable);
}

}  // namespace
}  // namespace tarmac
