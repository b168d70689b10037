// SPDX-License-Identifier: Apache-2.0
#include "http/server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <httplib.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <string_view>

#include "common/safe_file.h"
#include "http/access.h"
#include "http/gzip.h"
#include "http/tls.h"

namespace tarmac::http {
namespace {

using Clock = std::chrono::steady_clock;

// One connection as cpp-httplib reads and writes it: reads are buffered,
// bounded by the per-read timeout and by the current request's deadline,
// and every wait also ends when the server stops (`wake_fd` readable).
class ConnectionStream : public httplib::Stream {
 public:
  // `buffered`: what the head reader has read of the connection already
  // (a whole request head, perhaps more).
  ConnectionStream(int fd, TlsSession* tls, int wake_fd, const HttpOptions& options, std::string buffered)
      : fd_(fd),
        tls_(tls),
        wake_fd_(wake_fd),
        read_timeout_(options.read_timeout),
        write_timeout_(options.read_timeout),
        buf_(std::move(buffered)) {}

  // Whether bytes of a next (pipelined) request are here already.
  bool has_buffered() const { return begin_ < buf_.size(); }
  // The request now starting must be read whole within `limit`.
  void StartRequest(std::chrono::milliseconds limit) {
    deadline_ = Clock::now() + limit;
    is_past_deadline_ = false;
  }
  // Whether a read gave up at the deadline: the connection is then closed
  // (cpp-httplib answers 400 and would read on).
  bool is_past_deadline() const { return is_past_deadline_; }

  bool is_readable() const override {
    return has_buffered() || (tls_ != nullptr && tls_->has_pending()) || Wait(POLLIN, read_timeout_);
  }
  bool is_writable() const override { return Wait(POLLOUT, write_timeout_, /*is_write=*/true); }

  ssize_t read(char* ptr, size_t size) override {
    if (!has_buffered() && !Fill(read_timeout_)) return -1;
    size_t n = std::min(size, buf_.size() - begin_);
    std::memcpy(ptr, buf_.data() + begin_, n);
    begin_ += n;
    return static_cast<ssize_t>(n);
  }

