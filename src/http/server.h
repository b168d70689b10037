// SPDX-License-Identifier: Apache-2.0
//
// The agent's HTTP endpoint, read-only: it serves the GET routes of a
// RouteTable that modules register into (the agent: /metrics, /health, the
// web console and its /api/v1/, agent/http_routes.h, agent/web_routes.h).
// Loopback by default; beyond loopback only with a token (`auth_file`:
// every path but /health and /metrics asks for it) or `allow_anonymous`.
//
// HTTP itself (request parsing, responses, keep-alive) is cpp-httplib's;
// connections are ours, so that no client can hold the endpoint:
//  - the listen backlog is kListenBacklog, so a burst of scrapers waits in
//    the kernel instead of being refused;
//  - one thread waits for every connection's request head (line and
//    headers), non-blocking: a client that trickles or says nothing costs
//    a poll slot and a buffer, never a worker. A head must arrive whole
//    within `head_timeout` of the connection (an idle keep-alive
//    connection's next one within `keep_alive_timeout`); at most
//    kMaxWaitingPerAddress connections of one address and kMaxWaiting in
//    all wait for theirs, and past either the oldest waiting one is closed;
//  - a whole head goes to a worker, from a pool that grows to
//    `max_connections`; /health and /metrics are taken before other paths,
//    so a probe or a scrape never queues behind the API or slow clients. A
//    client silent for `read_timeout` mid-body or mid-answer is dropped;
//  - line and headers are capped by cpp-httplib (8 KiB each), bodies are
//    refused, and keep-alive is limited. Methods other than GET and HEAD get
//    405; unknown paths 404.
//
// Thread safety: Bind/Start/Stop from one thread; handlers run on workers.
#pragma once

#include <poll.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/log.h"
#include "common/mutex.h"
#include "common/result.h"
#include "http/head_refusal.h"

namespace tarmac::http {

class TlsContext;
class TlsSession;

inline constexpr int kListenBacklog = 1024;
// Connections waiting for their request head: from one address, in all.
inline constexpr size_t kMaxWaitingPerAddress = 256;
inline constexpr size_t kMaxWaiting = 2048;

struct HttpOptions {
  std::string listen = "127.0.0.1:9477";  // HOST:PORT; port 0 picks a free one.
  int max_connections = 128;              // Connections served at once.
  // A client silent this long mid-request is dropped.
  std::chrono::seconds read_timeout{2};
  // A request's line and headers must all arrive within this of its start.
  std::chrono::seconds head_timeout{5};
  // An idle keep-alive connection is closed after this.
  std::chrono::seconds keep_alive_timeout{2};
  // [http] auth: a file holding the token a caller shows (bearer header,
  // or the cookie /api/v1/login sets) for every path but /health and
  // /metrics. Empty: no token asked.
  std::string auth_file;
  // [http] allow_anonymous: serve the console and API beyond loopback
  // without a token. Without it (or auth_file) such a listen is refused.
  bool allow_anonymous = false;
  // [http] tls_cert and tls_key: PEM files (the certificate, then its
  // chain; an unencrypted key). Both set: HTTPS only. Neither: plain HTTP.
  std::string tls_cert;
  std::string tls_key;

  bool operator==(const HttpOptions&) const = default;
};

// What a handler is asked: the path and the query's parameters (decoded;
// the last value of a repeated one).
struct Request {
  std::string path;
  std::map<std::string, std::string> params;
  std::string if_none_match;  // The If-None-Match header (an ETag), or empty.
  bool accepts_gzip = false;  // Its Accept-Encoding admits gzip (http/gzip.h).
  // The connection: the client's address and port, and ours (for
  // http/peer_identity.h, when a limit counts per client).
  std::string peer_address;
  int peer_port = 0;
  int local_port = 0;
  // The value of `key`, or `fallback` when absent.
  std::string Param(const std::string& key, const std::string& fallback = "") const;
};

// Where a streamed answer writes (Response::stream).
class StreamSink {
 public:
  virtual ~StreamSink() = default;
  // False once the client is gone, too slow (a write blocked past the
  // read timeout) or the server stops: the stream then returns.
  virtual bool Write(std::string_view bytes) = 0;
  // False once the server is stopping.
  virtual bool is_open() const = 0;
};

// One answer to a GET. Its body is `*head` (when set) followed by `body`.
// `head` is shared, not copied: a large page rendered once (the /metrics
// page of the last sample) is written from where it lies to every client
// that sends no Accept-Encoding; for one that does, head and body are
// joined into one answer, compressed when it accepts gzip or br.
struct Response {
  int status = 200;
  std::string content_type = "text/plain";
  std::string body;
  std::shared_ptr<const std::string> head = nullptr;
  // When set, the answer is a stream (server-sent events): the headers go
  // at once (no length, not chunked: the body ends when the connection
  // closes, as it does once `stream` returns), and `stream` runs on the
  // worker writing to the sink until it returns. `body` is then not sent.
  std::function<void(StreamSink&)> stream = nullptr;
  // Extra header lines ("Set-Cookie"), in order.
  std::vector<std::pair<std::string, std::string>> headers = {};
  // `body` is gzip already (an asset compressed once, for a request that
  // accepts_gzip): sent as is, with Content-Encoding: gzip.
  bool is_gzip = false;
};

// The paths served, each with its handler, in the order added.
class RouteTable {
 public:
  using Handler = std::function<Response(const Request&)>;
  // kInvalidArgument for a path that is taken or does not start with '/'.
  Status Add(std::string path, Handler handler);
  // A handler that needs nothing of the request.
  Status Add(std::string path, std::function<Response()> handler);
  const std::vector<std::pair<std::string, Handler>>& routes() const { return routes_; }
  // Replaces each route's handler with `wrap(path, handler)`: one edit for
  // every answer of a kind (the web's redaction, agent/web_redaction.h).
  void WrapEach(const std::function<Handler(const std::string& path, Handler handler)>& wrap);

