// SPDX-License-Identifier: Apache-2.0
//
// fleet idle: the idle and held-idle GPUs of nodes that are up, costliest
// and longest first, with who holds them, within 100 columns.
#include "fleet/fleet_idle.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

#include "common/text_wrap.h"

namespace tarmac::fleet {
namespace {

FleetGpu Idle(int index, double for_seconds, std::optional<double> cost, bool held = false) {
  FleetGpu g;
  g.index = index;
  g.uuid = "GPU-" + std::to_string(index);
  g.model = "NVIDIA H100 80GB HBM3";
  g.is_idle = true;
  g.idle_for_seconds = for_seconds;
  g.idle_for_cost = cost;
  g.currency = "USD";
  if (held) {
    g.is_held_idle = true;
    g.held_idle_for_seconds = for_seconds / 2;
    g.processes = 2;
    g.memory_used_bytes = 20.0 * (1 << 30);
  }
  return g;
}

TEST(FleetIdleTest, CostliestThenLongestFirstOfNodesThatAreUp) {
  FleetView v;
  FleetGpu busy = Idle(9, 0, 0);
  busy.is_idle = false;
  FleetGpu leased = Idle(3, 7200, 8.0);
  leased.holders.push_back(GpuHolder{7, "alice", "reservation", "", ""});
  v.nodes = {
      FleetNode{"a", "a:1", "tarmac", true, std::nullopt, {Idle(0, 600, 0.67), busy, leased}, std::nullopt},
      FleetNode{"b",
                "b:1",
                "tarmac",
                true,
                std::nullopt,
                {Idle(1, 11400, 12.67, true), Idle(2, 900, std::nullopt)},
                std::nullopt},
      FleetNode{"c", "c:1", "tarmac", false, std::nullopt, {Idle(0, 99999, 500.0)}, std::nullopt}};
  std::vector<IdleRow> rows = IdleNow(v);
  ASSERT_EQ(rows.size(), 4u);  // Not the busy GPU, nor the down node's.
  EXPECT_EQ(rows[0].node->name, "b");
  EXPECT_EQ(rows[0].gpu->index, 1);
  EXPECT_EQ(rows[1].gpu->index, 3);
  EXPECT_EQ(rows[2].gpu->index, 0);
  EXPECT_EQ(rows[3].gpu->index, 2);  // No price: by how long, last.
  EXPECT_EQ(IdleSummary(rows), "4 GPUs idle now (1 held idle), 5.6 GPU-hours so far, USD 21.34");
  std::string text = RenderIdleText(v, 100);
  EXPECT_NE(
      text.find(
          "b             1    H100 80GB HBM3        3h 10m    1h 35m     USD 12.67  2 processes, 20.0 GiB"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("USD 12.67  2 processes, 20.0 GiB"), std::string::npos) << text;
  EXPECT_NE(text.find("lease 7 (alice)"), std::string::npos) << text;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) EXPECT_LE(TextColumns(line), 100u) << line;
  nlohmann::json j = IdleToJson(v);
  EXPECT_EQ(j["gpus"].size(), 4u);
  EXPECT_EQ(j["gpus"][0]["held_idle_for_seconds"], 5700);
  EXPECT_FALSE(j["gpus"][3].contains("idle_for_cost"));
  // Who holds each, as the text says it (the console shows this).
  std::vector<std::string> held_by;
  for (const nlohmann::json& g : j["gpus"]) held_by.push_back(g["held_by"]);
  EXPECT_NE(std::find(held_by.begin(), held_by.end(), "2 processes, 20.0 GiB"), held_by.end()) << j.dump();
  EXPECT_NE(std::find_if(held_by.begin(), held_by.end(),
                         [](const std::string& s) { return s.find("lease 7 (alice)") != std::string::npos; }),
            held_by.end())
      << j.dump();
}

}  // namespace
}  // namespace tarmac::fleet
