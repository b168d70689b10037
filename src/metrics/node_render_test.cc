// SPDX-License-Identifier: Apache-2.0
#include "metrics/node_render.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <regex>
#include <set>
#include <sstream>

#include "node/gpu_marks.h"
#include "node/metric_families.h"
#include "nvidia/clock_event_reasons.h"

namespace tarmac::metrics {
namespace {

// A line of an exposition: its family, labels and value.
struct NodeRenderLine {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

std::vector<NodeRenderLine> ParseNodeRenderText(const std::string& text) {
  static const std::regex kLine(R"(^([a-zA-Z_:][a-zA-Z0-9_:]*)\{([^}]*)\} (\S+)$)");
  static const std::regex kLabel(R"re(([a-zA-Z_]+)="((?:[^"\\]|\\.)*)")re");
  std::vector<NodeRenderLine> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (!std::regex_match(line, m, kLine)) continue;
    NodeRenderLine l{m[1].str(), {}, std::stod(m[3].str())};
    std::string labels = m[2].str();
    for (auto it = std::sregex_iterator(labels.begin(), labels.end(), kLabel); it != std::sregex_iterator();
         ++it) {
      l.labels[(*it)[1].str()] = (*it)[2].str();
    }
    out.push_back(std::move(l));
  }
  return out;
}

// A node of `gpus` GPUs in random states: readable or not, busy or idle,
// processes holding memory at 0 % SM or busy ones, MIG instances,
// hardware slowdowns, drains.
node::NodeView RandomNode(std::mt19937* rng, int gpus) {
  auto coin = [rng](double p) { return std::bernoulli_distribution(p)(*rng); };
  node::NodeView v;
  v.hostname = "node-r";
  for (int i = 0; i < gpus; ++i) {
    node::GpuView g;
    g.info.index = i;
    g.info.uuid = "GPU-" + std::to_string(i);
    g.info.name = "NVIDIA H100 80GB HBM3";
    if (coin(0.1)) g.sample.health = coin(0.5) ? node::GpuHealth::kLost : node::GpuHealth::kUnresponsive;
    if (coin(0.8)) g.sample.utilization_gpu_ratio = coin(0.5) ? 0.01 : 0.7;
    if (coin(0.2)) {
      node::MigInstance m;
      m.uuid = "MIG-" + std::to_string(i);
      g.sample.mig_instances.push_back(m);
    }
    int processes = std::uniform_int_distribution<int>(0, 3)(*rng);
    for (int p = 0; p < processes; ++p) {
      node::ProcessView pv;
      pv.process.pid = 100 * i + p;
      pv.process.used_memory_bytes = coin(0.5) ? int64_t{1} << 30 : int64_t{100} << 20;
      pv.process.sm_utilization_ratio = coin(0.6) ? 0.0 : 0.5;
      g.processes.push_back(pv);
    }
    if (coin(0.15)) g.sample.clock_event_reasons = nvidia::kReasonHwSlowdown;
    if (coin(0.1)) g.drained = node::GpuDrain{"alice", "fan", 1};
    v.gpus.push_back(g);
  }
  return v;
}

// Each count of tarmac_node_gpus is what the per-GPU families of the same
// page say, summed: on random nodes, against the page's own tarmac_gpu_*
// lines, and the leased count against tarmac_gpu_lease's GPUs.
TEST(NodeRenderTest, EachCountIsThePerGpuFamiliesOfTheSamePageSummed) {
  std::mt19937 rng(52);
  for (int round = 0; round < 200; ++round) {
    node::Snapshot s;
    s.node_view = RandomNode(&rng, std::uniform_int_distribution<int>(0, 8)(rng));
    std::vector<NodeRenderLine> lines = ParseNodeRenderText(RenderMetrics(s, {}, {}, {}));
    std::map<std::string, double> want = {{"all", 0},  {"idle", 0},     {"held_idle", 0},
                                          {"lost", 0}, {"degraded", 0}, {"drain", 0}};
    std::map<std::string, double> got;
    double holders = 0, utilization_sum = 0, utilizations = 0;
    std::optional<double> node_holders, node_utilization;
    for (const NodeRenderLine& l : lines) {
      namespace f = node::family;
      if (l.name == f::kGpuInfo) want["all"] += l.value;
      if (l.name == f::kGpuIdle) want["idle"] += l.value;
      if (l.name == f::kGpuHeldIdle) want["held_idle"] += l.value;
      if (l.name == f::kGpuLost) want["lost"] += l.value;
      if (l.name == f::kGpuHealth && l.labels.at("verdict") != "ok") want[l.labels.at("verdict")] += l.value;
      if (l.name == f::kGpuUtilizationRatio) {
        utilization_sum += l.value;
        ++utilizations;
      }
      if (l.name == f::kNodeGpus) {
        EXPECT_EQ(l.labels.at("hostname"), "node-r");
        got[l.labels.at("which")] = l.value;
      }
      if (l.name == f::kNodeIdleHolders) node_holders = l.value;
      if (l.name == f::kNodeUtilizationRatio) node_utilization = l.value;
    }
    for (const node::GpuView& g : s.node_view.gpus) {
      if (g.sample.health != node::GpuHealth::kOk) continue;
      for (const node::ProcessView& p : g.processes) holders += node::IsIdleHolding(p, g) ? 1 : 0;
    }
    EXPECT_EQ(got, want) << "round " << round;
    EXPECT_EQ(node_holders, holders) << "round " << round;
    if (utilizations == 0) {
      EXPECT_FALSE(node_utilization) << "round " << round;
    } else {
      ASSERT_TRUE(node_utilization) << "round " << round;
      EXPECT_NEAR(*node_utilization, utilization_sum / utilizations, 1e-9) << "round " << round;
    }

    node::LeaseMarks marks;
    for (const node::GpuView& g : s.node_view.gpus) {
      if (std::bernoulli_distribution(0.3)(rng)) marks.leases[g.info.index] = {7, "bob"};
      for (const node::MigInstance& m : g.sample.mig_instances) {
        if (std::bernoulli_distribution(0.5)(rng)) marks.mig_leases[m.uuid] = {8, "carol"};
      }
    }
    marks.leases[99] = {9, "dave"};  // A GPU the node does not have.
    std::set<std::string> leased;
    for (const NodeRenderLine& l : ParseNodeRenderText(RenderLeaseMarks(marks, s.node_view, "node-r")))
      leased.insert(l.labels.at("gpu"));
    std::vector<NodeRenderLine> count = ParseNodeRenderText(RenderNodeLeased(marks, s.node_view, "node-r"));
    ASSERT_EQ(count.size(), 1u);
    EXPECT_EQ(count[0].name, node::family::kNodeGpusLeased);
    EXPECT_EQ(count[0].value, static_cast<double>(leased.size())) << "round " << round;
  }
}

// A node with no GPU still says so: every count present, at 0, and no
// mean utilization.
TEST(NodeRenderTest, ANodeWithoutGpusCountsZeroOfEach) {
  node::Snapshot s;
  s.node_view.hostname = "empty";
  std::vector<NodeRenderLine> lines = ParseNodeRenderText(RenderMetrics(s, {}, {}, {}));
  std::set<std::string> which;
  for (const NodeRenderLine& l : lines) {
    EXPECT_NE(l.name, node::family::kNodeUtilizationRatio);
    if (l.name != node::family::kNodeGpus) continue;
    which.insert(l.labels.at("which"));
    EXPECT_EQ(l.value, 0) << l.labels.at("which");
  }
  EXPECT_EQ(which, (std::set<std::string>{"all", "idle", "held_idle", "lost", "degraded", "drain"}));
  EXPECT_NE(RenderNodeLeased({}, s.node_view, "empty").find("tarmac_node_gpus_leased{hostname=\"empty\"} 0"),
            std::string::npos);
}

}  // namespace
}  // namespace tarmac::metrics
