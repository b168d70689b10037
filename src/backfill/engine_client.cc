// SPDX-License-Identifier: Apache-2.0
#include "backfill/engine_client.h"

#include <fmt/format.h>
#include <httplib.h>

#include "http/bounded_fetch.h"

namespace tarmac::backfill {
namespace {

using nlohmann::json;

std::unique_ptr<httplib::Client> MakeClient(const std::string& base_url, std::chrono::milliseconds timeout) {
  auto client = std::make_unique<httplib::Client>(base_url);
  auto s = std::chrono::duration_cast<std::chrono::seconds>(timeout).count();
  auto us = std::chrono::duration_cast<std::chrono::microseconds>(timeout).count() % 1000000;
  client->set_connection_timeout(std::min<time_t>(s, 5), s >= 5 ? 0 : us);
  client->set_read_timeout(s, us);
  client->set_write_timeout(s, us);
  // A request's header and body go out at once, not held for an ACK.
  client->set_tcp_nodelay(true);
  return client;
}

std::string ModelNames(const json& list, const char* array, const char* key) {
  std::string names;
  if (list.contains(array) && list[array].is_array()) {
    for (const json& m : list[array]) {
      if (m.is_object() && m.contains(key) && m[key].is_string()) {
        names += (names.empty() ? "" : ", ") + m[key].get<std::string>();
      }
    }
  }
  return names;
}

// Ollama names a model "name:tag"; "llama3.2" is "llama3.2:latest".
bool SameModel(const std::string& a, const std::string& b) {
  auto full = [](const std::string& m) { return m.find(':') == std::string::npos ? m + ":latest" : m; };
  return a == b || full(a) == full(b);
}

bool Lists(const json& list, const char* array, const char* key, const std::string& model) {
  if (!list.contains(array) || !list[array].is_array()) return false;
  for (const json& m : list[array]) {
    if (m.is_object() && m.contains(key) && m[key].is_string() &&
        SameModel(m[key].get<std::string>(), model)) {
      return true;
    }
  }
  return false;
}

// An engine's answers are read through the one bounded client
// (http/bounded_fetch.h): at most kMaxEngineAnswerBytes, the whole answer
// within the request's timeout, JSON at most 64 deep.
Result<HttpAnswer> Send(httplib::Client* client, httplib::Request request, std::chrono::milliseconds timeout,
                        const std::string& what, const std::atomic<bool>* abort = nullptr) {
  http::FetchLimits limits;
  limits.max_body_bytes = kMaxEngineAnswerBytes;
  limits.deadline = timeout;
  limits.what = what;
  Result<http::FetchedAnswer> r = http::Fetch(client, std::move(request), limits, abort);
  if (!r.ok()) return r.status();
  return HttpAnswer{r.value().status, std::move(r.value().body), std::move(r.value().content_type)};
}

httplib::Request JsonPost(const std::string& path, const json& body) {
  httplib::Request request;
  request.method = "POST";
  request.path = path;
  request.body = body.dump();
  request.set_header("Content-Type", "application/json");
  return request;
}

}  // namespace

EngineConnection::EngineConnection(const std::string& base_url, std::chrono::seconds timeout)
    : client_(MakeClient(base_url, timeout)), timeout_(timeout) {
  client_->set_keep_alive(true);
}

EngineConnection::~EngineConnection() = default;

Result<HttpAnswer> EngineConnection::Post(const std::string& path, const json& body) {
  if (is_aborted_) return Status::Cancelled("the request was stopped");
  return Send(client_.get(), JsonPost(path, body), timeout_, "the engine", &is_aborted_);
}

void EngineConnection::Abort() {
  is_aborted_ = true;
  client_->stop();
}

Result<HttpAnswer> EngineGet(const std::string& base_url, const std::string& path,
                             std::chrono::milliseconds timeout) {
  std::unique_ptr<httplib::Client> client = MakeClient(base_url, timeout);
  httplib::Request request;
  request.method = "GET";
  request.path = path;
  return Send(client.get(), std::move(request), timeout, fmt::format("the engine at {}", base_url));
}

bool IsEngineUp(const std::string& base_url, const std::string& kind) {
  for (const char* path : {kind == "ollama" ? "/" : "/health", "/v1/models"}) {
    Result<HttpAnswer> r = EngineGet(base_url, path, std::chrono::seconds(2));
    if (r.ok() && r.value().status == 200) return true;
  }
  return false;
}

Status CheckEngineModel(const std::string& base_url, const std::string& kind, const std::string& model) {
  bool is_ollama = kind == "ollama";
  Result<HttpAnswer> r = EngineGet(base_url, is_ollama ? "/api/tags" : "/v1/models");
  if (!r.ok()) return r.status();
  if (r.value().status != 200) {
    return Status::Unavailable(fmt::format("the engine at {} answered {} to {}", base_url, r.value().status,
                                           is_ollama ? "/api/tags" : "/v1/models"));
  }
  json list = json::parse(r.value().body, nullptr, false);
  const char* array = is_ollama ? "models" : "data";
  const char* key = is_ollama ? "name" : "id";
  if (Lists(list, array, key, model)) return Status::OK();
  std::string names = ModelNames(list, array, key);
  return Status::NotFound(fmt::format("the engine at {} has no model \"{}\" (it has: {}){}", base_url, model,
                                      names.empty() ? "none" : names,
                                      is_ollama ? "; ollama pull it first" : ""));
}

Status UnloadModel(const std::string& base_url, const std::string& model, std::chrono::milliseconds patience,
                   Clock* clock) {
  std::unique_ptr<httplib::Client> client = MakeClient(base_url, std::chrono::seconds(10));
  Result<HttpAnswer> r = Send(client.get(), JsonPost("/api/generate", {{"model", model}, {"keep_alive", 0}}),
                              std::chrono::seconds(10), fmt::format("the engine at {}", base_url));
  if (!r.ok()) return r.status();
  auto deadline = clock->SteadyNow() + patience;
  for (;;) {
    Result<HttpAnswer> ps = EngineGet(base_url, "/api/ps", std::chrono::seconds(2));
    if (ps.ok() && ps.value().status == 200 &&
        !Lists(json::parse(ps.value().body, nullptr, false), "models", "name", model)) {
      return Status::OK();
    }
    if (clock->SteadyNow() >= deadline) {
      return Status::DeadlineExceeded(
          fmt::format("the engine at {} still lists {} as loaded", base_url, model));
    }
    clock->SleepUntil(clock->SteadyNow() + std::chrono::milliseconds(100), {});
  }
}

}  // namespace tarmac::backfill
