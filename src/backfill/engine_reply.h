// SPDX-License-Identifier: Apache-2.0
//
// What an inference engine answered to one batch request, as a line of the
// batch's results (OpenAI's Batch output format) or a verdict on what to do
// next. Engines: Ollama's /api/generate and /api/chat (one JSON object, or
// NDJSON when streaming) and OpenAI-compatible /v1/chat/completions and
// /v1/completions (one JSON object, or server-sent events when streaming).
// A streamed answer is put together into the object the same request would
// have got without streaming.
//
// Verdicts, after Ollama's and the OpenAI layer's documented errors:
//   kDone       a result line ({"id","custom_id","response":{"status_code",
//               "body"},"error":null}) for the results file;
//   kRetry      5xx, 429, a stream cut before its end or an error line in a
//               stream: nothing is recorded, the request runs again;
//   kFailItem   another 4xx (a bad request): an error line
//               ({"id","custom_id","response":null,"error":{"code","message"}})
//               for the errors file; the batch goes on;
//   kFailBatch  404 (the model is not there): every request would fail the
//               same way, so the batch stops with the engine's message.
// Pure; thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace tarmac::backfill {

struct EngineReply {
  enum class Verdict { kDone, kRetry, kFailItem, kFailBatch };
  Verdict verdict = Verdict::kRetry;
  nlohmann::json line;            // kDone and kFailItem: the line to record.
  std::string why;                // Otherwise: what went wrong, for the log and events.
  int64_t completion_tokens = 0;  // kDone: tokens generated, when the engine says.
};

// `url` is the request's endpoint; `status` the HTTP status; `body` what
// came back (whole); `content_type` its Content-Type header.
EngineReply ReadEngineReply(std::string_view custom_id, std::string_view url, int status,
                            std::string_view body, std::string_view content_type);

}  // namespace tarmac::backfill
