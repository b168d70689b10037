// SPDX-License-Identifier: Apache-2.0
#include "agent/snapshot_methods.h"

#include <gtest/gtest.h>

#include "node/node_json.h"
#include "testutil/response_line.h"

namespace tarmac::agent {
namespace {

using nlohmann::json;

json Parse(const std::string& line) { return testing::ParseResponseLine(line); }

TEST(SnapshotMethodsTest, HelloReportsTheCallerAsTheKernelSaysAndStatusNeedsASample) {
  ipc::Request hello;
  hello.id = 1;
  hello.method = "hello";
  AgentInfo agent{"1.2.3", 99, "sim", 1700000000, {}, {}, {}};
  json r = Parse(AnswerSnapshotMethod(hello, ipc::PeerCredentials{1234, 1000, 100}, agent, nullptr));
  EXPECT_EQ(r["ok"], true);
  EXPECT_EQ(r["result"]["peer"]["uid"], 1000);
  EXPECT_EQ(r["result"]["peer"]["pid"], 1234);
  EXPECT_EQ(r["result"]["agent_version"], "1.2.3");

  ipc::Request status;
  status.method = "status";
  json unavailable = Parse(AnswerSnapshotMethod(status, {}, agent, nullptr));
  EXPECT_EQ(unavailable["error"]["code"], ipc::kErrorUnavailable);
  node::Snapshot snapshot;
  snapshot.sequence = 5;
  snapshot.node_view.backend = "sim";
  snapshot.node_view.gpus.resize(2);
  json ok = Parse(AnswerSnapshotMethod(status, {}, agent, &snapshot));
  EXPECT_EQ(ok["result"]["sequence"], 5);
  EXPECT_EQ(ok["result"]["gpus"].size(), 2u);

  // A recent window asks for each GPU's mean utilization from the history.
  node::UtilizationHistory history;
  snapshot.node_view.gpus[1].info.index = 1;
  snapshot.taken_at_steady = std::chrono::steady_clock::now();
  history.Record(1, snapshot.taken_at_steady - std::chrono::seconds(2), 0.8);
  history.Record(1, snapshot.taken_at_steady, 0.4);
  ipc::Request recent;
  recent.method = "status";
  recent.params = {{"recent_window_seconds", 10}};
  json with_window = Parse(AnswerSnapshotMethod(recent, {}, agent, &snapshot, nullptr, &history));
  EXPECT_DOUBLE_EQ(with_window["result"]["gpus"][1]["utilization_gpu_recent_ratio"].get<double>(), 0.6);
  EXPECT_FALSE(with_window["result"]["gpus"][0].contains("utilization_gpu_recent_ratio"));
  for (json bad : {json(0), json(601), json("10"), json(2.5)}) {
    recent.params = {{"recent_window_seconds", bad}};
    json refused = Parse(AnswerSnapshotMethod(recent, {}, agent, &snapshot, nullptr, &history));
    EXPECT_EQ(refused["error"]["code"], ipc::kErrorBadRequest) << bad;
    EXPECT_NE(refused["error"]["message"].get<std::string>().find("recent_window_seconds"),
              std::string::npos);
  }
  // A series: the readings themselves, oldest first.
  recent.params = {{"series_seconds", 10}};
  json with_series = Parse(AnswerSnapshotMethod(recent, {}, agent, &snapshot, nullptr, &history));
  EXPECT_EQ(with_series["result"]["gpus"][1]["utilization_gpu_series"], json({0.8, 0.4}));
  EXPECT_EQ(with_series["result"]["gpus"][0]["utilization_gpu_series"], json::array());
  // And the span they cover (what the doctor judges bursts over), as the
  // client reads it back.
  EXPECT_DOUBLE_EQ(with_series["result"]["gpus"][1]["utilization_gpu_series_seconds"].get<double>(), 2.0);
  std::map<int, node::UtilizationSeries> decoded = node::UtilizationSeriesFromStatus(with_series["result"]);
  EXPECT_EQ(decoded[1].values, (std::vector<double>{0.8, 0.4}));
  EXPECT_DOUBLE_EQ(decoded[1].span_seconds, 2.0);
  EXPECT_EQ(decoded[0].span_seconds, 0);
  for (json bad : {json(0), json(601), json("10")}) {
    recent.params = {{"series_seconds", bad}};
    json refused = Parse(AnswerSnapshotMethod(recent, {}, agent, &snapshot, nullptr, &history));
    EXPECT_EQ(refused["error"]["code"], ipc::kErrorBadRequest) << bad;
  }

  ipc::Request unknown;
  unknown.method = "launch_missiles";
  EXPECT_EQ(Parse(AnswerSnapshotMethod(unknown, {}, agent, nullptr))["error"]["code"],
            ipc::kErrorUnknownMethod);
}

// The stream's status, written one GPU at a time, is the method's result
// dumped, byte for byte: marks, processes and an edit of each part included.
TEST(SnapshotMethodsTest, TheStatusWrittenGpuByGpuIsTheResultDumped) {
  auto marks = std::make_shared<node::LeaseMarks>();
  marks->leases[1] = node::GpuLease{7, "alice", node::LeaseKind::kRun, false};
  AgentInfo agent;
  agent.lease_marks = [marks]() -> std::shared_ptr<const node::LeaseMarks> { return marks; };
  node::Snapshot snapshot;
  snapshot.sequence = 12;
  snapshot.tick_duration = std::chrono::microseconds(1500);
  snapshot.node_view.hostname = "n\"1 \u00e9";
  snapshot.node_view.backend = "sim";
  snapshot.node_view.system.driver_version = "580.1";
  for (int i = 0; i < 3; ++i) {
    node::GpuView g;
    g.info.index = i;
    g.info.uuid = "GPU-" + std::to_string(i);
    g.sample.utilization_gpu_ratio = 0.25 * i;
    node::ProcessView p;
    p.process.pid = 100 + i;
    p.process.used_memory_bytes = int64_t{1} << 30;
    p.details.exists = true;
    p.details.user = "bob";
    p.details.command = "python train.py --token=secret";
    g.processes.push_back(p);
    snapshot.node_view.gpus.push_back(g);
  }
  std::string text = "data: ";
  AppendSnapshotStatus(&text, agent, snapshot, {});
  EXPECT_EQ(text, "data: " + SnapshotStatus(agent, snapshot).dump());
  EXPECT_EQ(json::parse(text.substr(6))["gpus"][1]["lease"]["user"], "alice");

  auto drop_commands = [](json* j) {
    if (j->contains("processes")) {
      for (json& p : (*j)["processes"]) p.erase("command");
    }
  };
  std::string edited;
  AppendSnapshotStatus(&edited, agent, snapshot, drop_commands);
  json whole = SnapshotStatus(agent, snapshot);
  for (json& g : whole["gpus"]) drop_commands(&g);
  EXPECT_EQ(edited, whole.dump());
  EXPECT_EQ(edited.find("secret"), std::string::npos);
}

TEST(SnapshotMethodsTest, StatusMarksEachGpuWithItsLease) {
  ipc::Request status;
  status.method = "status";
  auto marks = std::make_shared<node::LeaseMarks>();
  marks->leases[1] = node::GpuLease{7, "alice", node::LeaseKind::kRun, false};
  AgentInfo agent;
  agent.lease_marks = [marks]() -> std::shared_ptr<const node::LeaseMarks> { return marks; };
  node::Snapshot snapshot;
  snapshot.node_view.gpus.resize(2);
  snapshot.node_view.gpus[1].info.index = 1;
  json r = Parse(AnswerSnapshotMethod(status, {}, agent, &snapshot));
  EXPECT_FALSE(r["result"]["gpus"][0].contains("lease"));
  EXPECT_EQ(r["result"]["gpus"][1]["lease"]["id"], 7);
  EXPECT_EQ(r["result"]["gpus"][1]["lease"]["kind"], "run");
}

}  // namespace
}  // namespace tarmac::agent
