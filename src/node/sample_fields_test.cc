// SPDX-License-Identifier: Apache-2.0
#include "node/sample_fields.h"

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

#include "node/node_json.h"

namespace tarmac::node {
namespace {

// Every row of the table set to a value of its own (row n: n + 1, a bool
// row true), so a row that one direction forgets cannot come back equal.
GpuSample EveryFieldSet(Tier only, bool all_tiers) {
  GpuSample s;
  int n = 0;
  for (const SampleField& f : SampleFields()) {
    ++n;
    if (!all_tiers && f.tier != only) continue;
    std::visit(
        [&](auto member) {
          using Value = typename std::remove_reference_t<decltype(s.*member)>::value_type;
          if constexpr (std::is_same_v<Value, bool>) {
            s.*member = true;
          } else if constexpr (std::is_same_v<Value, double>) {
            s.*member = n / 100.0;
          } else {
            s.*member = static_cast<Value>(n);
          }
        },
        f.member);
  }
  return s;
}

// The row's value as text ("" when empty), to compare across types.
std::string ValueOf(const GpuSample& s, const SampleField& f) {
  return std::visit(
      [&](auto member) {
        const auto& v = s.*member;
        return v ? nlohmann::json(*v).dump() : std::string();
      },
      f.member);
}

TEST(SampleFieldsTest, KeysAreUniqueAndEveryRowNamesAUnit) {
  std::set<std::string_view> keys;
  for (const SampleField& f : SampleFields()) {
    EXPECT_TRUE(keys.insert(f.json_key).second) << f.json_key;
    EXPECT_FALSE(f.unit.empty()) << f.json_key;
  }
  EXPECT_GE(keys.size(), 30u);
}

TEST(SampleFieldsTest, EveryReadingSurvivesStatusJsonBothWays) {
  NodeView f;
  GpuView g;
  g.info.uuid = "GPU-1";
  g.sample = EveryFieldSet(Tier::kFast, /*all_tiers=*/true);
  f.gpus.push_back(g);
  nlohmann::json j = StatusToJson(f);
  Result<NodeView> back = NodeFromJson(j);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  for (const SampleField& field : SampleFields()) {
    EXPECT_TRUE(j["gpus"][0].contains(std::string(field.json_key))) << field.json_key;
    EXPECT_EQ(ValueOf(back.value().gpus[0].sample, field), ValueOf(g.sample, field)) << field.json_key;
    EXPECT_FALSE(ValueOf(g.sample, field).empty()) << field.json_key;
  }
}

TEST(SampleFieldsTest, AFastTickKeepsEverySlowReadingAndNoFastOne) {
  GpuSample slow = EveryFieldSet(Tier::kSlow, /*all_tiers=*/true);
  slow.ecc.volatile_corrected = 7;
  slow.remapped_rows = RemappedRows{1, 2, true, false};
  slow.nvlink_active = {true, false};
  slow.retired_pages = RetiredPages{3, 4, true};
  GpuSample fast;  // A fast-tier read: its slow readings empty.
  CarrySlowTier(slow, &fast);
  for (const SampleField& field : SampleFields()) {
    if (field.tier == Tier::kSlow) {
      EXPECT_EQ(ValueOf(fast, field), ValueOf(slow, field)) << field.json_key;
    } else {
      EXPECT_EQ(ValueOf(fast, field), "") << field.json_key << " is fast: never carried";
    }
  }
  EXPECT_EQ(fast.ecc.volatile_corrected, 7);
  ASSERT_TRUE(fast.remapped_rows.has_value());
  EXPECT_EQ(fast.nvlink_active, (std::vector<bool>{true, false}));
  ASSERT_TRUE(fast.retired_pages.has_value());
  EXPECT_EQ(fast.retired_pages->double_bit, 4);
}

// docs/status-json.md names every reading of the table.
TEST(SampleFieldsTest, EveryReadingIsDocumented) {
  std::ifstream in(std::string(TARMAC_SOURCE_DIR) + "/docs/status-json.md");
  ASSERT_TRUE(in.good());
  std::stringstream text;
  text << in.rdbuf();
  for (const SampleField& f : SampleFields()) {
    EXPECT_NE(text.str().find("`" + std::string(f.json_key) + "`"), std::string::npos)
        << f.json_key << " is not in docs/status-json.md";
  }
}

}  // namespace
}  // namespace tarmac::node
