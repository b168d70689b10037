// SPDX-License-Identifier: Apache-2.0
//
// A backfill batch file, checked whole before any of it runs. JSONL, one
// request per line, in either form:
//
//   OpenAI Batch: {"custom_id":"r1","method":"POST","url":"/v1/chat/completions","body":{"model":"m",...}}
//     url one of /v1/chat/completions, /v1/completions (any OpenAI-compatible
//     server) or /api/generate, /api/chat (Ollama); body an object naming
//     the model.
//   Prompts:      {"prompt":"...","model":"m","options":{...},"custom_id":"r1"}
//                 {"messages":[{"role":"user","content":"..."}],"model":"m"}
//     a prompt becomes a /v1/completions request, messages a
//     /v1/chat/completions one; options are merged into the body; the model
//     may come from the defaults instead; custom_id defaults to "line-N".
//
// Every request gets a custom_id (1 to 64 printable characters, unique in
// the file) and one model (the same in the whole file). Blank lines are
// skipped. Every problem is reported at once, one per line, as
// "SOURCE:LINE: what" (at most kMaxProblems, then a count of the rest);
// nothing is returned from a file with any problem. Pure; thread-safe.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace tarmac::backfill {

struct BatchRequest {
  int64_t line = 0;  // 1-based, in the file.
  std::string custom_id;
  std::string url;      // As above.
  nlohmann::json body;  // The endpoint's request body, model included.
};

struct BatchInput {
  std::string model;
  std::vector<BatchRequest> requests;  // In file order.
};

struct BatchDefaults {
  std::string model;  // For prompt lines without one; empty: none.
};

inline constexpr size_t kMaxProblems = 20;
inline constexpr size_t kMaxCustomIdBytes = 64;
inline constexpr size_t kMaxLineBytes = size_t{1} << 20;

// The endpoints a request may name.
bool IsAllowedUrl(std::string_view url);

Result<BatchInput> ParseBatchInput(std::string_view text, std::string_view source,
                                   const BatchDefaults& defaults);

// A batch file is refused over this (OpenAI's Batch API allows 200 MB).
inline constexpr size_t kMaxBatchBytes = size_t{256} << 20;

// Reads the file at `path` (kMaxBatchBytes at most) and parses it;
// kInvalidArgument naming the file when it cannot be read or is too big.
Result<BatchInput> ReadBatchFile(const std::string& path, const BatchDefaults& defaults);

}  // namespace tarmac::backfill
