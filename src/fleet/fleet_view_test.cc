// SPDX-License-Identifier: Apache-2.0
//
// The fleet view's filters, totals and text: what a user narrows to is what
// is counted, a down node's last readings are not "now", and every line
// fits the width.
#include "fleet/fleet_view.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "common/text_wrap.h"
#include "fleet/fleet_render.h"

namespace tarmac::fleet {
namespace {

FleetGpu Gpu(int index, const std::string& model, bool idle, bool held_idle = false) {
  FleetGpu g;
  g.index = index;
  g.uuid = "GPU-" + std::to_string(index);
  g.model = model;
  g.is_idle = idle;
  g.is_held_idle = held_idle;
  g.idle_holders = held_idle ? 2 : 0;
  g.utilization_ratio = idle ? 0.0 : 0.9;
  g.memory_used_bytes = 3.0 * (1 << 30);
  g.memory_total_bytes = 80.0 * (1 << 30);
  return g;
}

FleetView Fleet() {
  FleetView v;
  v.prometheus_url = "http://p:9090";
  v.taken_at_unix = 1796000000;
  FleetNode a{"node-a", "10.0.0.1:9477", "tarmac", true, 1796000000, {}, std::nullopt};
  a.gpus = {Gpu(0, "NVIDIA H100 80GB HBM3", true, true), Gpu(1, "NVIDIA H100 80GB HBM3", false)};
  a.gpus[1].holders.push_back(GpuHolder{7, "alice", "slurm", "4242", ""});
  a.gpus[1].throttle_reasons = {"hw_thermal_slowdown", "sw_thermal_slowdown", "sw_power_cap"};
  FleetNode b{"node-b", "10.0.0.2:9477", "tarmac", false, 1795999700, {}, std::nullopt};
  b.gpus = {Gpu(0, "Tesla T4", true), Gpu(1, "Tesla T4", true)};  // Stale: it is down.
  FleetNode c{"node-c", "10.0.0.3:9400", "dcgm-exporter", true, std::nullopt, {}, std::nullopt};
  c.gpus = {Gpu(0, "NVIDIA A100-SXM4-80GB", true)};
  v.nodes = {a, b, c};
  return v;
}

TEST(FleetViewTest, TotalsCountWhatIsUpAndSayItInOneLine) {
  FleetTotals t = Totals(Fleet());
  EXPECT_EQ(t.nodes, 3);
  EXPECT_EQ(t.nodes_down, 1);
  EXPECT_EQ(t.gpus, 5);
  EXPECT_EQ(t.gpus_idle, 2);  // node-b's are not idle now: it is down.
  EXPECT_EQ(t.gpus_held_idle, 1);
  EXPECT_EQ(t.idle_holders, 2);
  EXPECT_EQ(t.gpus_leased, 1);
  EXPECT_EQ(TotalsLine(t), "2 of 5 GPUs idle; 1 held idle by 2 processes; 1 leased; 1 node down");
  FleetTotals big;
  big.gpus = 1024;
  big.gpus_idle = 412;
  EXPECT_EQ(TotalsLine(big), "412 of 1,024 GPUs idle");
}

TEST(FleetViewTest, FiltersKeepWhatTheyNameAndNothingElse) {
  FleetFilter by_node;
  by_node.node = std::regex("node-[ab]");
  FleetView v = Filter(Fleet(), by_node);
  ASSERT_EQ(v.nodes.size(), 2u);
  EXPECT_EQ(v.nodes[1].name, "node-b");  // Down, but named.
  FleetFilter partial;
  partial.node = std::regex("node");  // The whole name must match.
  EXPECT_TRUE(Filter(Fleet(), partial).nodes.empty());

  FleetFilter idle;
  idle.idle_only = true;
  v = Filter(Fleet(), idle);
  ASSERT_EQ(v.nodes.size(), 2u);  // node-b is down: none of its GPUs is idle now.
  EXPECT_EQ(v.nodes[0].gpus.size(), 1u);
  EXPECT_EQ(v.nodes[0].gpus[0].index, 0);
  EXPECT_EQ(v.nodes[1].name, "node-c");

  FleetFilter model;
  model.model = "t4";
  v = Filter(Fleet(), model);
  ASSERT_EQ(v.nodes.size(), 1u);
  EXPECT_EQ(v.nodes[0].name, "node-b");

  FleetFilter held;
  held.held_idle_only = true;
  v = Filter(Fleet(), held);
  ASSERT_EQ(v.nodes.size(), 1u);
  EXPECT_EQ(Totals(v).gpus, 1);
}

TEST(FleetViewTest, TheTextNamesHoldersAndDownNodesWithinTheWidth) {
  std::string text = RenderFleetText(Fleet(), 100);
  EXPECT_NE(text.find("fleet: 3 nodes via http://p:9090\n2 of 5 GPUs idle;"), std::string::npos) << text;
  EXPECT_NE(text.find("job 4242 (alice)"), std::string::npos) << text;
  EXPECT_NE(text.find("idle  2 idle holders"), std::string::npos) << text;
  EXPECT_NE(text.find("node-b  2 GPUs  DOWN since 2026-11-30 00:48 UTC"), std::string::npos) << text;
  EXPECT_NE(text.find("(5m 00s ago)"), std::string::npos) << text;
  EXPECT_NE(text.find("node-c  1 GPU  (dcgm-exporter)"), std::string::npos) << text;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) EXPECT_LE(TextColumns(line), 100u) << line;
  nlohmann::json j = FleetToJson(Fleet());
  EXPECT_EQ(j["totals"]["nodes_down"], 1);
  EXPECT_EQ(j["nodes"][0]["gpus"][1]["holders"][0]["slurm_job"], "4242");
  EXPECT_FALSE(j["nodes"][1]["gpus"][0].contains("idle"));  // A down node says nothing of now.
  EXPECT_EQ(j["nodes"][2]["source"], "dcgm-exporter");
}

// `fleet status --json` writes the document node by node: byte for byte
// the one the whole fleet's JSON would dump, with nodes and without.
TEST(FleetViewTest, TheJsonWrittenNodeByNodeIsTheWholeDocument) {
  for (const FleetView& view : {Fleet(), FleetView{}}) {
    char* buffer = nullptr;
    size_t size = 0;
    std::FILE* out = open_memstream(&buffer, &size);
    ASSERT_NE(out, nullptr);
    WriteFleetJson(view, out);
    std::fclose(out);
    std::string written(buffer, size);
    std::free(buffer);
    EXPECT_EQ(written, FleetToJson(view).dump(2) + "\n");
    EXPECT_EQ(nlohmann::json::parse(written)["nodes"].size(), view.nodes.size());
  }
}

// What --by says wins; unsaid, a line a node past kNodesListedByGpu nodes
// answering now, and every GPU when the count was not asked (JSON, a GPU
// filter) or at most that many answer.
TEST(FleetViewTest, StatusGoesByNodeWhenToldOrPastAFewHundredNodes) {
  EXPECT_TRUE(GoesByNode("node", std::nullopt));
  EXPECT_TRUE(GoesByNode("node", 3));
  EXPECT_FALSE(GoesByNode("gpu", 10000));
  EXPECT_FALSE(GoesByNode("", std::nullopt));
  EXPECT_FALSE(GoesByNode("", kNodesListedByGpu));
  EXPECT_TRUE(GoesByNode("", kNodesListedByGpu + 1));
  EXPECT_FALSE(GoesByNode("", 0));
}

}  // namespace
}  // namespace tarmac::fleet
