// SPDX-License-Identifier: Apache-2.0
//
// HttpServer's request parameters, streamed answers and the rule for
// listening beyond loopback, on a real loopback socket.
#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "http/server.h"
#include "testutil/testutil.h"

namespace tarmac::http {
namespace {

TEST(ListenRuleTest, LoopbackIsOnlyThisMachine) {
  for (const char* host : {"127.0.0.1", "127.1.2.3", "::1", "localhost"})
    EXPECT_TRUE(IsLoopbackHost(host)) << host;
  for (const char* host : {"", "0.0.0.0", "::", "10.0.0.7", "128.0.0.1", "127.0.0.1.evil", "localhost."}) {
    EXPECT_FALSE(IsLoopbackHost(host)) << host;
  }
  EXPECT_TRUE(IsOpenPath("/health"));
  EXPECT_TRUE(IsOpenPath("/metrics"));
  EXPECT_FALSE(IsOpenPath("/api/v1/status"));
  EXPECT_FALSE(IsOpenPath("/metrics/"));
  // The console's modules, one level under /console/, and nothing else there.
  EXPECT_TRUE(IsOpenPath("/console/main.js"));
  EXPECT_FALSE(IsOpenPath("/console/"));
  EXPECT_FALSE(IsOpenPath("/console/x/main.js"));
  EXPECT_FALSE(IsOpenPath("/console/main.json"));
  EXPECT_FALSE(IsOpenPath("/console.js"));
}

TEST(ListenRuleTest, BeyondLoopbackNeedsATokenOrAllowAnonymous) {
  Logger logger{LogLevel::kOff};
  HttpOptions options;
  options.listen = "0.0.0.0:0";
  HttpServer refused(options, &logger);
  Status s = refused.Bind();
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.ToString().find("allow_anonymous"), std::string::npos) << s.ToString();
  options.allow_anonymous = true;
  HttpServer anonymous(options, &logger);
  EXPECT_TRUE(anonymous.Bind().ok());
  EXPECT_FALSE(anonymous.is_token_required());

  testing::TempDir dir;
  options.allow_anonymous = false;
  options.auth_file = dir.path() + "/missing";
  HttpServer missing(options, &logger);
  EXPECT_EQ(missing.Bind().code(), StatusCode::kFailedPrecondition);
  for (const char* bad : {"", "short\n", "has a space in it, long enough\n", "semi;colon-0123456789abcdef"}) {
    options.auth_file = dir.Write("token", bad);
    HttpServer weak(options, &logger);
    EXPECT_EQ(weak.Bind().code(), StatusCode::kFailedPrecondition) << bad;
  }
  options.auth_file = dir.Write("token", "0123456789abcdef-good\n");
  HttpServer guarded(options, &logger);
  EXPECT_TRUE(guarded.Bind().ok());
  EXPECT_TRUE(guarded.is_token_required());
  EXPECT_EQ(guarded.url().rfind("http://0.0.0.0:", 0), 0u) << guarded.url();
}

class StreamServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    HttpOptions options;
    options.listen = "127.0.0.1:0";
    server_ = std::make_unique<HttpServer>(options, &logger_);
    RouteTable routes;
    ASSERT_TRUE(
        routes
            .Add("/echo",
                 [](const Request& asked) {
                   return Response{200, "text/plain", asked.Param("name", "(none)") + " " + asked.path};
                 })
            .ok());
    // Three events, then the answer ends.
    ASSERT_TRUE(routes
                    .Add("/three",
                         [] {
                           Response r{200, "text/event-stream", "ignored"};
                           r.stream = [](StreamSink& sink) {
                             for (int i = 1; i <= 3; ++i) {
                               if (!sink.Write("data: " + std::to_string(i) + "\n\n")) return;
                             }
                           };
                           return r;
                         })
                    .ok());
    // Writes until the server stops or the client leaves.
    ASSERT_TRUE(routes
                    .Add("/forever",
                         [this] {
                           Response r{200, "text/event-stream", ""};
                           r.stream = [this](StreamSink& sink) {
                             ++streaming_;
                             while (sink.is_open() && sink.Write("data: x\n\n")) {
                               std::this_thread::sleep_for(std::chrono::milliseconds(20));
                             }
                             --streaming_;
                           };
                           return r;
                         })
                    .ok());
    ASSERT_TRUE(server_->Start(std::move(routes)).ok());
  }

  Logger logger_{LogLevel::kOff};
  std::atomic<int> streaming_{0};
  std::unique_ptr<HttpServer> server_;
};

TEST_F(StreamServerTest, AHandlerReadsTheQueryParameters) {
  httplib::Client client("127.0.0.1", server_->port());
  httplib::Result r = client.Get("/echo?name=a%20b&other=1");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body, "a b /echo");
  r = client.Get("/echo");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body, "(none) /echo");
}

TEST_F(StreamServerTest, AStreamIsSentUncompressedAsItIsWrittenAndEndsWithTheConnection) {
  httplib::Client client("127.0.0.1", server_->port());
  std::vector<std::string> chunks;
  httplib::Result r =
      client.Get("/three", {{"Accept-Encoding", "gzip"}}, [&](const char* data, size_t length) {
        chunks.emplace_back(data, length);
        return true;
      });
  ASSERT_TRUE(r);
  EXPECT_EQ(r->get_header_value("Content-Type"), "text/event-stream");
  // No length and no chunks: the body is what the stream wrote, up to the
  // connection's end.
  EXPECT_EQ(r->get_header_value("Transfer-Encoding"), "");
  EXPECT_EQ(r->get_header_value("Content-Length"), "");
  EXPECT_EQ(r->get_header_value("Connection"), "close");
  // Events must reach the browser as written: never held in a compressor.
  EXPECT_EQ(r->get_header_value("Content-Encoding"), "");
  EXPECT_EQ(r->get_header_value("Cache-Control"), "no-store");
  std::string all;
  for (const std::string& c : chunks) all += c;
  EXPECT_EQ(all, "data: 1\n\ndata: 2\n\ndata: 3\n\n");
}

TEST_F(StreamServerTest, StopEndsStreamsThatWouldRunForever) {
  std::atomic<int> received{0};
  std::thread reader([&] {
    httplib::Client client("127.0.0.1", server_->port());
    client.Get("/forever", [&](const char*, size_t) {
      ++received;
      return true;
    });
  });
  for (int i = 0; i < 500 && received < 3; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_GE(received, 3);
  server_->Stop();  // Returns only once every worker has.
  EXPECT_EQ(streaming_, 0);
  reader.join();
}

TEST_F(StreamServerTest, AClientThatLeavesEndsItsStream) {
  {
    httplib::Client client("127.0.0.1", server_->port());
    int received = 0;
    client.Get("/forever", [&](const char*, size_t) { return ++received < 3; });  // false: hang up.
  }
  for (int i = 0; i < 500 && streaming_ > 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(streaming_, 0);
}

}  // namespace
}  // namespace tarmac::http
