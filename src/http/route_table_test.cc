// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include "http/server.h"

namespace tarmac::http {
namespace {

TEST(RouteTableTest, PathsAreUniqueAndAbsolute) {
  RouteTable routes;
  EXPECT_TRUE(routes.Add("/metrics", [] { return Response{}; }).ok());
  EXPECT_EQ(routes.Add("/metrics", [] { return Response{}; }).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(routes.Add("health", [] { return Response{}; }).code(), StatusCode::kInvalidArgument);
  ASSERT_EQ(routes.routes().size(), 1u);
  EXPECT_EQ(routes.routes()[0].first, "/metrics");
}

}  // namespace
}  // namespace tarmac::http
