// SPDX-License-Identifier: Apache-2.0
//
// HttpServer over TLS ([http] tls_cert and tls_key) on a real loopback
// socket, with certificates made by the openssl program for each test and
// a real TLS client (cpp-httplib's, OpenSSL underneath) that verifies them.
#include "http/tls.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <thread>

#include "http/server.h"
#include "testutil/testutil.h"

namespace tarmac::http {
namespace {

// A self-signed certificate for 127.0.0.1 and its key, as PEM files in
// `dir`; returns false when openssl could not make them.
bool MakeCertificate(const testing::TempDir& dir, const std::string& name) {
  std::string command =
      "openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1 "
      "-addext subjectAltName=IP:127.0.0.1 -keyout '" +
      dir.path() + "/" + name + ".key' -out '" + dir.path() + "/" + name + ".crt' >/dev/null 2>&1";
  return std::system(command.c_str()) == 0;
}

class TlsServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(MakeCertificate(dir_, "a"));
    options_.listen = "127.0.0.1:0";
    options_.tls_cert = dir_.path() + "/a.crt";
    options_.tls_key = dir_.path() + "/a.key";
    options_.head_timeout = std::chrono::seconds(30);
  }
  void Start() {
    RouteTable routes;
    ASSERT_TRUE(routes.Add("/hello", [] { return Response{200, "text/plain", "hello over TLS\n"}; }).ok());
    ASSERT_TRUE(routes
                    .Add("/stream",
                         [] {
                           Response r{200, "text/event-stream", ""};
                           r.stream = [](StreamSink& sink) {
                             for (int i = 0; i < 3; ++i) sink.Write("data: " + std::to_string(i) + "\n\n");
                           };
                           return r;
                         })
                    .ok());
    server_ = std::make_unique<HttpServer>(options_, &logger_);
    Status s = server_->Start(std::move(routes));
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  std::unique_ptr<httplib::SSLClient> Client() {
    auto client = std::make_unique<httplib::SSLClient>("127.0.0.1", server_->port());
    client->set_ca_cert_path((dir_.path() + "/a.crt").c_str());
    client->enable_server_certificate_verification(true);
    client->set_connection_timeout(10);
    client->set_read_timeout(10);
    return client;
  }
  // A plain TCP connection to the server (-1 when refused).
  int Connect() {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(server_->port()));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      ::close(fd);
      return -1;
    }
    return fd;
  }
  // A TCP connection to the server that sends `bytes` and reads what comes
  // back until the server closes it (or 10 s pass).
  std::string RawExchange(const std::string& bytes) {
    int fd = Connect();
    EXPECT_GE(fd, 0);
    timeval tv{10, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    EXPECT_EQ(::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL), static_cast<ssize_t>(bytes.size()));
    std::string got;
    char buf[4096];
    for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) got.append(buf, static_cast<size_t>(n));
    ::close(fd);
    return got;
  }

  testing::TempDir dir_;
  Logger logger_{LogLevel::kOff};
  HttpOptions options_;
  std::unique_ptr<HttpServer> server_;
};

TEST_F(TlsServerTest, ServesHttpsThatAVerifyingClientAccepts) {
  Start();
  EXPECT_EQ(server_->url().rfind("https://127.0.0.1:", 0), 0u) << server_->url();
  EXPECT_TRUE(server_->is_tls());
  auto client = Client();
  client->set_keep_alive(true);
  // Three requests on one kept-alive connection: the session goes back to
  // the head reader and on to a worker each time.
  for (int i = 0; i < 3; ++i) {
    httplib::Result r = client->Get("/hello");
    ASSERT_TRUE(r) << httplib::to_string(r.error());
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "hello over TLS\n");
  }
  httplib::Result streamed = client->Get("/stream");
  ASSERT_TRUE(streamed) << httplib::to_string(streamed.error());
  EXPECT_EQ(streamed->body, "data: 0\n\ndata: 1\n\ndata: 2\n\n");
  EXPECT_EQ(client->Get("/nowhere")->status, 404);
}

