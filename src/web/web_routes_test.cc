// SPDX-License-Identifier: Apache-2.0
#include "web/web_routes.h"

#include <gtest/gtest.h>

namespace tarmac::web {
namespace {

TEST(WebRoutesTest, QueryParametersBecomeTheMethodsParams) {
  nlohmann::json p = ParamsFromQuery({{"after", "40"},
                                      {"limit", "-3"},
                                      {"newest", "true"},
                                      {"off", "false"},
                                      {"name", "abc"},
                                      {"dash", "-"},
                                      {"huge", "1234567890123456789012"},
                                      {"empty", ""},
                                      {"mixed", "12ab"}});
  EXPECT_EQ(p["after"], 40);
  EXPECT_EQ(p["limit"], -3);
  EXPECT_EQ(p["newest"], true);
  EXPECT_EQ(p["off"], false);
  EXPECT_EQ(p["name"], "abc");
  EXPECT_EQ(p["dash"], "-");
  // Too long for an integer: the method sees a string and refuses it.
  EXPECT_EQ(p["huge"], "1234567890123456789012");
  EXPECT_EQ(p["empty"], "");
  EXPECT_EQ(p["mixed"], "12ab");
}

TEST(WebRoutesTest, EachReadMethodHasItsPath) {
  EXPECT_EQ(ApiPathOf("status"), "/api/v1/status");
  EXPECT_EQ(ApiPathOf("backfill.list"), "/api/v1/backfill");
}

}  // namespace
}  // namespace tarmac::web
