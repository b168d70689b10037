// SPDX-License-Identifier: Apache-2.0
#include "backfill/engine_reply.h"

#include <fmt/format.h>

#include <optional>

#include "backfill/lines.h"

namespace tarmac::backfill {
namespace {

using nlohmann::json;
using Verdict = EngineReply::Verdict;

bool IsOllama(std::string_view url) { return url.rfind("/api/", 0) == 0; }

// j[key] is true (a boolean; anything else is not).
bool IsTrue(const json& j, const char* key) {
  return j.contains(key) && j[key].is_boolean() && j[key].get<bool>();
}

// j[key] as it is, or `otherwise` when absent.
json FieldOr(const json& j, const char* key, json otherwise) { return j.contains(key) ? j[key] : otherwise; }

// The engine's error message: {"error":"..."} (Ollama) or
// {"error":{"message":...}} (OpenAI); else the body's start.
std::string ErrorMessage(std::string_view body) {
  json j = json::parse(body, nullptr, false);
  if (j.is_object() && j.contains("error")) {
    const json& e = j["error"];
    if (e.is_string()) return e.get<std::string>();
    if (e.is_object() && e.contains("message") && e["message"].is_string())
      return e["message"].get<std::string>();
  }
  return std::string(body.substr(0, 200));
}

EngineReply Retry(std::string why) { return {Verdict::kRetry, nullptr, std::move(why), 0}; }

// Ollama NDJSON: text deltas, then a done:true object with the metrics.
std::optional<json> JoinNdjson(std::string_view body, bool is_chat, std::string* why) {
  std::string text;
  json last;
  Lines lines(body);
  std::string_view raw;
  while (lines.Next(&raw)) {
    if (IsBlank(raw)) continue;
    json j = json::parse(raw, nullptr, false);
    if (!j.is_object()) {
      *why = "a stream line that is not a JSON object";
      return std::nullopt;
    }
    if (j.contains("error")) {
      *why = "the engine failed mid-answer: " + ErrorMessage(raw);
      return std::nullopt;
    }
    if (is_chat && j.contains("message") && j["message"].is_object() && j["message"].contains("content") &&
        j["message"]["content"].is_string()) {
      text += j["message"]["content"].get<std::string>();
    } else if (!is_chat && j.contains("response") && j["response"].is_string()) {
      text += j["response"].get<std::string>();
    }
    if (IsTrue(j, "done")) {
      last = std::move(j);
      break;
    }
  }
  if (!last.is_object()) {
    *why = "the stream ended before its last object (done: true)";
    return std::nullopt;
  }
  if (is_chat) {
    if (!last.contains("message") || !last["message"].is_object()) last["message"] = {{"role", "assistant"}};
    last["message"]["content"] = text;
  } else {
    last["response"] = text;
  }
  return last;
}

// OpenAI server-sent events: chunks of deltas, then "data: [DONE]".
std::optional<json> JoinSse(std::string_view body, bool is_chat, std::string* why) {
  std::string text;
  json last;
  std::string finish;
  json usage;
  bool has_done = false;
  Lines lines(body);
  std::string_view raw;
  while (lines.Next(&raw)) {
    if (raw.rfind("data:", 0) != 0) continue;
    std::string_view data = raw.substr(5);
    while (!data.empty() && data.front() == ' ') data.remove_prefix(1);
    if (data == "[DONE]") {
      has_done = true;
      break;
    }
    json j = json::parse(data, nullptr, false);
    if (!j.is_object()) {
      *why = "an event that is not a JSON object";
      return std::nullopt;
    }
    if (j.contains("error")) {
      *why = "the engine failed mid-answer: " + ErrorMessage(data);
      return std::nullopt;
    }
    if (j.contains("usage") && j["usage"].is_object()) usage = j["usage"];
    if (j.contains("choices") && j["choices"].is_array() && !j["choices"].empty() &&
        j["choices"][0].is_object()) {
      const json& c = j["choices"][0];
      if (is_chat && c.contains("delta") && c["delta"].is_object() && c["delta"].contains("content") &&
          c["delta"]["content"].is_string()) {
        text += c["delta"]["content"].get<std::string>();
      } else if (!is_chat && c.contains("text") && c["text"].is_string()) {
        text += c["text"].get<std::string>();
      }
      if (c.contains("finish_reason") && c["finish_reason"].is_string())
        finish = c["finish_reason"].get<std::string>();
    }
    last = std::move(j);
  }
  if (!has_done || !last.is_object()) {
    *why = "the stream ended before data: [DONE]";
    return std::nullopt;
  }
  json choice = {{"index", 0}, {"finish_reason", finish.empty() ? json(nullptr) : json(finish)}};
  if (is_chat) {
    choice["message"] = {{"role", "assistant"}, {"content", text}};
  } else {
    choice["text"] = text;
  }
  json whole = {{"id", FieldOr(last, "id", "")},
                {"object", is_chat ? "chat.completion" : "text_completion"},
                {"created", FieldOr(last, "created", 0)},
                {"model", FieldOr(last, "model", "")},
                {"choices", json::array({choice})}};
  if (usage.is_object()) whole["usage"] = usage;
  return whole;
}

int64_t CompletionTokens(const json& body) {
  if (body.contains("usage") && body["usage"].is_object() && body["usage"].contains("completion_tokens") &&
      body["usage"]["completion_tokens"].is_number_integer()) {
    return body["usage"]["completion_tokens"].get<int64_t>();
  }
  if (body.contains("eval_count") && body["eval_count"].is_number_integer())
    return body["eval_count"].get<int64_t>();
  return 0;
}

}  // namespace

EngineReply ReadEngineReply(std::string_view custom_id, std::string_view url, int status,
                            std::string_view body, std::string_view content_type) {
  std::string id(custom_id);
  if (status == 404)
    return {Verdict::kFailBatch, nullptr, fmt::format("{} ({})", ErrorMessage(body), status), 0};
  if (status == 429 || status >= 500 || status < 200) {
    return Retry(fmt::format("the engine answered {}: {}", status, ErrorMessage(body)));
  }
  if (status >= 300) {
    std::string message = ErrorMessage(body);
    json line = {{"id", "batch_req_" + id},
                 {"custom_id", id},
                 {"response", nullptr},
                 {"error", {{"code", fmt::format("http_{}", status)}, {"message", message}}}};
    return {Verdict::kFailItem, std::move(line), message, 0};
  }
  bool is_chat = url.find("chat") != std::string_view::npos;
  std::string why;
  std::optional<json> answer;
  size_t newline = body.find('\n');
  bool has_lines = newline != std::string_view::npos &&
                   body.find_first_not_of(" \t\r\n", newline) != std::string_view::npos;
  if (content_type.find("ndjson") != std::string_view::npos || (IsOllama(url) && has_lines)) {
    answer = JoinNdjson(body, is_chat, &why);
  } else if (content_type.find("event-stream") != std::string_view::npos) {
    answer = JoinSse(body, is_chat, &why);
  } else {
    json j = json::parse(body, nullptr, false);
    if (!j.is_object()) {
      why = "the answer is not a JSON object";
    } else if (j.contains("error")) {
      why = "the engine failed: " + ErrorMessage(body);
    } else if (IsOllama(url) && !IsTrue(j, "done")) {
      why = "the answer is not finished (done is not true)";
    } else {
      answer = std::move(j);
    }
  }
  if (!answer) return Retry(why);
  int64_t tokens = CompletionTokens(*answer);
  json line = {{"id", "batch_req_" + id},
               {"custom_id", id},
               {"response", {{"status_code", status}, {"body", std::move(*answer)}}},
               {"error", nullptr}};
  return {Verdict::kDone, std::move(line), "", tokens};
}

}  // namespace tarmac::backfill
