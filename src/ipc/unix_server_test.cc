// SPDX-License-Identifier: Apache-2.0
//
// The server against real sockets and misbehaving clients: garbage,
// oversized requests, half-open and silent connections, more clients than
// allowed, and many at once.
#include "ipc/unix_server.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "testutil/testutil.h"

namespace tarmac::ipc {
namespace {

using nlohmann::json;

class UnixServerTest : public ::testing::Test {
 protected:
  void StartServer(ServerOptions options) {
    options.socket_path = dir_.path() + "/api.sock";
    path_ = options.socket_path;
    server_ = std::make_unique<UnixServer>(
        options,
        [this](const std::string& line, const PeerCredentials& peer,
               const Reply& reply) -> std::optional<std::string> {
          Decoded d = DecodeRequest(line);
          if (!d.ok) return d.error_response;
          if (d.request.method == "later") {  // Answered by the test, through the Reply.
            std::lock_guard<std::mutex> lock(owed_mu_);
            owed_.push_back(reply);
            return std::nullopt;
          }
          if (d.request.method == "hold") {  // Holds the server's loop until Release().
            std::unique_lock<std::mutex> lock(hold_mu_);
            is_holding_ = true;
            hold_cv_.notify_all();
            hold_cv_.wait(lock, [this] { return is_released_; });
            return EncodeResult(d.request.id, json::object());
          }
          if (d.request.method != "hello") {
            return EncodeError(d.request.id, kErrorUnknownMethod, "only hello, later and hold here");
          }
          return EncodeResult(d.request.id,
                              json{{"peer", {{"pid", peer.pid}, {"uid", peer.uid}, {"gid", peer.gid}}}});
        },
        RealClock(), &logger_);
    ASSERT_TRUE(server_->Start().ok());
  }

  int Connect() {
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path_.c_str());
    EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    timeval tv{5, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    return fd;
  }

  // Reads one line, or "" when the server closed the connection.
  static std::string ReadLine(int fd) {
    std::string in;
    char c;
    while (recv(fd, &c, 1, 0) == 1) {
      if (c == '\n') return in;
      in += c;
    }
    return in;
  }

  static void Send(int fd, const std::string& text) {
    ASSERT_EQ(send(fd, text.data(), text.size(), MSG_NOSIGNAL), static_cast<ssize_t>(text.size()));
  }

