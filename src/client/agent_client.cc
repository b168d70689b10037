// SPDX-License-Identifier: Apache-2.0
#include "client/agent_client.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <vector>

#include "common/clock.h"
#include "ipc/protocol.h"
#include "ipc/unix_server.h"
#include "node/node_json.h"

namespace tarmac::client {
namespace {

constexpr std::chrono::milliseconds kStatusTimeout{5000};
// How long a client keeps asking a busy or slow agent for status.
constexpr std::chrono::milliseconds kStatusPatience{15000};

}  // namespace

using nlohmann::json;

Result<node::NodeView> AgentClient::FetchStatus(std::optional<std::chrono::seconds> recent_window) const {
  json params = json::object();
  if (recent_window) {
    params["recent_window_seconds"] = std::min<int64_t>(recent_window->count(), ipc::kMaxRecentWindowSeconds);
  }
  CallOptions options;
  options.patience = kStatusPatience;
  options.timeout = kStatusTimeout;
  options.waits_out_restarts = false;  // No agent: the caller reads the GPUs itself.
  Result<json> answer = Call("status", std::move(params), options);
  if (answer.ok()) return node::NodeFromJson(answer.value());
  if (answer.status().code() != StatusCode::kUnavailable) return answer.status();
  return Status::DeadlineExceeded(
      fmt::format("the agent at {} did not answer within {} s ({})", socket_path_,
                  std::chrono::duration_cast<std::chrono::seconds>(kStatusPatience).count(),
                  answer.status().message()),
      "it runs but is stopped or overloaded; --no-agent reads the GPUs directly");
}

Result<json> AgentClient::Call(const std::string& method, json params, CallOptions options) const {
  ipc::Request request;
  request.method = method;
  request.params = std::move(params);
  // No socket at all: no agent, unless one is restarting under a client that
  // already waits long (a queued or running `tarmac run`).
  if (options.patience <= std::chrono::minutes(1) && ::access(socket_path_.c_str(), F_OK) != 0) {
    options.patience = std::chrono::milliseconds(0);
  }
  auto deadline = RealSteadyNow() + options.patience;  // Socket waits are real time.
  std::chrono::milliseconds backoff(5);
  for (;;) {
    // Each try waits for its answer no longer than the patience left.
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - RealSteadyNow());
    std::chrono::milliseconds timeout = options.patience.count() > 0
                                            ? std::clamp(left, std::chrono::milliseconds(1), options.timeout)
                                            : options.timeout;
    Result<json> answer = ipc::CallAgent(socket_path_, request, timeout, options.interrupt_fd);
    StatusCode code = answer.status().code();
    bool is_retryable = code == StatusCode::kUnavailable ||
                        (code == StatusCode::kFailedPrecondition && options.waits_out_restarts);
    if (answer.ok() || !is_retryable || RealSteadyNow() + backoff > deadline) return answer;
    // Jittered, so that a crowd of clients does not come back in step; an
    // interrupt ends the wait at once.
    int wait_ms = static_cast<int>(backoff.count() + std::rand() % (backoff.count() + 1));
    pollfd p{options.interrupt_fd, POLLIN, 0};
    int ready = ::poll(&p, options.interrupt_fd >= 0 ? 1 : 0, wait_ms);
    if (ready > 0) return Status::Cancelled("interrupted while waiting for the agent");
    backoff = std::min<std::chrono::milliseconds>(backoff * 2, std::chrono::milliseconds(250));
  }
}

Result<LeaseAnswer> AgentClient::RequestLease(const json& params, CallOptions options) const {
  Result<json> answer = Call("lease.request", params, options);
  if (!answer.ok()) return answer.status();
  return LeaseAnswerFromJson(answer.value());
}

Result<LeaseAnswer> AgentClient::GetLease(int64_t id, CallOptions options) const {
  Result<json> answer = Call("lease.get", {{"id", id}}, options);
  if (!answer.ok()) return answer.status();
  return LeaseAnswerFromJson(answer.value(), id);
}

namespace {

Result<LeaseAnswer> CallWait(const AgentClient& agent, json params, std::chrono::milliseconds wait,
                             int interrupt_fd) {
  CallOptions options;
  options.patience = std::chrono::minutes(10);
  options.timeout = wait + std::chrono::seconds(10);  // The agent answers at `wait` at the latest.
  options.interrupt_fd = interrupt_fd;
  int64_t id = params["id"].get<int64_t>();
  params["timeout_ms"] = wait.count();
  Result<json> answer = agent.Call("lease.wait", std::move(params), options);
  if (!answer.ok()) return answer.status();
  return LeaseAnswerFromJson(answer.value(), id);
}

}  // namespace

Result<LeaseAnswer> AgentClient::WaitLease(int64_t id, std::chrono::milliseconds wait,
                                           int interrupt_fd) const {
  return CallWait(*this, {{"id", id}}, wait, interrupt_fd);
}

Result<LeaseAnswer> AgentClient::WatchLease(int64_t id, std::chrono::milliseconds wait,
                                            int interrupt_fd) const {
  return CallWait(*this, {{"id", id}, {"watch", true}}, wait, interrupt_fd);
}

Result<json> AgentClient::AttachLease(int64_t id, int64_t pid) const {
  return Call("lease.attach", {{"id", id}, {"pid", pid}});
}

Result<ReleaseAnswer> AgentClient::ReleaseLease(int64_t id, CallOptions options) const {
  Result<json> answer = Call("lease.release", {{"id", id}}, options);
  if (!answer.ok()) return answer.status();
  return ReleaseAnswerFromJson(answer.value());
}

Result<std::vector<sched::LeaseShown>> AgentClient::Leases(CallOptions options) const {
  Result<json> answer = Call("leases", json::object(), options);
  if (!answer.ok()) return answer.status();
  return LeasesFromJson(answer.value());
}

Result<std::vector<sched::PendingShown>> AgentClient::Queue(CallOptions options) const {
  Result<json> answer = Call("queue", json::object(), options);
  if (!answer.ok()) return answer.status();
  return QueueFromJson(answer.value());
}

Result<int64_t> AgentClient::ChooseLease(const std::string& given, const std::string& kind) const {
  std::string text = given;
  if (text.empty()) {
    if (const char* env = std::getenv("TARMAC_LEASE_ID")) text = env;
  }
  if (!text.empty()) {
    char* end = nullptr;
    long long id = std::strtoll(text.c_str(), &end, 10);
    if (id < 1 || *end != '\0')
      return Status::InvalidArgument(fmt::format("LEASE: expected a lease id, not '{}'", text));
    return static_cast<int64_t>(id);
  }
  Result<std::vector<sched::LeaseShown>> leases = Leases();
  if (!leases.ok()) return leases.status();
  std::vector<int64_t> mine;
  for (const sched::LeaseShown& shown : leases.value()) {
    const sched::Lease& l = shown.lease;
    if (l.uid != static_cast<int64_t>(getuid())) continue;
    // A reservation may be of kind backfill too: its own kind says.
    bool is_kind =
        kind == "reservation" ? l.kind == node::LeaseKind::kReservation : sched::LeaseKindName(l) == kind;
    if (!kind.empty() && !is_kind) continue;
    mine.push_back(l.id);
  }
  if (mine.size() == 1) return mine[0];
  if (mine.empty()) return Status::NotFound(fmt::format("you hold no {}", kind.empty() ? "lease" : kind));
  return Status::InvalidArgument(fmt::format("you hold {} {}s ({}); name one", mine.size(),
                                             kind.empty() ? "lease" : kind, fmt::join(mine, ", ")));
}

}  // namespace tarmac::client
