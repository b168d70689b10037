// SPDX-License-Identifier: Apache-2.0
#include "http/bounded_fetch.h"

#include <fmt/format.h>
#include <httplib.h>

#include <condition_variable>
#include <mutex>
#include <thread>

#include "common/clock.h"

namespace tarmac::http {
namespace {

std::string ErrorWords(httplib::Error e) {
  switch (e) {
    case httplib::Error::Connection:
      return "cannot connect (is it running?)";
    case httplib::Error::ConnectionTimeout:
      return "timed out connecting";
    case httplib::Error::Read:
      return "no answer (timed out or closed)";
    case httplib::Error::Write:
      return "the request could not be sent";
    case httplib::Error::SSLConnection:
      return "the TLS handshake failed";
    case httplib::Error::SSLServerVerification:
      return "its certificate was not verified (--ca-file)";
    default:
      return "no answer (" + httplib::to_string(e) + ")";
  }
}

// Ends the exchange on `client` at `deadline` unless Done() came first:
// httplib's timeouts bound each read, and a server that sends a byte a
// second never trips them. stop() shuts the socket from this thread, as
// httplib allows.
class Deadline {
 public:
  Deadline(httplib::Client* client, std::chrono::steady_clock::time_point deadline)
      : thread_([this, client, deadline] {
          std::unique_lock<std::mutex> lock(mu_);
          if (!done_cv_.wait_until(lock, deadline, [this] { return is_done_; })) {
            has_passed_ = true;
            client->stop();
          }
        }) {}
  ~Deadline() { Done(); }
  // Returns whether the deadline passed (and the exchange was stopped).
  bool Done() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      is_done_ = true;
    }
    done_cv_.notify_all();
    if (thread_.joinable()) thread_.join();
    return has_passed_;
  }

 private:
  std::mutex mu_;
  std::condition_variable done_cv_;
  bool is_done_ = false;
  bool has_passed_ = false;
  std::thread thread_;
};

}  // namespace

std::string LimitWords(int64_t bytes) {
  if (bytes >= (1 << 20) && bytes % (1 << 20) == 0) return fmt::format("{} MiB", bytes >> 20);
  if (bytes >= (1 << 10) && bytes % (1 << 10) == 0) return fmt::format("{} KiB", bytes >> 10);
  return fmt::format("{} bytes", bytes);
}

bool JsonDepthWithin(std::string_view json, int max_depth) {
  int depth = 0;
  bool is_in_string = false;
  for (size_t i = 0; i < json.size(); ++i) {
    char c = json[i];
    if (is_in_string) {
      if (c == '\\') {
        ++i;  // The escaped character, whatever it is.
      } else if (c == '"') {
        is_in_string = false;
      }
      continue;
    }
    if (c == '"') {
      is_in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return false;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return true;
}

Result<FetchedAnswer> Fetch(httplib::Client* client, httplib::Request request, const FetchLimits& limits,
                            const std::atomic<bool>* abort) {
  auto is_aborted = [abort] { return abort != nullptr && abort->load(); };
  if (is_aborted()) return Status::Cancelled(fmt::format("{}: the request was stopped", limits.what));
  const auto deadline = RealClock()->SteadyNow() + limits.deadline;
  FetchedAnswer answer;
  bool is_too_large = false;
  bool is_over_shared = false;
  // The bytes this answer counts against `shared`, given back when its
  // holder lets it go (or at once, on a failure: `answer` goes with it).
  auto counted = std::make_shared<std::atomic<int64_t>>(0);
  if (limits.shared != nullptr) {
    answer.held = std::shared_ptr<void>(
        counted.get(), [counted, shared = limits.shared](void*) { shared->fetch_sub(counted->load()); });
  }
  request.content_receiver = [&](const char* data, size_t length, uint64_t offset, uint64_t total_length) {
    if (static_cast<int64_t>(answer.body.size() + length) > limits.max_body_bytes) {
      is_too_large = true;
      return false;
    }
    if (limits.shared != nullptr) {
      int64_t bytes = static_cast<int64_t>(length);
      counted->fetch_add(bytes);
      if (limits.shared->fetch_add(bytes) + bytes > limits.max_shared_bytes) {
        is_over_shared = true;
        return false;
      }
    }
    // A length said up front is taken at once (within the limit), not
    // grown by doublings to up to twice the body.
    if (offset == 0 && total_length > 0 && total_length <= static_cast<uint64_t>(limits.max_body_bytes)) {
      answer.body.reserve(static_cast<size_t>(total_length) + limits.spare_bytes);
    }
    answer.body.append(data, length);
    return !is_aborted();
  };
  httplib::Response response;
  httplib::Error error = httplib::Error::Success;
  bool is_sent = false;
  bool has_passed = false;
  {
    Deadline watch(client, deadline);
    is_sent = client->send(request, response, error);
    has_passed = watch.Done();
  }
  if (is_aborted()) return Status::Cancelled(fmt::format("{}: the request was stopped", limits.what));
  if (is_too_large) {
    return Status::ResourceExhausted(fmt::format("{}: the answer is over {} (the limit on one answer)",
                                                 limits.what, LimitWords(limits.max_body_bytes)));
  }
  if (is_over_shared) {
    return Status::ResourceExhausted(
        fmt::format("{}: the answers read at once are over {} (their shared limit)", limits.what,
                    LimitWords(limits.max_shared_bytes)));
  }
  // httplib's own read timeout can end the exchange a moment before the
  // deadline does: past the deadline, either is the timeout.
  if (!is_sent && error == httplib::Error::Read && RealClock()->SteadyNow() >= deadline) has_passed = true;
  if (has_passed) {
    return Status::DeadlineExceeded(
        fmt::format("{}: no complete answer within {} ms (the timeout)", limits.what,
                    (limits.named_timeout.count() > 0 ? limits.named_timeout : limits.deadline).count()));
  }
  if (!is_sent) return Status::Unavailable(fmt::format("{}: {}", limits.what, ErrorWords(error)));
  if (limits.max_json_depth > 0 && !JsonDepthWithin(answer.body, limits.max_json_depth)) {
    return Status::ResourceExhausted(fmt::format("{}: the answer nests JSON over {} levels deep (the limit)",
                                                 limits.what, limits.max_json_depth));
  }
  answer.status = response.status;
  answer.content_type = response.get_header_value("Content-Type");
  return answer;
}

}  // namespace tarmac::http