TEST_F(TlsServerTest, PlainHttpToTheTlsPortGetsNoAnswerAndBlocksNobody) {
  Start();
  // Plain HTTP is not a TLS hello: the handshake fails, nothing is served.
  std::string answer = RawExchange("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(answer.find("hello over TLS"), std::string::npos);
  // Clients that connect and say nothing (no hello) hold no worker and do
  // not stall the handshakes of others.
  std::vector<int> silent;
  for (int i = 0; i < 20; ++i) {
    int fd = Connect();
    ASSERT_GE(fd, 0);
    silent.push_back(fd);
  }
  // Half a hello: a client stuck mid-handshake.
  ASSERT_EQ(::send(silent[0], "\x16\x03\x01\x02\x00\x01", 6, MSG_NOSIGNAL), 6);
  auto client = Client();
  httplib::Result r = client->Get("/hello");
  ASSERT_TRUE(r) << httplib::to_string(r.error());
  EXPECT_EQ(r->body, "hello over TLS\n");
  for (int fd : silent) ::close(fd);
}

TEST_F(TlsServerTest, AClientThatDoesNotTrustTheCertificateRefusesIt) {
  ASSERT_TRUE(MakeCertificate(dir_, "other"));
  Start();
  httplib::SSLClient client("127.0.0.1", server_->port());
  client.set_ca_cert_path((dir_.path() + "/other.crt").c_str());
  client.enable_server_certificate_verification(true);
  httplib::Result r = client.Get("/hello");
  EXPECT_FALSE(r);
  EXPECT_EQ(r.error(), httplib::Error::SSLServerVerification);
}

TEST_F(TlsServerTest, TheLoginCookieIsSecureOverTls) {
  options_.auth_file = dir_.Write("token", "0123456789abcdef-token\n");
  Start();
  auto client = Client();
  httplib::Result refused = client->Get("/hello");
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 401);
  httplib::Result login = client->Get("/api/v1/login", {{"Authorization", "Bearer 0123456789abcdef-token"}});
  ASSERT_TRUE(login);
  EXPECT_EQ(login->status, 200);
  std::string cookie = login->get_header_value("Set-Cookie");
  EXPECT_NE(cookie.find("HttpOnly; SameSite=Strict; Secure"), std::string::npos) << cookie;
}

TEST_F(TlsServerTest, BadCertificatesAndKeysStopTheStartSayingWhich) {
  ASSERT_TRUE(MakeCertificate(dir_, "other"));
  auto bind = [&](const std::string& cert, const std::string& key) {
    HttpOptions o = options_;
    o.tls_cert = cert;
    o.tls_key = key;
    HttpServer server(o, &logger_);
    return server.Bind();
  };
  Status mismatched = bind(dir_.path() + "/a.crt", dir_.path() + "/other.key");
  EXPECT_EQ(mismatched.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(mismatched.ToString().find("is not the key of tls_cert"), std::string::npos)
      << mismatched.ToString();
  Status missing = bind(dir_.path() + "/none.crt", dir_.path() + "/a.key");
  EXPECT_NE(missing.ToString().find("tls_cert: cannot read it"), std::string::npos) << missing.ToString();
  Status garbage = bind(dir_.Write("garbage.crt", "not a certificate\n"), dir_.path() + "/a.key");
  EXPECT_NE(garbage.ToString().find("no PEM certificate"), std::string::npos) << garbage.ToString();
  Status key_as_cert = bind(dir_.path() + "/a.crt", dir_.path() + "/a.crt");
  EXPECT_NE(key_as_cert.ToString().find("no PEM private key"), std::string::npos) << key_as_cert.ToString();
  Status alone = bind(dir_.path() + "/a.crt", "");
  EXPECT_NE(alone.ToString().find("go together"), std::string::npos) << alone.ToString();
  Status relative = bind("a.crt", "a.key");
  EXPECT_NE(relative.ToString().find("absolute path"), std::string::npos) << relative.ToString();
  // A FIFO is never opened for reading (it would block the start).
  std::string fifo = dir_.path() + "/fifo.crt";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  Status blocked = bind(fifo, dir_.path() + "/a.key");
  EXPECT_NE(blocked.ToString().find("FIFO"), std::string::npos) << blocked.ToString();
  EXPECT_TRUE(bind(dir_.path() + "/a.crt", dir_.path() + "/a.key").ok());
}

}  // namespace
}  // namespace tarmac::http
