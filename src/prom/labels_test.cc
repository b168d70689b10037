// SPDX-License-Identifier: Apache-2.0
//
// Labels against a std::map of the same pairs: the same contents, lookups
// and order, whatever order the labels are set in.
#include "prom/labels.h"

#include <gtest/gtest.h>

#include <map>
#include <random>

namespace tarmac::prom {
namespace {

using Map = std::map<std::string, std::string>;

Map AsMap(const Labels& labels) { return Map(labels.begin(), labels.end()); }

TEST(LabelsTest, SetInAnyOrderKeepsNamesSortedAndTheLastValue) {
  Labels l;
  l.Set("uuid", "GPU-1");
  l.Set("hostname", "n1");
  l.Set("state", "busy");
  l.Set("hostname", "n2");
  l.Seal();
  EXPECT_EQ(AsMap(l), (Map{{"hostname", "n2"}, {"state", "busy"}, {"uuid", "GPU-1"}}));
  EXPECT_EQ(l.size(), 3u);
  EXPECT_EQ(l.begin()->first, "hostname");
  ASSERT_NE(l.Find("state"), nullptr);
  EXPECT_EQ(*l.Find("state"), "busy");
  EXPECT_EQ(l.Find("gpu"), nullptr);
  EXPECT_EQ(l.Find(""), nullptr);
  EXPECT_EQ((Labels{{"b", "1"}, {"a", "2"}, {"b", "3"}}), (Labels{{"a", "2"}, {"b", "3"}}));
}

TEST(LabelsTest, MatchesAMapOfTheSamePairsOverRandomSets) {
  std::mt19937 rng(11);
  const char* names[] = {"", "a", "gpu", "hostname", "instance", "state", "uuid", "zz"};
  const char* values[] = {"", "0", "1", "n1", "n2"};
  std::vector<std::pair<Labels, Map>> made;
  for (int i = 0; i < 400; ++i) {
    Labels l;
    Map m;
    int n = static_cast<int>(rng() % 6);
    for (int k = 0; k < n; ++k) {
      std::string name = names[rng() % 8], value = values[rng() % 5];
      l.Set(name, value);
      m[name] = value;
    }
    if (rng() % 2 == 0) l.Seal();
    ASSERT_EQ(AsMap(l), m);
    for (const char* name : names) {
      auto it = m.find(name);
      const std::string* found = l.Find(name);
      ASSERT_EQ(found != nullptr, it != m.end()) << name;
      if (found != nullptr) {
        ASSERT_EQ(*found, it->second);
      }
    }
    made.emplace_back(std::move(l), std::move(m));
  }
  // Compared as the maps are: a map keyed by either sorts them alike.
  for (size_t i = 0; i + 1 < made.size(); ++i) {
    const auto& [la, ma] = made[i];
    const auto& [lb, mb] = made[i + 1];
    ASSERT_EQ(la < lb, ma < mb);
    ASSERT_EQ(lb < la, mb < ma);
    ASSERT_EQ(la == lb, ma == mb);
  }
}

}  // namespace
}  // namespace tarmac::prom
