// SPDX-License-Identifier: Apache-2.0
#include "ipc/protocol.h"

#include <gtest/gtest.h>

#include "testutil/response_line.h"

namespace tarmac::ipc {
namespace {

using nlohmann::json;

json Parse(const std::string& line) { return testing::ParseResponseLine(line); }

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
  for (const Case& c :
       {Case{"garbage", kErrorBadRequest}, Case{"[1,2]", kErrorBadRequest},
        Case{R"({"method":"status"})", kErrorBadRequest},
        Case{R"({"v":2,"method":"status"})", kErrorUnsupportedVersion}, Case{R"({"v":1})", kErrorBadRequest},
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
