// SPDX-License-Identifier: Apache-2.0
#include "ipc/protocol.h"

#include <gtest/gtest.h>

namespace tarmac::ipc {
namespace {

using nlohmann::json;

json Parse(const std::string& line) {
  EXPECT_FALSE(line.empty());
  EXPECT_EQ(line.back(), '\n');
  return json::parse(line);
}

TEST(ProtocolTest, DecodesAWellFormedRequest) {
  Decoded d = DecodeRequest(R"({"v":1,"id":"a7","method":"status","params":{"x":1}})");
  ASSERT_TRUE(d.ok);
  EXPECT_EQ(d.request.id, "a7");
  EXPECT_EQ(d.request.method, "status");
  EXPECT_EQ(d.request.params["x"], 1);
  Decoded again = DecodeRequest(EncodeRequest(d.request));
  ASSERT_TRUE(again.ok);
  EXPECT_EQ(again.request.method, "status");
}

TEST(ProtocolTest, MalformedRequestsGetStructuredErrors) {
  struct Case {
    const char* line;
    const char* code;
  };
  for (const Case& c : {Case{"garbage", kErrorBadRequest}, Case{"[1,2]", kErrorBadRequest},
                        Case{R"({"method":"status"})", kErrorBadRequest},
                        Case{R"({"v":2,"method":"status"})", kErrorUnsupportedVersion},
                        Case{R"({"v":1})", kErrorBadRequest},
                        Case{R"({"v":1,"method":"status","params":[1]})", kErrorBadRequest},
                        Case{R"({"v":1,"id":{"x":1},"method":"status"})", kErrorBadRequest},
                        Case{"\xff\xfe\x00", kErrorBadRequest}}) {
    Decoded d = DecodeRequest(c.line);
    EXPECT_FALSE(d.ok) << c.line;
    json r = Parse(d.error_response);
    EXPECT_EQ(r["ok"], false);
    EXPECT_EQ(r["error"]["code"], c.code) << c.line;
  }
  // The id is echoed when it could be read.
  json r = Parse(DecodeRequest(R"({"v":9,"id":42,"method":"status"})").error_response);
  EXPECT_EQ(r["id"], 42);
}

TEST(ProtocolTest, HelloReportsTheCallerAsTheKernelSaysAndStatusNeedsASample) {
  Request hello;
  hello.id = 1;
  hello.method = "hello";
  AgentInfo agent{"1.2.3", 99, "sim", 1700000000, {}, {}, {}};
  json r = Parse(Handle(hello, PeerCredentials{1234, 1000, 100}, agent, nullptr));
  EXPECT_EQ(r["ok"], true);
  EXPECT_EQ(r["result"]["peer"]["uid"], 1000);
  EXPECT_EQ(r["result"]["peer"]["pid"], 1234);
  EXPECT_EQ(r["result"]["agent_version"], "1.2.3");

  Request status;
  status.method = "status";
  json unavailable = Parse(Handle(status, {}, agent, nullptr));
  EXPECT_EQ(unavailable["error"]["code"], kErrorUnavailable);
  fleet::Snapshot snapshot;
  snapshot.sequence = 5;
  snapshot.fleet.backend = "sim";
  snapshot.fleet.gpus.resize(2);
  json ok = Parse(Handle(status, {}, agent, &snapshot));
  EXPECT_EQ(ok["result"]["sequence"], 5);
  EXPECT_EQ(ok["result"]["gpus"].size(), 2u);

  // A recent window asks for each GPU's mean utilization from the history.
  fleet::UtilizationHistory history;
  snapshot.fleet.gpus[1].info.index = 1;
  snapshot.taken_at_steady = std::chrono::steady_clock::now();
  history.Record(1, snapshot.taken_at_steady - std::chrono::seconds(2), 0.8);
  history.Record(1, snapshot.taken_at_steady, 0.4);
  Request recent;
  recent.method = "status";
  recent.params = {{"recent_window_seconds", 10}};
  json with_window = Parse(Handle(recent, {}, agent, &snapshot, nullptr, &history));
  EXPECT_DOUBLE_EQ(with_window["result"]["gpus"][1]["utilization_gpu_recent_ratio"].get<double>(), 0.6);
  EXPECT_FALSE(with_window["result"]["gpus"][0].contains("utilization_gpu_recent_ratio"));
  for (json bad : {json(0), json(601), json("10"), json(2.5)}) {
    recent.params = {{"recent_window_seconds", bad}};
    json refused = Parse(Handle(recent, {}, agent, &snapshot, nullptr, &history));
    EXPECT_EQ(refused["error"]["code"], kErrorBadRequest) << bad;
    EXPECT_NE(refused["error"]["message"].get<std::string>().find("recent_window_seconds"), std::string::npos);
  }

  Request unknown;
  unknown.method = "launch_missiles";
  EXPECT_EQ(Parse(Handle(unknown, {}, agent, nullptr))["error"]["code"], kErrorUnknownMethod);
}

TEST(ProtocolTest, ClientDecodesResultsAndErrors) {
  Result<json> ok = DecodeResponse(R"({"v":1,"id":1,"ok":true,"result":{"a":1}})");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok.value()["a"], 1);
  Result<json> busy = DecodeResponse(EncodeError(nullptr, kErrorBusy, "full"));
  EXPECT_EQ(busy.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(DecodeResponse("nope").status().code(), StatusCode::kCorruption);
}

}  // namespace
}  // namespace tarmac::ipc
