// SPDX-License-Identifier: Apache-2.0
#include "cli/lease_client.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <thread>

#include "ipc/unix_server.h"

namespace tarmac::cli {

using nlohmann::json;

Result<json> CallLease(const std::string& socket, const std::string& method, json params,
                       std::chrono::milliseconds patience, std::chrono::milliseconds call_timeout) {
  ipc::Request request;
  request.method = method;
  request.params = std::move(params);
  std::chrono::milliseconds backoff(5);
  // No socket at all: no agent, unless one is restarting under a client that
  // already waits long (a queued or running `tarmac run`).
  if (patience <= std::chrono::minutes(1) && ::access(socket.c_str(), F_OK) != 0) {
    patience = std::chrono::milliseconds(0);
  }
  auto deadline = std::chrono::steady_clock::now() + patience;
  for (;;) {
    Result<json> answer = ipc::CallAgent(socket, request, call_timeout);
    bool is_retryable = answer.status().code() == StatusCode::kUnavailable ||
                        answer.status().code() == StatusCode::kFailedPrecondition;  // Restarting.
    if (answer.ok() || !is_retryable || std::chrono::steady_clock::now() + backoff > deadline) return answer;
    std::this_thread::sleep_for(backoff);
    backoff = std::min<std::chrono::milliseconds>(backoff * 2, std::chrono::milliseconds(500));
  }
}

int LeaseExit(const std::string& what, const Status& status) {
  std::string message = status.message();
  if (message.rfind("agent: ", 0) == 0) message = message.substr(7);
  std::fprintf(stderr, "tarmac: %s: %s\n", what.c_str(), message.c_str());
  switch (status.code()) {
    case StatusCode::kUnavailable:
    case StatusCode::kFailedPrecondition:
    case StatusCode::kDeadlineExceeded:
      std::fprintf(stderr, "%s\n", kAgentHint);
      return kExitNoAgent;
    case StatusCode::kIOError:
      return kExitStorage;
    case StatusCode::kResourceExhausted:
      return kExitNoFit;
    case StatusCode::kPermissionDenied:
      return kExitNotPermitted;
    case StatusCode::kInvalidArgument:
      return kExitUsage;
    default:
      return kExitError;
  }
}

std::string UuidList(const json& lease) {
  std::string out;
  for (const json& u : lease.value("uuids", json::array())) out += (out.empty() ? "" : ",") + u.get<std::string>();
  return out;
}

Result<int64_t> ChooseLease(const std::string& socket, const std::string& given, const std::string& kind) {
  std::string text = given;
  if (text.empty()) {
    if (const char* env = std::getenv("TARMAC_LEASE_ID")) text = env;
  }
  if (!text.empty()) {
    char* end = nullptr;
    long long id = std::strtoll(text.c_str(), &end, 10);
    if (id < 1 || *end != '\0') return Status::InvalidArgument(fmt::format("LEASE: expected a lease id, not '{}'", text));
    return static_cast<int64_t>(id);
  }
  Result<json> leases = CallLease(socket, "leases", json::object());
  if (!leases.ok()) return leases.status();
  std::vector<int64_t> mine;
  for (const json& l : leases.value()["leases"]) {
    if (l.value("uid", int64_t{-1}) != static_cast<int64_t>(getuid())) continue;
    if (!kind.empty() && l.value("kind", std::string()) != kind) continue;
    mine.push_back(l["id"].get<int64_t>());
  }
  if (mine.size() == 1) return mine[0];
  if (mine.empty()) return Status::NotFound(fmt::format("you hold no {}", kind.empty() ? "lease" : kind));
  return Status::InvalidArgument(
      fmt::format("you hold {} {}s ({}); name one", mine.size(), kind.empty() ? "lease" : kind, fmt::join(mine, ", ")));
}

}  // namespace tarmac::cli
