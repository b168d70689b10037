// SPDX-License-Identifier: Apache-2.0
#include "answers.h"

#include <fmt/format.h>

namespace tarmac::simengine {
namespace {

using nlohmann::json;

bool IsOllama(Api api) { return api == Api::kOllamaGenerate || api == Api::kOllamaChat; }
bool IsChat(Api api) { return api == Api::kOllamaChat || api == Api::kOpenAiChat; }

uint64_t Fnv1a(const std::string& text) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

json OllamaMetrics(json j, int tokens) {
  j["done"] = true;
  j["done_reason"] = "stop";
  j["total_duration"] = 1000000;
  j["load_duration"] = 0;
  j["prompt_eval_count"] = 1;
  j["prompt_eval_duration"] = 1000;
  j["eval_count"] = tokens;
  j["eval_duration"] = 1000000;
  return j;
}

}  // namespace

std::string PromptOf(const json& request) {
  if (request.contains("prompt") && request["prompt"].is_string())
    return request["prompt"].get<std::string>();
  std::string out;
  if (request.contains("messages") && request["messages"].is_array()) {
    for (const json& m : request["messages"]) {
      if (m.is_object() && m.contains("content") && m["content"].is_string()) {
        out += (out.empty() ? "" : "\n") + m["content"].get<std::string>();
      }
    }
  }
  return out;
}

std::vector<std::string> AnswerWords(const std::string& prompt, int tokens) {
  uint64_t h = Fnv1a(prompt);
  std::vector<std::string> words;
  for (int i = 0; i < tokens; ++i) {
    words.push_back(i == 0 ? fmt::format("sim-{:08x}", static_cast<uint32_t>(h))
                           : fmt::format(" w{}", (h >> (i % 48)) % 1000));
  }
  return words;
}

bool IsStreamed(Api api, const json& request) {
  bool fallback = IsOllama(api);
  if (!request.contains("stream") || !request["stream"].is_boolean()) return fallback;
  return request["stream"].get<bool>();
}

std::string StreamChunk(Api api, const std::string& model, const std::string& word, bool last, int tokens) {
  if (IsOllama(api)) {
    json j = {{"model", model}, {"created_at", "2026-01-01T00:00:00Z"}, {"done", false}};
    if (IsChat(api)) {
      j["message"] = {{"role", "assistant"}, {"content", last ? "" : word}};
    } else {
      j["response"] = last ? "" : word;
    }
    if (last) j = OllamaMetrics(std::move(j), tokens);
    return j.dump() + "\n";
  }
  json choice = {{"index", 0}, {"finish_reason", last ? json("stop") : json(nullptr)}};
  if (IsChat(api)) {
    choice["delta"] = last ? json::object() : json{{"content", word}};
  } else {
    choice["text"] = last ? "" : word;
  }
  json j = {{"id", "sim-1"},
            {"object", IsChat(api) ? "chat.completion.chunk" : "text_completion"},
            {"created", 1767225600},
            {"model", model},
            {"choices", json::array({choice})}};
  if (last) j["usage"] = {{"prompt_tokens", 1}, {"completion_tokens", tokens}, {"total_tokens", tokens + 1}};
  std::string out = "data: " + j.dump() + "\n\n";
  if (last) out += "data: [DONE]\n\n";
  return out;
}

json WholeAnswer(Api api, const std::string& model, const std::vector<std::string>& words) {
  std::string text;
  for (const std::string& w : words) text += w;
  int tokens = static_cast<int>(words.size());
  if (IsOllama(api)) {
    json j = {{"model", model}, {"created_at", "2026-01-01T00:00:00Z"}};
    if (IsChat(api)) {
      j["message"] = {{"role", "assistant"}, {"content", text}};
    } else {
      j["response"] = text;
    }
    return OllamaMetrics(std::move(j), tokens);
  }
  json choice = {{"index", 0}, {"finish_reason", "stop"}};
  if (IsChat(api)) {
    choice["message"] = {{"role", "assistant"}, {"content", text}};
  } else {
    choice["text"] = text;
  }
  return {{"id", "sim-1"},
          {"object", IsChat(api) ? "chat.completion" : "text_completion"},
          {"created", 1767225600},
          {"model", model},
          {"choices", json::array({choice})},
          {"usage", {{"prompt_tokens", 1}, {"completion_tokens", tokens}, {"total_tokens", tokens + 1}}}};
}

json ErrorBody(Api api, const std::string& message, const char* type) {
  if (IsOllama(api)) return {{"error", message}};
  return {{"error", {{"message", message}, {"type", type}, {"param", nullptr}, {"code", nullptr}}}};
}

}  // namespace tarmac::simengine
