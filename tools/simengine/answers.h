// SPDX-License-Identifier: Apache-2.0
//
// What tarmac-simengine answers: deterministic completions in the shapes
// Ollama (/api/generate, /api/chat: one JSON object, or NDJSON chunks) and
// OpenAI-compatible servers (/v1/completions, /v1/chat/completions: one
// JSON object, or server-sent events) send. The text depends only on the
// request's prompt or messages, so a test can check every answer.
// Pure; thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace tarmac::simengine {

// The endpoints served for inference.
enum class Api { kOllamaGenerate, kOllamaChat, kOpenAiCompletions, kOpenAiChat };

// The prompt a request carries: its "prompt", or its messages' contents
// joined with '\n'.
std::string PromptOf(const nlohmann::json& request);

// The answer's words for `prompt`: `tokens` of them, the first naming a
// hash of the prompt ("sim-1a2b3c4d").
std::vector<std::string> AnswerWords(const std::string& prompt, int tokens);

// Whether `api` streams `request` (Ollama by default, OpenAI when asked).
bool IsStreamed(Api api, const nlohmann::json& request);

// One piece of a streamed answer (`word`; `last` carries the metrics and
// ends the stream), as the bytes to send: an NDJSON line or an SSE event
// (with "data: [DONE]" after the last).
std::string StreamChunk(Api api, const std::string& model, const std::string& word, bool last, int tokens);
// The whole answer of a request that does not stream.
nlohmann::json WholeAnswer(Api api, const std::string& model, const std::vector<std::string>& words);

// An error body in the API's shape.
nlohmann::json ErrorBody(Api api, const std::string& message, const char* type);

}  // namespace tarmac::simengine
