// SPDX-License-Identifier: Apache-2.0
//
// HttpServer on a real loopback socket, read by cpp-httplib's client: an
// answer with a shared head arrives whole (head, then body) however it is
// asked for: plain, over one keep-alive connection, compressed, or HEAD.
#include "http/server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>
#include <vector>

namespace tarmac::http {
namespace {

// A head larger than any socket buffer, with a recognisable pattern, so a
// short or reordered write shows.
std::shared_ptr<const std::string> BigHead() {
  std::string head;
  for (int i = 0; head.size() < 300 * 1024; ++i) head += "series_" + std::to_string(i) + " 1\n";
  return std::make_shared<const std::string>(std::move(head));
}

class HttpServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    HttpOptions options;
    options.listen = "127.0.0.1:0";
    server_ = std::make_unique<HttpServer>(options, &logger_);
    RouteTable routes;
    ASSERT_TRUE(
        routes
            .Add("/page",
                 [this] {
                   ++answers_;
                   return Response{200, "text/plain", "tail " + std::to_string(answers_) + "\n", head_};
                 })
            .ok());
    ASSERT_TRUE(routes.Add("/plain", [] { return Response{200, "text/plain", "just a body\n"}; }).ok());
    ASSERT_TRUE(server_->Start(std::move(routes)).ok());
  }

  Logger logger_{LogLevel::kOff};
  std::shared_ptr<const std::string> head_ = BigHead();
  std::atomic<int> answers_{0};
  std::unique_ptr<HttpServer> server_;
};

TEST_F(HttpServerTest, ASharedHeadIsServedWholeBeforeTheBody) {
  httplib::Client client("127.0.0.1", server_->port());
  client.set_decompress(false);
  for (int i = 1; i <= 3; ++i) {  // One keep-alive connection, several answers.
    httplib::Result res = client.Get("/page");
    ASSERT_TRUE(res) << httplib::to_string(res.error());
    EXPECT_EQ(res->status, 200);
    EXPECT_EQ(res->get_header_value("Content-Type"), "text/plain");
    EXPECT_EQ(res->get_header_value("Content-Encoding"), "");
    std::string expected = *head_ + "tail " + std::to_string(i) + "\n";
    EXPECT_EQ(res->get_header_value("Content-Length"), std::to_string(expected.size()));
    ASSERT_EQ(res->body.size(), expected.size());
    EXPECT_TRUE(res->body == expected) << "the answer differs from the head and body";
  }
  httplib::Result plain = client.Get("/plain");
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->body, "just a body\n");
}

TEST_F(HttpServerTest, ACompressedAnswerCarriesTheHeadToo) {
  httplib::Client client("127.0.0.1", server_->port());
  client.set_decompress(true);
  httplib::Result res = client.Get("/page", {{"Accept-Encoding", "gzip"}});
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->get_header_value("Content-Encoding"), "gzip");
  EXPECT_TRUE(res->body == *head_ + "tail 1\n") << res->body.size() << " bytes";
}

TEST_F(HttpServerTest, HeadSaysTheLengthAndSendsNoBody) {
  httplib::Client client("127.0.0.1", server_->port());
  httplib::Result res = client.Head("/page");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->get_header_value("Content-Length"),
            std::to_string(head_->size() + std::string("tail 1\n").size()));
  EXPECT_TRUE(res->body.empty());
  // The connection is still good for a GET after it.
  httplib::Result get = client.Get("/page");
  ASSERT_TRUE(get);
  EXPECT_EQ(get->body.size(), head_->size() + std::string("tail 2\n").size());
}

// A connection to the server that has sent `text` and then says nothing.
int SlowClient(int port, const std::string& text) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  if (!text.empty()) {
    EXPECT_EQ(::send(fd, text.data(), text.size(), MSG_NOSIGNAL), static_cast<ssize_t>(text.size()));
  }
  return fd;
}

