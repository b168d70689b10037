// SPDX-License-Identifier: Apache-2.0
//
// UnixServer serves the line protocol (protocol.h) on a Unix stream socket
// from one event-loop thread (poll). It learns each caller's pid/uid/gid from
// the kernel (SO_PEERCRED), and protects the agent from slow or hostile
// clients: non-blocking I/O, a cap on connections (the excess get a "busy"
// error), a cap on request size, an idle timeout, and a cap on unread
// output. A client can never stall the sampler or other clients.
//
// Thread safety: Start/Stop from one thread; the handler runs on the server
// thread.
#pragma once

#include <chrono>
#include <functional>
#include <list>
#include <optional>
#include <string>
#include <thread>

#include "common/clock.h"
#include "common/log.h"
#include "common/mutex.h"
#include "common/result.h"
#include "ipc/protocol.h"
#include "ipc/reply.h"

namespace tarmac::ipc {

struct ServerConnection;  // One client (unix_server.cc).

// Connections the kernel holds for the agent before it accepts them
// (capped by net.core.somaxconn).
inline constexpr int kListenBacklog = 4096;

struct ServerOptions {
  std::string socket_path;
  int max_connections = 4096;
  int64_t max_request_bytes = 65536;
  std::chrono::milliseconds request_timeout{5000};
  int64_t max_unread_output_bytes = int64_t{32} << 20;

  bool operator==(const ServerOptions&) const = default;
};

struct ServerStats {
  int64_t accepted = 0;
  int64_t refused_busy = 0;
  int64_t requests = 0;
  int64_t too_large = 0;
  int64_t timed_out = 0;
  int64_t deferred = 0;  // Requests answered later (reply.h).
};

// Whether an agent answers connections on `socket_path` now.
bool IsServing(const std::string& socket_path);

class UnixServer {
 public:
  // Answers one request line from a peer: returns the response line, or
  // nothing when the answer comes later through `reply` (reply.h). Until it
  // does, the connection stays open without the idle timeout, and further
  // lines on it wait their turn.
  using Handler = std::function<std::optional<std::string>(const std::string& line,
                                                           const PeerCredentials& peer, const Reply& reply)>;

  UnixServer(ServerOptions options, Handler handler, Clock* clock, Logger* logger);
  ~UnixServer();
  UnixServer(const UnixServer&) = delete;
  UnixServer& operator=(const UnixServer&) = delete;

  // Binds the socket (removing a stale one left by a killed agent; refusing
  // when another agent answers on it) and starts the loop. kUnavailable
  // when the socket cannot be bound, kFailedPrecondition when another agent
  // is running.
  Status Start();
  void Stop();  // Closes every connection and removes the socket file.

  ServerStats stats() const;

 private:
  void Loop(std::stop_token stop);
  // One client's turn in the loop: reads, answers, writes; true when it is
  // to be closed (gone, done, too much unread, or timed out).
  bool Serve(ServerConnection& c, short revents, std::chrono::steady_clock::time_point now);
  // Answers every complete line that came (one at a time while an answer
  // is owed); a line over the size limit ends the connection.
  void AnswerLines(ServerConnection& c, std::chrono::steady_clock::time_point now);
  // Takes every client waiting, up to max_connections (the rest refused,
  // told why).
  void Accept(std::list<ServerConnection>* connections, std::chrono::steady_clock::time_point now);

  ServerOptions options_;
  Handler handler_;
  Clock* clock_;
  Logger* logger_;
  int listen_fd_ = -1;
  int wake_fds_[2] = {-1, -1};
  std::jthread thread_;
  mutable Mutex mu_;
  ServerStats stats_ GUARDED_BY(mu_);
};

// Client side: connects to `socket_path`, sends `request`, waits up to
// `timeout` for the response line. kFailedPrecondition when no agent listens
// there (no socket file, or a stale one); kUnavailable when one does but is
// busy, or did not answer in time; else the agent's answer
// (DecodeResponse). With `interrupt_fd` (e.g. a signalfd), kCancelled as
// soon as it becomes readable while waiting for the answer.
Result<nlohmann::json> CallAgent(const std::string& socket_path, const Request& request,
                                 std::chrono::milliseconds timeout, int interrupt_fd = -1);

}  // namespace tarmac::ipc