  // The Replies of "later" requests, in order.
  std::vector<Reply> Owed() {
    std::lock_guard<std::mutex> lock(owed_mu_);
    return owed_;
  }
  Reply WaitOwed(size_t n) {
    for (int i = 0; i < 500 && Owed().size() < n; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    std::vector<Reply> owed = Owed();
    return owed.size() >= n ? owed[n - 1] : Reply();
  }

  void WaitHolding() {
    std::unique_lock<std::mutex> lock(hold_mu_);
    hold_cv_.wait(lock, [this] { return is_holding_; });
  }
  void Release() {
    std::lock_guard<std::mutex> lock(hold_mu_);
    is_released_ = true;
    hold_cv_.notify_all();
  }

  std::mutex owed_mu_;
  std::vector<Reply> owed_;
  std::mutex hold_mu_;
  std::condition_variable hold_cv_;
  bool is_holding_ = false;
  bool is_released_ = false;
  testing::TempDir dir_;
  std::string path_;
  Logger logger_{LogLevel::kOff};
  std::unique_ptr<UnixServer> server_;
};

TEST_F(UnixServerTest, AnswersHelloWithTheCallersCredentials) {
  StartServer({});
  Result<json> r = CallAgent(path_, Request{1, 7, "hello", json::object()}, std::chrono::seconds(5));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r.value()["peer"]["pid"], getpid());
  EXPECT_EQ(r.value()["peer"]["uid"], getuid());
}

TEST_F(UnixServerTest, GarbageGetsAnErrorAndTheConnectionStaysUsable) {
  StartServer({});
  int fd = Connect();
  Send(fd, "\x01\x02 not json\n{\"v\":1,\"method\":\"hello\"}\n");
  json first = json::parse(ReadLine(fd));
  EXPECT_EQ(first["error"]["code"], kErrorBadRequest);
  json second = json::parse(ReadLine(fd));
  EXPECT_EQ(second["ok"], true);
  close(fd);
}

TEST_F(UnixServerTest, OversizedRequestIsRefusedAndClosed) {
  ServerOptions options;
  options.max_request_bytes = 1024;
  StartServer(options);
  int fd = Connect();
  std::string big(8192, 'x');
  send(fd, big.data(), big.size(), MSG_NOSIGNAL);
  json r = json::parse(ReadLine(fd));
  EXPECT_EQ(r["error"]["code"], kErrorTooLarge);
  EXPECT_EQ(ReadLine(fd), "");  // Closed.
  close(fd);
  EXPECT_GE(server_->stats().too_large, 1);
  EXPECT_TRUE(CallAgent(path_, Request{1, 1, "hello", json::object()}, std::chrono::seconds(5)).ok());
}

TEST_F(UnixServerTest, SilentAndHalfOpenClientsAreDroppedWithoutBlockingOthers) {
  ServerOptions options;
  options.request_timeout = std::chrono::milliseconds(300);
  StartServer(options);
  int silent = Connect();
  int partial = Connect();
  Send(partial, "{\"v\":1,\"meth");
  // Others are served meanwhile.
  EXPECT_TRUE(CallAgent(path_, Request{1, 1, "hello", json::object()}, std::chrono::seconds(5)).ok());
  EXPECT_EQ(ReadLine(silent), "");  // Dropped after the timeout.
  EXPECT_EQ(ReadLine(partial), "");
  close(silent);
  close(partial);
  EXPECT_GE(server_->stats().timed_out, 2);
}

TEST_F(UnixServerTest, HalfClosedClientStillGetsItsAnswer) {
  StartServer({});
  int fd = Connect();
  Send(fd, "{\"v\":1,\"method\":\"hello\"}\n");
  shutdown(fd, SHUT_WR);
  json r = json::parse(ReadLine(fd));
  EXPECT_EQ(r["ok"], true);
  close(fd);
}

TEST_F(UnixServerTest, ClientsBeyondTheLimitAreToldBusy) {
  ServerOptions options;
  options.max_connections = 3;
  StartServer(options);
  std::vector<int> held;
  for (int i = 0; i < 3; ++i) held.push_back(Connect());
  // Make sure the server has accepted the three.
  for (int fd : held) {
    Send(fd, "{\"v\":1,\"method\":\"hello\"}\n");
    ASSERT_FALSE(ReadLine(fd).empty());
  }
  Result<json> r = CallAgent(path_, Request{1, 1, "hello", json::object()}, std::chrono::seconds(5));
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(r.status().message().find("at most 3 clients"), std::string::npos) << r.status().message();
  for (int fd : held) close(fd);
}

TEST_F(UnixServerTest, RegressionASlotFreedInTheSameWakeAsANewClientArrivesIsGivenToIt) {
  ServerOptions options;
  options.max_connections = 2;
  StartServer(options);
  int leaving = Connect();
  Send(leaving, "{\"v\":1,\"method\":\"hello\"}\n");
  ASSERT_FALSE(ReadLine(leaving).empty());
  int holder = Connect();
  Send(holder, "{\"v\":1,\"method\":\"hold\"}\n");
  WaitHolding();
  // While the server is busy, one client leaves and another arrives: the
  // server sees both in its next wake, and must close first, then accept.
  close(leaving);
  int newcomer = Connect();
  Release();
  ASSERT_FALSE(ReadLine(holder).empty());
  Send(newcomer, "{\"v\":1,\"method\":\"hello\"}\n");
  json r = json::parse(ReadLine(newcomer));
  EXPECT_EQ(r["ok"], true) << r.dump();
  close(holder);
  close(newcomer);
}

TEST_F(UnixServerTest, FiveHundredConcurrentClientsAreAllAnsweredOrRefused) {
  ServerOptions options;
  options.max_connections = 64;
  StartServer(options);
  std::atomic<int> answered{0};
  std::atomic<int> refused{0};
  std::atomic<int> broken{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 500; ++t) {
    threads.emplace_back([&] {
      Result<json> r = CallAgent(path_, Request{1, 1, "hello", json::object()}, std::chrono::seconds(10));
      if (r.ok()) {
        answered++;
      } else if (r.status().code() == StatusCode::kUnavailable) {
        refused++;
      } else {
        broken++;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(answered + refused, 500);
  EXPECT_EQ(broken, 0);
  EXPECT_GT(answered, 0);
  EXPECT_TRUE(CallAgent(path_, Request{1, 1, "hello", json::object()}, std::chrono::seconds(5)).ok());
}

TEST_F(UnixServerTest, StaleSocketIsReplacedButALiveOneIsNot) {
  StartServer({});
  // A second server on the same path must refuse while the first serves.
  UnixServer second(
      ServerOptions{path_},
      [](const std::string&, const PeerCredentials&, const Reply&) { return std::optional<std::string>(""); },
      RealClock(), &logger_);
  Status s = second.Start();
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("another agent"), std::string::npos);
  // A socket file with nobody behind it (a killed agent) is taken over.
  server_.reset();
  int stale = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path_.c_str());
  ASSERT_EQ(bind(stale, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  close(stale);  // Leaves the file, as SIGKILL does.
  UnixServer third(
      ServerOptions{path_},
      [](const std::string&, const PeerCredentials&, const Reply&) { return std::optional<std::string>(""); },
      RealClock(), &logger_);
  EXPECT_TRUE(third.Start().ok());
}

TEST_F(UnixServerTest, ADeferredAnswerArrivesWhenSentAndOutlivesTheIdleTimeout) {
  ServerOptions options;
  options.request_timeout = std::chrono::milliseconds(200);
  StartServer(options);
  std::thread later([this] {
    Reply reply = WaitOwed(1);
    ASSERT_TRUE(reply.IsOpen());
    // Longer than the idle timeout: a waiting caller is not cut off.
    std::this_thread::sleep_for(std::chrono::milliseconds(600));
    reply.Send(EncodeResult(json(3), json{{"state", "granted"}}));
    reply.Send(EncodeResult(json(3), json{{"state", "twice"}}));  // Sent once only.
    EXPECT_FALSE(reply.IsOpen());
  });
  Result<json> r = CallAgent(path_, Request{1, 3, "later", json::object()}, std::chrono::seconds(10));
  later.join();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r.value()["state"], "granted");
  EXPECT_EQ(server_->stats().deferred, 1);
  // Other callers are served meanwhile and after.
  EXPECT_TRUE(CallAgent(path_, Request{1, 4, "hello", json::object()}, std::chrono::seconds(5)).ok());
}

TEST_F(UnixServerTest, LinesAfterADeferredOneWaitTheirTurn) {
  StartServer({});
  int fd = Connect();
  Send(fd, EncodeRequest(Request{1, 1, "later", json::object()}) +
               EncodeRequest(Request{1, 2, "hello", json::object()}));
  Reply reply = WaitOwed(1);
  reply.Send(EncodeResult(json(1), json{{"first", true}}));
  Result<json> first = DecodeResponse(ReadLine(fd));
  Result<json> second = DecodeResponse(ReadLine(fd));
  close(fd);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first.value()["first"], true);
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_TRUE(second.value().contains("peer"));
}

TEST_F(UnixServerTest, ACallerThatHangsUpLeavesItsReplyClosed) {
  StartServer({});
  int fd = Connect();
  Send(fd, EncodeRequest(Request{1, 1, "later", json::object()}));
  Reply reply = WaitOwed(1);
  EXPECT_TRUE(reply.IsOpen());
  close(fd);
  for (int i = 0; i < 500 && reply.IsOpen(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_FALSE(reply.IsOpen());
  reply.Send(EncodeResult(json(1), json::object()));  // Nobody reads it; nothing breaks.
  EXPECT_TRUE(CallAgent(path_, Request{1, 4, "hello", json::object()}, std::chrono::seconds(5)).ok());
}

TEST_F(UnixServerTest, RepliesOwedWhenTheServerStopsAreClosed) {
  StartServer({});
  int fd = Connect();
  Send(fd, EncodeRequest(Request{1, 1, "later", json::object()}));
  Reply reply = WaitOwed(1);
  server_->Stop();
  EXPECT_FALSE(reply.IsOpen());
  reply.Send(EncodeResult(json(1), json::object()));
  EXPECT_EQ(ReadLine(fd), "");
  close(fd);
}

}  // namespace
}  // namespace tarmac::ipc
