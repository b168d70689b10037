// SPDX-License-Identifier: Apache-2.0
#include "backfill/batch_input.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <set>

#include "backfill/lines.h"
#include "common/proc_files.h"
#include "common/safe_file.h"

namespace tarmac::backfill {
namespace {

using nlohmann::json;

constexpr std::string_view kUrls[] = {"/v1/chat/completions", "/v1/completions", "/api/generate",
                                      "/api/chat"};

bool IsPrintable(std::string_view s) {
  for (char c : s) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return false;
  }
  return true;
}

// One line's request, or what is wrong with it.
Result<BatchRequest> ReadLine(const json& j, int64_t line, const BatchDefaults& defaults) {
  if (!j.is_object()) return Status::InvalidArgument("expected a JSON object");
  BatchRequest r;
  r.line = line;
  if (j.contains("url") || j.contains("body") || j.contains("method")) {
    for (const char* key : {"custom_id", "method", "url", "body"}) {
      if (!j.contains(key))
        return Status::InvalidArgument(fmt::format("OpenAI batch line without \"{}\"", key));
    }
    if (!j["custom_id"].is_string()) return Status::InvalidArgument("custom_id: expected a string");
    if (j["method"] != "POST") return Status::InvalidArgument("method: expected \"POST\"");
    if (!j["url"].is_string() || !IsAllowedUrl(j["url"].get<std::string>())) {
      return Status::InvalidArgument(
          "url: expected /v1/chat/completions, /v1/completions, /api/generate or /api/chat");
    }
    if (!j["body"].is_object()) return Status::InvalidArgument("body: expected an object");
    r.custom_id = j["custom_id"].get<std::string>();
    r.url = j["url"].get<std::string>();
    r.body = j["body"];
  } else {
    bool has_prompt = j.contains("prompt");
    bool has_messages = j.contains("messages");
    if (has_prompt == has_messages)
      return Status::InvalidArgument("expected \"prompt\" or \"messages\" (one of them)");
    if (has_prompt && !j["prompt"].is_string()) return Status::InvalidArgument("prompt: expected a string");
    if (has_messages && (!j["messages"].is_array() || j["messages"].empty())) {
      return Status::InvalidArgument("messages: expected a non-empty array");
    }
    r.url = has_prompt ? "/v1/completions" : "/v1/chat/completions";
    r.body = json::object();
    if (j.contains("options")) {
      if (!j["options"].is_object()) return Status::InvalidArgument("options: expected an object");
      r.body.update(j["options"]);
    }
    r.body[has_prompt ? "prompt" : "messages"] = j[has_prompt ? "prompt" : "messages"];
    if (j.contains("model")) r.body["model"] = j["model"];
    if (j.contains("custom_id")) {
      if (!j["custom_id"].is_string()) return Status::InvalidArgument("custom_id: expected a string");
      r.custom_id = j["custom_id"].get<std::string>();
    } else {
      r.custom_id = fmt::format("line-{}", line);
    }
  }
  if (r.custom_id.empty() || r.custom_id.size() > kMaxCustomIdBytes || !IsPrintable(r.custom_id)) {
    return Status::InvalidArgument(
        fmt::format("custom_id: expected 1 to {} printable characters", kMaxCustomIdBytes));
  }
  if (!r.body.contains("model") && !defaults.model.empty()) r.body["model"] = defaults.model;
  if (!r.body.contains("model"))
    return Status::InvalidArgument("no model: name one in the line, or give one for the file (--model)");
  if (!r.body["model"].is_string() || r.body["model"].get<std::string>().empty()) {
    return Status::InvalidArgument("model: expected a non-empty string");
  }
  return r;
}

}  // namespace

bool IsAllowedUrl(std::string_view url) {
  for (std::string_view u : kUrls) {
    if (u == url) return true;
  }
  return false;
}

Result<BatchInput> ParseBatchInput(std::string_view text, std::string_view source,
                                   const BatchDefaults& defaults) {
  BatchInput input;
  std::vector<std::string> problems;
  size_t more = 0;
  // The same problem on many lines is said once, with how many lines have it.
  std::map<std::string, std::pair<size_t, int64_t>> repeats;  // what -> (index in problems, count)
  auto fail = [&](int64_t line, std::string_view what) {
    auto seen = repeats.find(std::string(what));
    if (seen != repeats.end()) {
      ++seen->second.second;
    } else if (problems.size() < kMaxProblems) {
      repeats[std::string(what)] = {problems.size(), 1};
      problems.push_back(fmt::format("{}:{}: {}", source, line, what));
    } else {
      ++more;
    }
  };
  std::set<std::string> ids;
  int64_t model_line = 0;
  Lines lines(text);
  std::string_view raw;
  while (lines.Next(&raw)) {
    int64_t line = lines.number();
    if (IsBlank(raw)) continue;
    if (raw.size() > kMaxLineBytes) {
      fail(line, fmt::format("line longer than {} KiB", kMaxLineBytes / 1024));
      continue;
    }
    json j = json::parse(raw, nullptr, false);
    if (j.is_discarded()) {
      fail(line, "not valid JSON");
      continue;
    }
    Result<BatchRequest> r = ReadLine(j, line, defaults);
    if (!r.ok()) {
      fail(line, r.status().message());
      continue;
    }
    if (!ids.insert(r.value().custom_id).second) {
      fail(line, fmt::format("custom_id \"{}\" appears twice", r.value().custom_id));
      continue;
    }
    std::string model = r.value().body["model"].get<std::string>();
    if (input.model.empty()) {
      input.model = model;
      model_line = line;
    } else if (model != input.model) {
      fail(line, fmt::format("model \"{}\": the file is for \"{}\" (line {}); one model per batch", model,
                             input.model, model_line));
      continue;
    }
    input.requests.push_back(std::move(r).value());
  }
  if (problems.empty() && more == 0 && input.requests.empty()) {
    return Status::InvalidArgument(fmt::format("{}: no requests", source));
  }
  for (const auto& [what, seen] : repeats) {
    if (seen.second > 1)
      problems[seen.first] += fmt::format(" (and {} more lines the same)", seen.second - 1);
  }
  if (!problems.empty()) {
    std::string all = fmt::format("{}", fmt::join(problems, "\n"));
    if (more > 0) all += fmt::format("\n{}: and {} more problems", source, more);
    return Status::InvalidArgument(all);
  }
  return input;
}

Result<BatchInput> ReadBatchFile(const std::string& path, const BatchDefaults& defaults) {
  // Read by the runner and the CLI as the batch's user: a link is followed
  // with that user's rights; a FIFO or a device is refused, never waited on.
  Result<std::string> read =
      ReadForeignFile(path, {.max_bytes = kMaxBatchBytes + 1, .follow_final_link = true});
  if (!read.ok()) return Status::InvalidArgument(read.status().message());
  std::string text = std::move(read).value();
  if (text.size() > kMaxBatchBytes) {
    return Status::InvalidArgument(
        fmt::format("{}: larger than {} MiB; split it", path, kMaxBatchBytes >> 20));
  }
  return ParseBatchInput(text, path, defaults);
}

}  // namespace tarmac::backfill
