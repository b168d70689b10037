// SPDX-License-Identifier: Apache-2.0
//
// An engine's answers through the one bounded client: an endless answer
// ends at the size limit, a trickled one at the timeout, each error naming
// the limit; an ordinary answer comes whole.
#include "backfill/engine_client.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <thread>

#include "testutil/http_stand_in.h"

namespace tarmac::backfill {
namespace {

// An engine that answers /endless without end, /trickle a byte every
// 100 ms, /ok at once.
class Engine : public testing::HttpStandIn {
 public:
  Engine() {
    server().Get("/endless", [](const httplib::Request&, httplib::Response& res) {
      res.set_chunked_content_provider("application/json", [](size_t, httplib::DataSink& sink) {
        static const std::string kChunk(64 * 1024, ' ');
        return sink.write(kChunk.data(), kChunk.size());
      });
    });
    server().Post("/trickle", [](const httplib::Request&, httplib::Response& res) {
      res.set_chunked_content_provider("application/json", [](size_t, httplib::DataSink& sink) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        return sink.write(" ", 1);
      });
    });
    server().Get("/ok", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(R"({"models":[]})", "application/json");
    });
    Start();
  }
};

TEST(EngineClientTest, RegressionAnEndlessAnswerEndsAtTheSizeLimit) {
  Engine engine;
  Result<HttpAnswer> r = EngineGet(engine.Url(), "/endless", std::chrono::seconds(60));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(r.status().message().find("over 64 MiB"), std::string::npos) << r.status().message();
}

TEST(EngineClientTest, RegressionATrickledAnswerEndsAtTheRequestsTimeout) {
  Engine engine;
  EngineConnection connection(engine.Url(), std::chrono::seconds(1));
  Result<HttpAnswer> r = connection.Post("/trickle", {{"prompt", "hi"}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDeadlineExceeded) << r.status().ToString();
}

TEST(EngineClientTest, AnOrdinaryAnswerComesWhole) {
  Engine engine;
  Result<HttpAnswer> r = EngineGet(engine.Url(), "/ok");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r.value().status, 200);
  EXPECT_EQ(r.value().body, R"({"models":[]})");
  EXPECT_EQ(r.value().content_type, "application/json");
}

}  // namespace
}  // namespace tarmac::backfill
