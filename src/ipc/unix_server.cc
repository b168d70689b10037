// SPDX-License-Identifier: Apache-2.0
#include "ipc/unix_server.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <list>
#include <vector>

#include "common/clock.h"

namespace tarmac::ipc {

using std::chrono::steady_clock;

struct ServerConnection {
  int fd = -1;
  PeerCredentials peer;
  std::string in;
  std::string out;
  steady_clock::time_point last_activity;
  bool close_after_flush = false;
  bool is_peer_closed = false;           // The client shut down its side.
  std::shared_ptr<Reply::Slot> pending;  // An answer owed later, while set.
};

namespace {

using Connection = ServerConnection;

// Reads what the socket holds into `c.in` (stopping just past the size
// limit); true when the peer is gone.
bool Receive(Connection& c, steady_clock::time_point now, int64_t max_request_bytes) {
  char buf[16384];
  for (;;) {
    ssize_t n = ::recv(c.fd, buf, sizeof buf, 0);
    if (n > 0) {
      c.in.append(buf, static_cast<size_t>(n));
      c.last_activity = now;
      if (static_cast<int64_t>(c.in.size()) > max_request_bytes + 1) return false;
      continue;
    }
    if (n == 0) c.is_peer_closed = true;  // Half-closed: answer what came, then close.
    if (n < 0 && errno == EINTR) continue;
    return n < 0 && errno != EAGAIN && errno != EWOULDBLOCK;
  }
}

// Marks an owed answer as never to be read.
void Abandon(Connection& c) {
  if (!c.pending) return;
  MutexLock lock(&c.pending->mu);
  c.pending->is_open = false;
  c.pending.reset();
}

// Moves a deferred answer that has come into the output; true when one did.
bool TakeAnswer(Connection& c, steady_clock::time_point now) {
  if (!c.pending) return false;
  MutexLock lock(&c.pending->mu);
  if (!c.pending->line) return false;
  c.out += *c.pending->line;
  c.pending->is_open = false;
  c.last_activity = now;
  c.pending.reset();
  return true;
}

Result<sockaddr_un> Address(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof addr.sun_path) {
    return Status::InvalidArgument(fmt::format("socket path must be 1 to {} bytes", sizeof addr.sun_path - 1),
                                   path);
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  return addr;
}

// Writes what the socket takes now; false when the peer is gone.
bool Flush(Connection& c) {
  while (!c.out.empty()) {
    ssize_t n = ::send(c.fd, c.out.data(), c.out.size(), MSG_NOSIGNAL);
    if (n > 0) {
      c.out.erase(0, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    if (n < 0 && errno == EINTR) continue;
    return false;
  }
  return true;
}

}  // namespace

UnixServer::UnixServer(ServerOptions options, Handler handler, Clock* clock, Logger* logger)
    : options_(std::move(options)), handler_(std::move(handler)), clock_(clock), logger_(logger) {}

UnixServer::~UnixServer() { Stop(); }

bool IsServing(const std::string& socket_path) {
  Result<sockaddr_un> addr = Address(socket_path);
  if (!addr.ok()) return false;
  int probe = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (probe < 0) return false;
  bool is_live = ::connect(probe, reinterpret_cast<const sockaddr*>(&addr.value()), sizeof(sockaddr_un)) == 0;
  ::close(probe);
  return is_live;
}

Status UnixServer::Start() {
  Result<sockaddr_un> addr = Address(options_.socket_path);
  if (!addr.ok()) return addr.status();
  // A socket file may be left by an agent that was killed. If something
  // answers on it, another agent is running; otherwise it is stale.
  struct stat st {};
  if (::lstat(options_.socket_path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) {
      return Status::FailedPrecondition(fmt::format("{} exists and is not a socket", options_.socket_path));
    }
    if (IsServing(options_.socket_path)) {
      return Status::FailedPrecondition(
          fmt::format("another agent is serving {}; stop it first", options_.socket_path));
    }
    logger_->Log(LogLevel::kInfo, "api: removing stale socket {}", options_.socket_path);
    ::unlink(options_.socket_path.c_str());
  }
  listen_fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (listen_fd_ < 0) return Status::Unavailable("api: socket", std::strerror(errno));
  if (::bind(listen_fd_, reinterpret_cast<const sockaddr*>(&addr.value()), sizeof(sockaddr_un)) != 0) {
    Status s = Status::FailedPrecondition(fmt::format("api: cannot bind {}", options_.socket_path),
                                          std::strerror(errno));
    ::close(listen_fd_);
    listen_fd_ = -1;
    return s;
  }
  // Reading is open to every local user; what changes state will check the
  // caller's credentials.
  ::chmod(options_.socket_path.c_str(), 0666);
  // A deep backlog: a burst of clients waits in the kernel for the next
  // poll rather than being refused.
  if (::listen(listen_fd_, kListenBacklog) != 0 || ::pipe2(wake_fds_, O_CLOEXEC | O_NONBLOCK) != 0) {
    return Status::Unavailable("api: listen", std::strerror(errno));
  }
  thread_ = std::jthread([this](std::stop_token stop) { Loop(stop); });
  logger_->Log(LogLevel::kInfo, "api: listening on {}", options_.socket_path);
  return Status::OK();
}

void UnixServer::Stop() {
  if (thread_.joinable()) {
    thread_.request_stop();
    char byte = 1;
    ssize_t ignored = ::write(wake_fds_[1], &byte, 1);
    (void)ignored;
    thread_.join();
  }
  if (listen_fd_ >= 0) {
    ::close(listen_fd_);
    listen_fd_ = -1;
    ::unlink(options_.socket_path.c_str());
  }
  for (int& fd : wake_fds_) {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
}

ServerStats UnixServer::stats() const {
  MutexLock lock(&mu_);
  return stats_;
}

void UnixServer::Loop(std::stop_token stop) {
  std::list<Connection> connections;
  std::vector<pollfd> fds;
  std::vector<Connection*> by_slot;
  while (!stop.stop_requested()) {
    fds.clear();
    by_slot.clear();
    fds.push_back({listen_fd_, POLLIN, 0});
    fds.push_back({wake_fds_[0], POLLIN, 0});
    for (Connection& c : connections) {
      short events = (c.close_after_flush || c.is_peer_closed) ? 0 : POLLIN;
      if (!c.out.empty()) events |= POLLOUT;
      fds.push_back({c.fd, events, 0});
      by_slot.push_back(&c);
    }
    int ready = ::poll(fds.data(), fds.size(), 200);
    if (ready < 0 && errno != EINTR) break;
    steady_clock::time_point now = clock_->SteadyNow();
    if (fds[1].revents & POLLIN) {
      char drain[256];
      while (::read(wake_fds_[0], drain, sizeof drain) > 0) {
      }
    }
    for (size_t slot = 0; slot < by_slot.size(); ++slot) {
      Connection& c = *by_slot[slot];
      if (!Serve(c, fds[slot + 2].revents, now)) continue;
      Abandon(c);
      ::close(c.fd);
      c.fd = -1;
    }
    connections.remove_if([](const Connection& c) { return c.fd < 0; });
    // New clients are taken after those that left are closed, so a slot
    // freed in this same wake counts toward the limit.
    if (fds[0].revents & POLLIN) Accept(&connections, now);
  }
  for (Connection& c : connections) {
    Abandon(c);
    ::close(c.fd);
  }
}

bool UnixServer::Serve(Connection& c, short revents, steady_clock::time_point now) {
  bool is_gone = false;
  // Lines that came while an answer was owed are answered once it is sent.
  bool has_answered = TakeAnswer(c, now);
  if ((revents & (POLLIN | POLLHUP | POLLERR)) || (has_answered && !c.in.empty())) {
    is_gone = Receive(c, now, options_.max_request_bytes);
    AnswerLines(c, now);
  }
  if (!is_gone && !c.out.empty()) is_gone = !Flush(c);
  if (static_cast<int64_t>(c.out.size()) > options_.max_unread_output_bytes) is_gone = true;
  if ((c.close_after_flush || c.is_peer_closed) && c.out.empty() && !c.pending) is_gone = true;
  if (revents & (POLLHUP | POLLERR)) is_gone = is_gone || (c.pending && c.is_peer_closed);
  // Waiting for a deferred answer: no idle timeout. Else an idle client,
  // or a partial request that never completes, is closed at the timeout.
  if (!is_gone && !c.pending && now - c.last_activity > options_.request_timeout &&
      (c.out.empty() || !c.in.empty())) {
    is_gone = true;
    MutexLock lock(&mu_);
    stats_.timed_out++;
  }
  return is_gone;
}

void UnixServer::AnswerLines(Connection& c, steady_clock::time_point now) {
  // Formatted only for a request over the limit (this runs on every read).
  auto too_large = [this] {
    return EncodeError(nullptr, kErrorTooLarge,
                       fmt::format("requests are limited to {} bytes", options_.max_request_bytes));
  };
  size_t newline;
  while (!c.close_after_flush && !c.pending && (newline = c.in.find('\n')) != std::string::npos) {
    std::string line = c.in.substr(0, newline);
    c.in.erase(0, newline + 1);
    if (static_cast<int64_t>(line.size()) > options_.max_request_bytes) {
      c.out += too_large();
      c.close_after_flush = true;
      MutexLock lock(&mu_);
      stats_.too_large++;
      return;
    }
    std::optional<std::string> response;
    auto slot = std::make_shared<Reply::Slot>(wake_fds_[1]);
    try {
      response = handler_(line, c.peer, Reply(slot));
    } catch (const std::exception& e) {
      logger_->Log(LogLevel::kError, "api: handler failed: {}", e.what());
      response = EncodeError(nullptr, "internal", "internal error; see the agent's log");
    }
    MutexLock lock(&mu_);
    stats_.requests++;
    if (response) {
      c.out += *response;
    } else {
      c.pending = std::move(slot);
      stats_.deferred++;
      TakeAnswer(c, now);  // It may have come already.
    }
  }
  if (!c.close_after_flush && static_cast<int64_t>(c.in.size()) > options_.max_request_bytes) {
    c.out += too_large();
    c.in.clear();
    c.close_after_flush = true;
    MutexLock lock(&mu_);
    stats_.too_large++;
  }
}

void UnixServer::Accept(std::list<Connection>* connections, steady_clock::time_point now) {
  for (;;) {
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) return;
    Connection c;
    c.fd = fd;
    c.last_activity = now;
    ucred cred{};
    socklen_t len = sizeof cred;
    if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0) {
      c.peer = PeerCredentials{cred.pid, cred.uid, cred.gid};
    }
    MutexLock lock(&mu_);
    if (static_cast<int>(connections->size()) >= options_.max_connections) {
      // Back-pressure: say why, then close; never queue without bound.
      c.out = EncodeError(
          nullptr, kErrorBusy,
          fmt::format("the agent serves at most {} clients at once; retry", options_.max_connections));
      Flush(c);
      ::close(fd);
      stats_.refused_busy++;
      continue;
    }
    stats_.accepted++;
    connections->push_back(std::move(c));
  }
}

Result<nlohmann::json> CallAgent(const std::string& socket_path, const Request& request,
                                 std::chrono::milliseconds timeout, int interrupt_fd) {
  Result<sockaddr_un> addr = Address(socket_path);
  if (!addr.ok()) return addr.status();
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::Unavailable("agent: socket", std::strerror(errno));
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(timeout.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((timeout.count() % 1000) * 1000);
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);  // Bounds connect() too, on a full backlog.
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr.value()), sizeof(sockaddr_un)) != 0) {
    int err = errno;
    ::close(fd);
    if (err == ENOENT || err == ECONNREFUSED || err == ENOTDIR) {
      return Status::FailedPrecondition(fmt::format("agent: no agent at {}", socket_path),
                                        std::strerror(err));
    }
    return Status::Unavailable(fmt::format("agent: {} did not take the connection", socket_path),
                               std::strerror(err));
  }
  std::string line = EncodeRequest(request);
  // A send may fail because a busy agent already answered and closed; its
  // answer is still there to read.
  bool is_sent = ::send(fd, line.data(), line.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(line.size());
  std::string in;
  char buf[65536];
  auto deadline = RealSteadyNow() + timeout;  // A socket wait: real time.
  while (in.find('\n') == std::string::npos) {
    if (interrupt_fd >= 0) {
      pollfd fds[2] = {{fd, POLLIN, 0}, {interrupt_fd, POLLIN, 0}};
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - RealSteadyNow());
      int ready = ::poll(fds, 2, static_cast<int>(std::max<int64_t>(0, left.count())));
      if (ready < 0 && errno == EINTR) continue;
      if (fds[1].revents & POLLIN) {
        ::close(fd);
        return Status::Cancelled("agent: interrupted while waiting for the answer");
      }
      if (ready == 0) {
        ::close(fd);
        return Status::Unavailable("agent: no answer in time");
      }
    }
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::close(fd);
      if (!is_sent) return Status::Unavailable("agent: cannot send the request");
      return Status::Unavailable(n == 0 ? "agent: closed the connection" : "agent: no answer in time");
    }
    in.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return DecodeResponse(std::string_view(in).substr(0, in.find('\n')));
}

}  // namespace tarmac::ipc
