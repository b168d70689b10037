// SPDX-License-Identifier: Apache-2.0
//
// HTTP to an inference engine (Ollama, or an OpenAI-compatible server) for
// the batch runner: one EngineConnection per request slot (a kept-alive
// connection, stoppable from another thread when the lease is revoked), and
// the calls around the requests: is the engine up, does it have the model,
// unload the model and wait until it is gone (Ollama).
//
// Thread safety: an EngineConnection is used by one thread at a time, but
// Abort may come from any thread. The free functions are thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

#include "common/clock.h"
#include "common/result.h"

namespace httplib {
class Client;
}

namespace tarmac::backfill {

// The most one engine answer may hold (a completion, a model list).
inline constexpr int64_t kMaxEngineAnswerBytes = int64_t{64} << 20;

struct HttpAnswer {
  int status = 0;
  std::string body;
  std::string content_type;
};

class EngineConnection {
 public:
  // `base_url` "http://HOST:PORT".
  EngineConnection(const std::string& base_url, std::chrono::seconds timeout);
  ~EngineConnection();
  EngineConnection(const EngineConnection&) = delete;
  EngineConnection& operator=(const EngineConnection&) = delete;

  // POSTs `body` to `path`. kUnavailable when the engine could not be
  // reached or the connection broke (the request may run again);
  // kDeadlineExceeded when the whole answer took longer than the timeout,
  // kResourceExhausted when it was over kMaxEngineAnswerBytes (both may
  // run again); kCancelled after Abort.
  Result<HttpAnswer> Post(const std::string& path, const nlohmann::json& body);
  // Ends a Post in progress (and every later one) at once.
  void Abort();

 private:
  std::unique_ptr<httplib::Client> client_;
  std::chrono::seconds timeout_;
  std::atomic<bool> is_aborted_{false};
};

// GET `path` once (a short timeout): kUnavailable when the engine does not answer.
Result<HttpAnswer> EngineGet(const std::string& base_url, const std::string& path,
                             std::chrono::milliseconds timeout = std::chrono::seconds(5));

// Whether the engine answers (GET /, /health or /v1/models gives 200).
bool IsEngineUp(const std::string& base_url, const std::string& kind);

// Checks that the engine serves `model`: OK; kNotFound naming the models it
// has; kUnavailable when it is down.
Status CheckEngineModel(const std::string& base_url, const std::string& kind, const std::string& model);

// Ollama: asks it to unload `model` (keep_alive 0) and waits, up to
// `patience`, until /api/ps no longer lists it. kDeadlineExceeded when it
// stays; kUnavailable when the engine is down (nothing is loaded then).
Status UnloadModel(const std::string& base_url, const std::string& model, std::chrono::milliseconds patience,
                   Clock* clock);

}  // namespace tarmac::backfill
