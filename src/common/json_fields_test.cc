// SPDX-License-Identifier: Apache-2.0
#include "common/json_fields.h"

#include <gtest/gtest.h>

namespace tarmac {
namespace {

using nlohmann::json;

TEST(JsonFieldsTest, TheFirstProblemIsKeptNamingTheObjectAndTheKey) {
  json j = {{"id", 7}, {"user", 3}, {"gpus", {0, "one"}}, {"engine", {{"url", 5}}}};
  JsonFields f(j, "lease");
  int64_t id = 0;
  std::string user = "unchanged";
  f.Get("id", &id);
  f.Optional("user", &user);
  EXPECT_EQ(id, 7);
  EXPECT_EQ(user, "unchanged");
  std::vector<int> gpus;
  f.Optional("gpus", &gpus);  // After a problem, nothing more is read.
  EXPECT_TRUE(gpus.empty());
  EXPECT_EQ(f.status().message(), "lease.user: expected a string");
  EXPECT_EQ(f.status().code(), StatusCode::kInvalidArgument);
}

TEST(JsonFieldsTest, EveryTypeAndAbsentNullMissingAndNested) {
  json j = {{"i", -4},     {"u", 18446744073709551615ULL},
            {"d", 1.5},    {"b", true},
            {"s", "x"},    {"n", nullptr},
            {"v", {1, 2}}, {"o", {{"k", 1}}}};
  JsonFields f(j, "doc");
  int i = 0;
  uint64_t u = 0;
  double d = 0;
  bool b = false;
  std::string s;
  std::optional<int64_t> n = 9;
  std::optional<int64_t> absent;
  std::vector<int64_t> v;
  f.Get("i", &i);
  f.Get("u", &u);
  f.Get("d", &d);
  f.Get("b", &b);
  f.Get("s", &s);
  f.Optional("n", &n);  // Null: left as is.
  f.Optional("absent", &absent);
  f.Get("v", &v);
  int64_t k = 0;
  JsonFields o = f.Object("o");
  o.Get("k", &k);
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_EQ(i, -4);
  EXPECT_EQ(u, 18446744073709551615ULL);
  EXPECT_EQ(d, 1.5);
  EXPECT_TRUE(b);
  EXPECT_EQ(s, "x");
  EXPECT_EQ(n, 9);
  EXPECT_FALSE(absent.has_value());
  EXPECT_EQ(v, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(k, 1);
  // A nested object's problem is its parent's, named by its path.
  o.Get("missing", &k);
  EXPECT_EQ(f.status().message(), "doc.o.missing: missing");
}

TEST(JsonFieldsTest, NotAnObjectAndDoubleIsNotAnInteger) {
  EXPECT_EQ(JsonFields(json::array(), "spec").status().message(), "spec: expected an object");
  json j = {{"n", 1.5}};
  JsonFields f(j, "spec");
  int64_t n = 0;
  f.Get("n", &n);
  EXPECT_EQ(f.status().message(), "spec.n: expected an integer");
}

// Skipping wrong types: the field is left as it is, the rest still read.
TEST(JsonFieldsTest, AReaderThatSkipsWrongTypesReadsTheRest) {
  json j = {{"a", "text"}, {"b", 2}, {"o", 4}};
  JsonFields f(j, "doc", JsonFields::kSkipWrongTypes);
  int64_t a = 1, b = 0, inner = 5;
  f.Get("a", &a);
  f.Get("b", &b);
  f.Object("o").Optional("x", &inner);
  EXPECT_TRUE(f.ok());
  EXPECT_EQ(a, 1);
  EXPECT_EQ(b, 2);
  EXPECT_EQ(inner, 5);
  EXPECT_TRUE(JsonFields(json::array(), "doc", JsonFields::kSkipWrongTypes).ok());
}

}  // namespace
}  // namespace tarmac