// Everything `fd` gets until the server closes it (bounded by a 10 s
// receive timeout, a bound on a hang, not a figure).
std::string ReadToClose(int fd) {
  timeval tv{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::string all;
  char buf[4096];
  for (;;) {
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    all.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return all;
}

size_t CountOf(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

TEST_F(HttpServerTest, RegressionOversizedHeadsAreAnsweredAndClosedNotDropped) {
  // A 2 MB query: 414. A 1 MB header, and ten thousand small ones: 431.
  std::string long_query = "GET /plain?q=" + std::string(2 << 20, 'a') + " HTTP/1.1\r\nHost: x\r\n\r\n";
  std::string long_header = "GET /plain HTTP/1.1\r\nX-Big: " + std::string(1 << 20, 'b') + "\r\n\r\n";
  std::string many = "GET /plain HTTP/1.1\r\n";
  for (int i = 0; i < 10000; ++i) many += "X-H" + std::to_string(i) + ": v\r\n";
  many += "\r\n";
  for (auto [request, status] :
       {std::pair{long_query, "414"}, std::pair{long_header, "431"}, std::pair{many, "431"}}) {
    int fd = SlowClient(server_->port(), "");
    // Sent from a thread: the server stops reading once it has answered.
    std::thread sender([fd, text = request] { ::send(fd, text.data(), text.size(), MSG_NOSIGNAL); });
    std::string answer = ReadToClose(fd);
    sender.join();
    EXPECT_EQ(answer.rfind(std::string("HTTP/1.1 ") + status, 0), 0u) << answer.substr(0, 200);
  }
}

TEST_F(HttpServerTest, RegressionAGetWithABodyIsRefusedNotReadAsAnotherRequest) {
  // Content-Length and chunked at once, the body holding a second request:
  // one refusal, then the connection closes; nothing else is answered.
  std::string smuggle =
      "GET /plain HTTP/1.1\r\nHost: x\r\nContent-Length: 40\r\nTransfer-Encoding: chunked\r\n\r\n"
      "0\r\n\r\nGET /page HTTP/1.1\r\nHost: x\r\n\r\n";
  std::string answer = ReadToClose(SlowClient(server_->port(), smuggle));
  EXPECT_EQ(answer.rfind("HTTP/1.1 400", 0), 0u) << answer;
  EXPECT_EQ(CountOf(answer, "HTTP/1.1 "), 1u) << answer;
  EXPECT_EQ(answers_.load(), 0);  // /page was never served.
  answer = ReadToClose(
      SlowClient(server_->port(), "GET /plain HTTP/1.1\r\nHost: x\r\ncontent-length: 3\r\n\r\nabc"));
  EXPECT_EQ(answer.rfind("HTTP/1.1 400", 0), 0u) << answer;
  // Content-Length: 0 is no body: served.
  answer = ReadToClose(SlowClient(
      server_->port(), "GET /plain HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"));
  EXPECT_EQ(answer.rfind("HTTP/1.1 200", 0), 0u) << answer;
  EXPECT_NE(answer.find("just a body"), std::string::npos) << answer;
}

TEST(HttpServerSlowClientsTest, RegressionClientsThatNeverFinishAHeadHoldNoWorker) {
  // Two workers, and a head may take a minute: before, two slow clients
  // held both workers for that minute and every probe waited behind them.
  Logger logger{LogLevel::kOff};
  HttpOptions options;
  options.listen = "127.0.0.1:0";
  options.max_connections = 2;
  options.head_timeout = std::chrono::seconds(60);
  HttpServer server(options, &logger);
  RouteTable routes;
  ASSERT_TRUE(routes.Add("/health", [] { return Response{200, "text/plain", "ok\n"}; }).ok());
  ASSERT_TRUE(server.Start(std::move(routes)).ok());
  std::vector<int> slow;
  for (int i = 0; i < 50; ++i) slow.push_back(SlowClient(server.port(), i % 2 == 0 ? "GET /hea" : ""));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // Let them be accepted first.
  for (int i = 0; i < 5; ++i) {
    httplib::Client client("127.0.0.1", server.port());
    client.set_read_timeout(20, 0);  // A bound on a hang, not a figure.
    httplib::Result res = client.Get("/health");
    ASSERT_TRUE(res) << "probe " << i << ": " << httplib::to_string(res.error());
    EXPECT_EQ(res->body, "ok\n");
  }
  for (int fd : slow) ::close(fd);
  server.Stop();
}

TEST(HttpServerSlowClientsTest, OneAddressWaitsWithAtMostItsBudgetAndTheOldestGoesFirst) {
  Logger logger{LogLevel::kOff};
  HttpOptions options;
  options.listen = "127.0.0.1:0";
  options.head_timeout = std::chrono::seconds(60);
  HttpServer server(options, &logger);
  RouteTable routes;
  ASSERT_TRUE(routes.Add("/health", [] { return Response{200, "text/plain", "ok\n"}; }).ok());
  ASSERT_TRUE(server.Start(std::move(routes)).ok());
  int first = SlowClient(server.port(), "GET");
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  std::vector<int> more;
  for (size_t i = 0; i < kMaxWaitingPerAddress; ++i) more.push_back(SlowClient(server.port(), ""));
  // The first, oldest, was closed to make room: it reads the end.
  pollfd p{first, POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 20000), 1) << "the oldest waiting connection was never closed";
  char byte = 0;
  EXPECT_EQ(::recv(first, &byte, 1, 0), 0);
  httplib::Client client("127.0.0.1", server.port());
  client.set_read_timeout(20, 0);
  httplib::Result res = client.Get("/health");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->status, 200);
  ::close(first);
  for (int fd : more) ::close(fd);
  server.Stop();
}

}  // namespace
}  // namespace tarmac::http