 private:
  std::vector<std::pair<std::string, Handler>> routes_;
};

// Splits "host:port" ("[::1]:9477" for IPv6). kInvalidArgument otherwise.
Status ParseListen(const std::string& listen, std::string* host, int* port);

// Whether `host` (from ParseListen) reaches only this machine: 127.0.0.0/8,
// ::1, localhost. An empty host (every address) is not loopback.
bool IsLoopbackHost(const std::string& host);

// The paths a token never guards: Prometheus and health probes, and the
// console's assets (the page's shell, script and style: no data).
bool IsOpenPath(const std::string& path);

class HttpServer {
 public:
  HttpServer(HttpOptions options, Logger* logger);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds the address (nothing is served yet). kInvalidArgument for a
  // malformed address; kFailedPrecondition when it is in use or not local,
  // when it is beyond loopback with neither auth_file nor allow_anonymous,
  // or when auth_file cannot be read or holds no token.
  Status Bind();
  // Serves `routes` (binds first when Bind was not called); logs the address.
  Status Start(RouteTable routes);
  void Stop();
  int port() const { return port_; }
  // "http://HOST:PORT/" ("https://" with TLS) once bound ("[::1]" for IPv6; "0.0.0.0" for every
  // address).
  std::string url() const;
  bool is_tls() const { return tls_ != nullptr; }
  // Whether a token is asked (auth_file).
  bool is_token_required() const { return !token_.empty(); }

 private:
  class Engine;
  // A connection waiting for (or holding) a whole request head.
  struct Waiting {
    int fd = -1;
    std::string head;  // Read so far.
    std::chrono::steady_clock::time_point deadline;
    std::chrono::steady_clock::time_point since;
    std::string peer;                           // Its address, for the per-address budget.
    int served = 0;                             // Requests answered on it.
    std::shared_ptr<TlsSession> tls = nullptr;  // HTTPS: its session.
    short want = POLLIN;                        // What to poll it for (POLLOUT mid-handshake).
  };
  // Reads what has arrived of `w`'s head (the handshake first, for TLS),
  // never blocking. False when the connection is closed or broken.
  bool ReadHead(Waiting& w);
  static void Close(Waiting& w);
  // Writes `answer` (short: it fits the socket's buffer) and closes.
  static void Refuse(Waiting& w, const std::string& answer);
  void Accept();
  // Queues a connection whose head is whole for a worker.
  void Dispatch(Waiting w) EXCLUDES(mu_);
  void Work();
  void Serve(Waiting w);

  HttpOptions options_;
  std::string token_;                // From options_.auth_file; empty: none asked.
  std::unique_ptr<TlsContext> tls_;  // From tls_cert and tls_key; null: plain HTTP.
  RouteTable routes_;
  Logger* logger_;
  std::unique_ptr<Engine> engine_;
  std::string host_;
  int listen_fd_ = -1;
  int wake_fds_[2] = {-1, -1};
  int return_fds_[2] = {-1, -1};  // Written when a kept-alive connection is given back.
  int port_ = 0;
  std::thread acceptor_;

  Mutex mu_;
  std::condition_variable_any ready_;
  std::deque<Waiting> pending_ GUARDED_BY(mu_);   // Whole heads, waiting for a worker.
  std::deque<Waiting> priority_ GUARDED_BY(mu_);  // The same, for /health and /metrics.
  std::deque<Waiting> returned_ GUARDED_BY(mu_);  // Kept alive: back to the head reader.
  std::vector<std::thread> workers_ GUARDED_BY(mu_);
  int idle_workers_ GUARDED_BY(mu_) = 0;
  bool is_stopping_ GUARDED_BY(mu_) = false;
};

}  // namespace tarmac::http