  ssize_t write(const char* ptr, size_t size) override {
    if (tls_ != nullptr) {
      for (;;) {
        TlsWait wait = TlsWait::kNone;
        size_t n = tls_->Write(ptr, size, &wait);
        if (n > 0) return static_cast<ssize_t>(n);
        if (wait == TlsWait::kFailed) return -1;
        if (!Wait(wait == TlsWait::kRead ? POLLIN : POLLOUT, write_timeout_, /*is_write=*/true)) return -1;
      }
    }
    if (!is_writable()) return -1;
    for (;;) {
      ssize_t n = ::send(fd_, ptr, size, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      return n;
    }
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override { Address(::getpeername, ip, port); }
  void get_local_ip_and_port(std::string& ip, int& port) const override { Address(::getsockname, ip, port); }
  socket_t socket() const override { return fd_; }

 private:
  // Reads what has arrived into the buffer, waiting at most `timeout` (and
  // never past the deadline). False on timeout, end of stream or error.
  bool Fill(std::chrono::milliseconds timeout) {
    char chunk[4096];
    if (tls_ != nullptr) {
      // Decrypted bytes may be waiting already: read first, wait on want.
      for (;;) {
        TlsWait wait = TlsWait::kNone;
        size_t n = tls_->Read(chunk, sizeof chunk, &wait);
        if (n > 0) {
          buf_.assign(chunk, n);
          begin_ = 0;
          return true;
        }
        if (wait == TlsWait::kFailed || !Wait(wait == TlsWait::kWrite ? POLLOUT : POLLIN, timeout))
          return false;
      }
    }
    if (!Wait(POLLIN, timeout)) return false;
    for (;;) {
      ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      buf_.assign(chunk, static_cast<size_t>(n));
      begin_ = 0;
      return true;
    }
  }

  bool Wait(short events, std::chrono::milliseconds timeout, bool is_write = false) const {
    for (;;) {
      auto limit = timeout;
      bool is_deadline_bound = false;  // This wait ends at the request's deadline.
      if (!is_write) {
        auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline_ - Clock::now());
        if (left.count() <= 0) {
          is_past_deadline_ = true;
          return false;
        }
        if (left <= limit) {
          limit = left;
          is_deadline_bound = true;
        }
      }
      pollfd fds[2] = {{fd_, events, 0}, {wake_fd_, POLLIN, 0}};
      int ready = ::poll(fds, 2, static_cast<int>(limit.count()));
      if (ready < 0 && errno == EINTR) continue;
      if (ready == 0 && is_deadline_bound) is_past_deadline_ = true;
      if (ready <= 0 || (fds[1].revents & POLLIN) != 0) return false;
      return (fds[0].revents & (events | POLLHUP | POLLERR)) != 0;
    }
  }

  void Address(int (*get)(int, sockaddr*, socklen_t*), std::string& ip, int& port) const {
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    if (get(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return;
    char host[NI_MAXHOST];
    char serv[NI_MAXSERV];
    if (::getnameinfo(reinterpret_cast<sockaddr*>(&addr), len, host, sizeof host, serv, sizeof serv,
                      NI_NUMERICHOST | NI_NUMERICSERV) == 0) {
      ip = host;
      port = std::atoi(serv);
    }
  }

  int fd_;
  TlsSession* tls_;  // Null: plain HTTP.
  int wake_fd_;
  std::chrono::milliseconds read_timeout_;
  std::chrono::milliseconds write_timeout_;
  Clock::time_point deadline_ = Clock::now();
  mutable bool is_past_deadline_ = false;
  std::string buf_;
  size_t begin_ = 0;
};

// Whether `head` (what a connection has sent so far) holds a whole request
// line and headers.
bool IsWholeHead(const std::string& head) { return head.find("\r\n\r\n") != std::string::npos; }

// /health and /metrics are answered before other paths: a probe or a
// scrape never queues behind the API.
bool IsPriorityPath(const std::string& head) {
  size_t space = head.find(' ');
  if (space == std::string::npos) return false;
  std::string_view path = std::string_view(head).substr(space + 1);
  return path.rfind("/health", 0) == 0 || path.rfind("/metrics", 0) == 0;
}

std::string PeerAddress(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return "";
  char host[NI_MAXHOST];
  if (::getnameinfo(reinterpret_cast<sockaddr*>(&addr), len, host, sizeof host, nullptr, 0, NI_NUMERICHOST) !=
      0) {
    return "";
  }
  return host;
}

// A streamed answer's sink, as cpp-httplib gives it: each write goes to
// the socket as it is.
class StreamToSocket : public StreamSink {
 public:
  explicit StreamToSocket(httplib::DataSink& sink) : sink_(sink) {}
  bool Write(std::string_view bytes) override {
    return sink_.is_writable() && sink_.write(bytes.data(), bytes.size());
  }
  bool is_open() const override { return sink_.is_writable(); }

 private:
  httplib::DataSink& sink_;
};

// Answers a request with a route's handler: a stream to the socket, a body
// compressed already, a shared head and the body, or the body alone.
void Answer(const RouteTable::Handler& handler, const httplib::Request& req, httplib::Response& res) {
  Request asked;
  asked.path = req.path;
  asked.if_none_match = req.get_header_value("If-None-Match");
  asked.accepts_gzip = AcceptsGzip(req.get_header_value("Accept-Encoding"));
  asked.peer_address = req.remote_addr;
  asked.peer_port = req.remote_port;
  asked.local_port = req.local_port;
  for (const auto& [key, value] : req.params) asked.params[key] = value;
  Response r = handler(asked);
  res.status = r.status;
  for (const auto& [name, value] : r.headers) res.set_header(name, value);
  if (r.stream) {
    // The body ends with the connection. Not chunked: cpp-httplib
    // copies each chunk three times (twenty streams of 64 GPUs'
    // samples: megabytes a second through the allocator, which kept
    // the peaks); without a length, the bytes go from the batch all
    // streams share to the socket.
    res.set_header("Cache-Control", "no-store");
    res.set_header("Connection", "close");
    res.set_content_provider(r.content_type, [stream = std::move(r.stream)](size_t, httplib::DataSink& sink) {
      StreamToSocket to(sink);
      stream(to);
      return false;  // Not served to the end: Serve closes the connection, which ends the body.
    });
    return;
  }
  if (r.is_gzip) {
    // Compressed once already: a fixed-length answer, which cpp-httplib
    // sends as it is.
    res.set_header("Content-Encoding", "gzip");
    auto body = std::make_shared<std::string>(std::move(r.body));
    res.set_content_provider(body->size(), r.content_type,
                             [body](size_t offset, size_t length, httplib::DataSink& sink) {
                               return sink.write(body->data() + offset, length);
                             });
    return;
  }
  if (r.head != nullptr && !req.has_header("Accept-Encoding")) {
    // Uncompressed: the shared head is written in place, then the body.
    auto answer = std::make_shared<Response>(std::move(r));
    res.set_content_provider(answer->head->size() + answer->body.size(), answer->content_type,
                             [answer](size_t offset, size_t length, httplib::DataSink& sink) {
                               const std::string& head = *answer->head;
                               if (offset < head.size()) {
                                 return sink.write(head.data() + offset,
                                                   std::min(length, head.size() - offset));
                               }
                               return sink.write(answer->body.data() + (offset - head.size()), length);
                             });
    return;
  }
  if (r.head != nullptr) r.body.insert(0, *r.head);
  res.body = std::move(r.body);  // As set_content does, without copying a large page again.
  res.set_header("Content-Type", r.content_type);
}

}  // namespace

// cpp-httplib's request handling, fed by our connections.
class HttpServer::Engine : public httplib::Server {
 public:
  // cpp-httplib writes a content provider's answer only while it holds a
  // listening socket (else it is "shutting down" and writes nothing); the
  // socket it would hold is ours, which it never closes or reads.
  explicit Engine(int listen_fd) { svr_sock_ = listen_fd; }

  bool Process(httplib::Stream& stream, bool is_last, bool& is_closed) {
    return process_request(stream, is_last, is_closed, [&stream](httplib::Request& req) {
      stream.get_remote_ip_and_port(req.remote_addr, req.remote_port);
      stream.get_local_ip_and_port(req.local_addr, req.local_port);
    });
  }
};

HttpServer::HttpServer(HttpOptions options, Logger* logger) : options_(std::move(options)), logger_(logger) {}

HttpServer::~HttpServer() { Stop(); }

Status HttpServer::Bind() {
  if (listen_fd_ >= 0) return Status::OK();
  int port = 0;
  Status s = ParseListen(options_.listen, &host_, &port);
  if (!s.ok()) return s;
  if (!options_.auth_file.empty()) {
    Result<std::string> token =
        ReadForeignFile(options_.auth_file, {.max_bytes = 4096, .follow_final_link = true});
    if (!token.ok())
      return Status::FailedPrecondition("http: [http] auth: cannot read the token",
                                        token.status().ToString());
    token_ = token.value();
    while (!token_.empty() && std::isspace(static_cast<unsigned char>(token_.back()))) token_.pop_back();
    if (token_.size() < 16 || token_.find_first_of(" \t\r\n;,\"") != std::string::npos) {
      return Status::FailedPrecondition(
          fmt::format("http: [http] auth: {} must hold one token", options_.auth_file),
          "at least 16 characters, no spaces, quotes, commas or semicolons");
    }
  }
  if (options_.tls_cert.empty() != options_.tls_key.empty()) {
    return Status::FailedPrecondition(
        "http: [http] tls_cert and tls_key go together",
        options_.tls_cert.empty() ? "tls_cert is missing" : "tls_key is missing");
  }
  if (!options_.tls_cert.empty()) {
    Result<std::unique_ptr<TlsContext>> tls = TlsContext::Load(options_.tls_cert, options_.tls_key);
    if (!tls.ok()) return tls.status();
    tls_ = std::move(tls).value();
  }
  if (token_.empty() && !IsLoopbackHost(host_) && !options_.allow_anonymous) {
    return Status::FailedPrecondition(
        fmt::format(
            "http: {} is beyond loopback: anyone who reaches it would read every GPU, lease and process",
            options_.listen),
        "set [http] auth to a token file, or allow_anonymous = true, or listen on 127.0.0.1");
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  std::string service = std::to_string(port);
  int rc = ::getaddrinfo(host_.empty() ? nullptr : host_.c_str(), service.c_str(), &hints, &found);
  if (rc != 0) {
    return Status::FailedPrecondition(fmt::format("http: cannot listen on {}", options_.listen),
                                      ::gai_strerror(rc));
  }
  std::string why = "no address";
  for (addrinfo* a = found; a != nullptr && listen_fd_ < 0; a = a->ai_next) {
    int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    // SO_REUSEADDR only (no SO_REUSEPORT): a second agent must not share
    // the port and split the scrapes.
    int yes = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, kListenBacklog) == 0) {
      listen_fd_ = fd;
      sockaddr_storage bound{};
      socklen_t len = sizeof bound;
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
      port_ = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                                : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
      break;
    }
    why = std::strerror(errno);
    ::close(fd);
  }
  ::freeaddrinfo(found);
  if (listen_fd_ < 0) {
    return Status::FailedPrecondition(fmt::format("http: cannot listen on {}", options_.listen),
                                      why + " (is another agent or program using the address?)");
  }
  return Status::OK();
}

std::string HttpServer::url() const {
  std::string host = host_.empty() ? "0.0.0.0" : host_;
  if (host.find(':') != std::string::npos) host = "[" + host + "]";
  return fmt::format("{}://{}:{}/", tls_ != nullptr ? "https" : "http", host, port_);
}

Status HttpServer::Start(RouteTable routes) {
  Status s = Bind();
  if (!s.ok()) return s;
  routes_ = std::move(routes);
  if (::pipe2(wake_fds_, O_CLOEXEC) != 0 || ::pipe2(return_fds_, O_CLOEXEC | O_NONBLOCK) != 0) {
    return Status::IOError("http: pipe", std::strerror(errno));
  }
  engine_ = std::make_unique<Engine>(listen_fd_);
  engine_->set_keep_alive_max_count(100);
  engine_->set_payload_max_length(0);
  engine_->set_pre_routing_handler(
      [token = token_, is_tls = tls_ != nullptr](const httplib::Request& req, httplib::Response& res) {
        return CheckAccess(token, is_tls, req, res);
      });
  std::string paths;
  for (const auto& [path, handler] : routes_.routes()) {
    // The console's script modules are the page's to load, not named.
    if (!path.starts_with("/console/")) paths += (paths.empty() ? "" : ", ") + path;
    // Paths are literal, not patterns.
    std::string pattern;
    for (char c : path)
      pattern +=
          std::isalnum(static_cast<unsigned char>(c)) || c == '/' ? std::string(1, c) : std::string("\\") + c;
    engine_->Get(pattern, [handler = handler](const httplib::Request& req, httplib::Response& res) {
      Answer(handler, req, res);
    });
  }
  engine_->set_error_handler([paths](const httplib::Request&, httplib::Response& res) {
    // A route's own 404 keeps its answer; an unknown path names the routes.
    if (res.status == 404 && res.body.empty())
      res.set_content("not found: try " + paths + "\n", "text/plain");
  });
  acceptor_ = std::thread([this] { Accept(); });
  logger_->Log(LogLevel::kInfo, "http: listening on {}metrics", url());
  return Status::OK();
}

void HttpServer::Accept() {
  // The one thread that waits for request heads: a connection costs a
  // buffer and a poll slot here, and a worker only once a whole head has
  // arrived, so clients that trickle or say nothing never hold a worker.
  std::vector<Waiting> waiting;
  auto close_at = [&](size_t i) {
    Close(waiting[i]);
    waiting[i] = std::move(waiting.back());
    waiting.pop_back();
  };
  auto admit = [&](Waiting w) {
    // Budgets: at most kMaxWaitingPerAddress from one address and
    // kMaxWaiting in all; past them the oldest waiting one goes.
    size_t same = 0, oldest = waiting.size(), oldest_same = waiting.size();
    for (size_t i = 0; i < waiting.size(); ++i) {
      if (oldest == waiting.size() || waiting[i].since < waiting[oldest].since) oldest = i;
      if (waiting[i].peer != w.peer) continue;
      ++same;
      if (oldest_same == waiting.size() || waiting[i].since < waiting[oldest_same].since) oldest_same = i;
    }
    if (same >= kMaxWaitingPerAddress)
      close_at(oldest_same);
    else if (waiting.size() >= kMaxWaiting)
      close_at(oldest);
    waiting.push_back(std::move(w));
  };
  for (;;) {
    auto now = Clock::now();
    int timeout_ms = 1000;
    std::vector<pollfd> fds = {
        {listen_fd_, POLLIN, 0}, {wake_fds_[0], POLLIN, 0}, {return_fds_[0], POLLIN, 0}};
    for (const Waiting& w : waiting) {
      fds.push_back({w.fd, w.want, 0});
      auto left = std::chrono::ceil<std::chrono::milliseconds>(w.deadline - now).count();
      timeout_ms = static_cast<int>(std::clamp<int64_t>(left, 0, timeout_ms));
    }
    if (::poll(fds.data(), fds.size(), timeout_ms) < 0 && errno != EINTR) return;
    if ((fds[1].revents & POLLIN) != 0) break;
    // Reads first (the poll's slots match `waiting` as it was).
    std::vector<size_t> done;  // Indices to drop from `waiting`, ascending.
    for (size_t i = 0; i < waiting.size(); ++i) {
      short revents = fds[i + 3].revents;
      if (revents == 0) continue;
      Waiting& w = waiting[i];
      if (!ReadHead(w)) {
        Close(w);
        done.push_back(i);
      } else if (std::optional<std::string> refusal = HeadRefusal(w.head)) {
        Refuse(w, *refusal);  // Said, then closed: never left to a worker.
        done.push_back(i);
      } else if (IsWholeHead(w.head)) {
        Dispatch(std::move(w));
        done.push_back(i);
      }
    }
    for (auto it = done.rbegin(); it != done.rend(); ++it) {
      waiting[*it] = std::move(waiting.back());
      waiting.pop_back();
    }
    now = Clock::now();
    for (size_t i = waiting.size(); i-- > 0;) {
      if (waiting[i].deadline <= now) close_at(i);
    }
    if ((fds[2].revents & POLLIN) != 0) {
      char drain[256];
      while (::read(return_fds_[0], drain, sizeof drain) > 0) {
      }
      std::deque<Waiting> back;
      {
        MutexLock lock(&mu_);
        back.swap(returned_);
      }
      for (Waiting& w : back) {
        w.deadline = now + options_.keep_alive_timeout;
        w.since = now;
        admit(std::move(w));
      }
    }
    if ((fds[0].revents & POLLIN) != 0) {
      int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd >= 0) {
        // Answers go in several writes (head, body, stream chunks): without
        // this, Nagle's algorithm holds each small one back for the peer's
        // delayed ACK (40 ms on Linux).
        int one = 1;
        ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        // The handshake, like the head, must be done by head_timeout.
        Waiting w{fd, "", now + options_.head_timeout, now, PeerAddress(fd), 0};
        if (tls_ != nullptr) w.tls = tls_->Accept(fd);
        if (tls_ != nullptr && w.tls == nullptr) {
          ::close(fd);
        } else {
          admit(std::move(w));
        }
      }
    }
  }
  for (Waiting& w : waiting) Close(w);
}

bool HttpServer::ReadHead(Waiting& w) {
  char chunk[4096];
  if (w.tls == nullptr) {
    ssize_t n = ::recv(w.fd, chunk, sizeof chunk, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return true;
    if (n <= 0) return false;
    w.head.append(chunk, static_cast<size_t>(n));
    return true;
  }
  TlsWait wait = w.tls->Handshake();
  // Every decrypted byte there is now (a record can hold more than a
  // chunk), up to what a head may be.
  while (wait == TlsWait::kNone && w.head.size() <= kMaxHeadBytes) {
    size_t n = w.tls->Read(chunk, sizeof chunk, &wait);
    w.head.append(chunk, n);
  }
  if (wait == TlsWait::kFailed) return false;
  w.want = wait == TlsWait::kWrite ? POLLOUT : POLLIN;
  return true;
}

void HttpServer::Refuse(Waiting& w, const std::string& answer) {
  if (w.tls == nullptr) {
    ssize_t sent = ::send(w.fd, answer.data(), answer.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    (void)sent;  // Best effort: the connection closes either way.
  } else if (w.tls->is_established()) {
    TlsWait wait = TlsWait::kNone;
    w.tls->Write(answer.data(), answer.size(), &wait);
  }
  Close(w);
}

void HttpServer::Close(Waiting& w) {
  if (w.tls != nullptr) w.tls->Shutdown();
  ::close(w.fd);
}

void HttpServer::Dispatch(Waiting w) {
  bool is_priority = IsPriorityPath(w.head);
  MutexLock lock(&mu_);
  (is_priority ? priority_ : pending_).push_back(std::move(w));
  int queued = static_cast<int>(priority_.size() + pending_.size());
  if (idle_workers_ < queued && static_cast<int>(workers_.size()) < options_.max_connections) {
    workers_.emplace_back([this] { Work(); });
  } else {
    ready_.notify_one();
  }
}

void HttpServer::Work() {
  for (;;) {
    Waiting w;
    {
      MutexLock lock(&mu_);
      ++idle_workers_;
      lock.Wait(ready_,
                [this]() REQUIRES(mu_) { return is_stopping_ || !priority_.empty() || !pending_.empty(); });
      --idle_workers_;
      if (is_stopping_) return;
      std::deque<Waiting>& from = priority_.empty() ? pending_ : priority_;
      w = std::move(from.front());
      from.pop_front();
    }
    Serve(std::move(w));
  }
}

void HttpServer::Serve(Waiting w) {
  ConnectionStream stream(w.fd, w.tls.get(), wake_fds_[0], options_, std::move(w.head));
  auto head_limit = std::chrono::duration_cast<std::chrono::milliseconds>(options_.head_timeout);
  constexpr int kMaxRequestsPerConnection = 100;
  for (;;) {
    stream.StartRequest(head_limit);
    bool is_closed = false;
    ++w.served;
    bool is_served = engine_->Process(stream, w.served == kMaxRequestsPerConnection, is_closed);
    if (!is_served || is_closed || stream.is_past_deadline() || w.served >= kMaxRequestsPerConnection) break;
    if (stream.has_buffered()) continue;  // A pipelined request is here already.
    // Kept alive: its next request is waited for by the head reader.
    {
      MutexLock lock(&mu_);
      if (!is_stopping_) {
        returned_.push_back(Waiting{w.fd, "", {}, {}, std::move(w.peer), w.served, std::move(w.tls)});
        char byte = 1;
        (void)!::write(return_fds_[1], &byte, 1);
        return;
      }
    }
    break;
  }
  Close(w);
}

void HttpServer::Stop() {
  if (wake_fds_[1] >= 0) {
    char byte = 1;
    ssize_t ignored = ::write(wake_fds_[1], &byte, 1);
    (void)ignored;
  }
  if (acceptor_.joinable()) acceptor_.join();
  // The acceptor is gone: no worker is added from here on.
  std::vector<std::thread> workers;
  {
    MutexLock lock(&mu_);
    is_stopping_ = true;
    workers.swap(workers_);
  }
  ready_.notify_all();
  for (std::thread& t : workers) t.join();
  std::deque<Waiting> left;
  {
    MutexLock lock(&mu_);
    for (std::deque<Waiting>* q : {&pending_, &priority_, &returned_}) {
      for (Waiting& w : *q) left.push_back(std::move(w));
      q->clear();
    }
  }
  for (Waiting& w : left) Close(w);
  if (listen_fd_ >= 0) ::close(listen_fd_);
  listen_fd_ = -1;
  for (int* pipe : {wake_fds_, return_fds_}) {
    for (int i = 0; i < 2; ++i) {
      if (pipe[i] >= 0) ::close(pipe[i]);
      pipe[i] = -1;
    }
  }
}

}  // namespace tarmac::http
