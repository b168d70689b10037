// SPDX-License-Identifier: Apache-2.0
#include "agent/snapshot_methods.h"

#include <gtest/gtest.h>

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
  fleet::Snapshot snapshot;
  snapshot.sequence = 5;
  snapshot.fleet.backend = "sim";
  snapshot.fleet.gpus.resize(2);
  json ok = Parse(AnswerSnapshotMethod(status, {}, agent, &snapshot));
  EXPECT_EQ(ok["result"]["sequence"], 5);
  EXPECT_EQ(ok["result"]["gpus"].size(), 2u);

  // A recent window asks for each GPU's mean utilization from the history.
  fleet::UtilizationHistory history;
  snapshot.fleet.gpus[1].info.index = 1;
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
    EXPECT_NE(refused["error"]["message"].get<std::string>().find("recent_window_seconds"), std::string::npos);
  }
  // A series: the readings themselves, oldest first.
  recent.params = {{"series_seconds", 10}};
  json with_series = Parse(AnswerSnapshotMethod(recent, {}, agent, &snapshot, nullptr, &history));
  EXPECT_EQ(with_series["result"]["gpus"][1]["utilization_gpu_series"], json({0.8, 0.4}));
  EXPECT_EQ(with_series["result"]["gpus"][0]["utilization_gpu_series"], json::array());
  for (json bad : {json(0), json(601), json("10")}) {
    recent.params = {{"series_seconds", bad}};
    json refused = Parse(AnswerSnapshotMethod(recent, {}, agent, &snapshot, nullptr, &history));
    EXPECT_EQ(refused["error"]["code"], ipc::kErrorBadRequest) << bad;
  }

  ipc::Request unknown;
  unknown.method = "launch_missiles";
  EXPECT_EQ(Parse(AnswerSnapshotMethod(unknown, {}, agent, nullptr))["error"]["code"], ipc::kErrorUnknownMethod);
}

TEST(SnapshotMethodsTest, StatusMarksEachGpuWithItsLease) {
  ipc::Request status;
  status.method = "status";
  auto marks = std::make_shared<fleet::LeaseMarks>();
  marks->leases[1] = fleet::GpuLease{7, "alice", fleet::LeaseKind::kRun, false};
  AgentInfo agent;
  agent.lease_marks = [marks]() -> std::shared_ptr<const fleet::LeaseMarks> { return marks; };
  fleet::Snapshot snapshot;
  snapshot.fleet.gpus.resize(2);
  snapshot.fleet.gpus[1].info.index = 1;
  json r = Parse(AnswerSnapshotMethod(status, {}, agent, &snapshot));
  EXPECT_FALSE(r["result"]["gpus"][0].contains("lease"));
  EXPECT_EQ(r["result"]["gpus"][1]["lease"]["id"], 7);
  EXPECT_EQ(r["result"]["gpus"][1]["lease"]["kind"], "run");
}

}  // namespace
}  // namespace tarmac::agent
