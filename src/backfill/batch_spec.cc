// SPDX-License-Identifier: Apache-2.0
#include "backfill/batch_spec.h"

#include <fmt/format.h>

#include <filesystem>

#include "common/enum_names.h"
#include "common/fs.h"
#include "common/json_fields.h"
#include "common/safe_file.h"

namespace tarmac::backfill {
namespace {

using nlohmann::json;

constexpr std::pair<BatchState, const char*> kStateNames[] = {
    {BatchState::kQueued, "queued"},       {BatchState::kRunning, "running"}, {BatchState::kPaused, "paused"},
    {BatchState::kCancelled, "cancelled"}, {BatchState::kDone, "done"},       {BatchState::kFailed, "failed"},
};

}  // namespace

const char* BatchStateName(BatchState state) { return EnumName(kStateNames, state); }

bool ParseBatchState(std::string_view text, BatchState* state) { return ParseEnum(kStateNames, text, state); }

json EncodeBatchSpec(const BatchSpec& s) {
  return {{"id", s.id},
          {"input", s.input},
          {"output", s.output},
          {"errors", s.errors},
          {"model", s.model},
          {"engine",
           {{"kind", s.engine.kind},
            {"url", s.engine.url},
            {"command", s.engine.command},
            {"ready_timeout_s", s.engine.ready_timeout_s}}},
          {"gpus", s.gpus},
          {"concurrency", s.concurrency},
          {"max_retries", s.max_retries},
          {"request_timeout_s", s.request_timeout_s},
          {"total", s.total},
          {"uid", s.uid},
          {"user", s.user},
          {"state", BatchStateName(s.state)},
          {"message", s.message},
          {"submitted_unix", s.submitted_unix},
          {"finished_unix", s.finished_unix}};
}

Result<BatchSpec> DecodeBatchSpec(const json& j, std::string_view source) {
  JsonFields f(j, std::string(source));
  BatchSpec s;
  for (auto [key, out] :
       {std::pair{"input", &s.input}, std::pair{"output", &s.output}, std::pair{"errors", &s.errors},
        std::pair{"model", &s.model}, std::pair{"user", &s.user}, std::pair{"message", &s.message}}) {
    f.Optional(key, out);
  }
  for (auto [key, out] :
       {std::pair{"gpus", &s.gpus}, std::pair{"concurrency", &s.concurrency},
        std::pair{"max_retries", &s.max_retries}, std::pair{"request_timeout_s", &s.request_timeout_s}}) {
    f.Optional(key, out);
  }
  for (auto [key, out] :
       {std::pair{"id", &s.id}, std::pair{"total", &s.total}, std::pair{"uid", &s.uid},
        std::pair{"submitted_unix", &s.submitted_unix}, std::pair{"finished_unix", &s.finished_unix}}) {
    f.Optional(key, out);
  }
  JsonFields engine = f.Object("engine");
  engine.Optional("kind", &s.engine.kind);
  engine.Optional("url", &s.engine.url);
  engine.Optional("command", &s.engine.command);
  engine.Optional("ready_timeout_s", &s.engine.ready_timeout_s);
  std::string state = "queued";
  f.Optional("state", &state);
  if (f.ok() && !ParseBatchState(state, &s.state)) f.Fail("state", "expected " + EnumNameList(kStateNames));
  if (Status st = f.status(); !st.ok()) return st;
  return s;
}

Status CheckBatchSpec(const BatchSpec& s) {
  auto bad = [](std::string what) { return Status::InvalidArgument(std::move(what)); };
  for (auto [name, path] :
       {std::pair{"input", &s.input}, std::pair{"output", &s.output}, std::pair{"errors", &s.errors}}) {
    if (path->empty() || path->front() != '/')
      return bad(fmt::format("{}: an absolute path is needed", name));
  }
  // One file has many spellings ("d//f", "d/./f", "d/x/../f"): compared
  // in their normal form here; links and hard links are caught by the
  // runner, which compares the opened files themselves.
  auto normal = [](const std::string& p) { return std::filesystem::path(p).lexically_normal().string(); };
  std::string input = normal(s.input), output = normal(s.output), errors = normal(s.errors);
  if (output == input || errors == input || output == errors) {
    return bad("input, output and errors must be three different files");
  }
  if (s.engine.kind != "ollama" && s.engine.kind != "openai") {
    return bad(fmt::format("engine kind \"{}\": ollama or openai", s.engine.kind));
  }
  if (s.engine.url.empty() == s.engine.command.empty()) {
    return bad("engine: give either a url (a running server) or a command (started in each lease)");
  }
  if (!s.engine.url.empty() && s.engine.url.rfind("http://", 0) != 0) {
    return bad(fmt::format("engine url \"{}\": http://HOST:PORT", s.engine.url));
  }
  if (s.gpus < 1 || s.gpus > 1024) return bad(fmt::format("gpus {}: 1 to 1024", s.gpus));
  if (s.total < 0) return bad(fmt::format("total {}: the number of requests, 0 or more", s.total));
  if (s.concurrency < 1 || s.concurrency > 256)
    return bad(fmt::format("concurrency {}: 1 to 256", s.concurrency));
  if (s.max_retries < 0 || s.max_retries > 100)
    return bad(fmt::format("max_retries {}: 0 to 100", s.max_retries));
  if (s.request_timeout_s < 1 || s.request_timeout_s > 86400) {
    return bad(fmt::format("request_timeout_s {}: 1 to 86400", s.request_timeout_s));
  }
  if (s.engine.ready_timeout_s < 1 || s.engine.ready_timeout_s > 3600) {
    return bad(fmt::format("engine ready_timeout_s {}: 1 to 3600", s.engine.ready_timeout_s));
  }
  return Status::OK();
}

json EncodeProgress(const BatchProgress& p) {
  return {{"runner_pid", p.runner_pid},
          {"total", p.total},
          {"done", p.done},
          {"failed", p.failed},
          {"in_flight", p.in_flight},
          {"retries", p.retries},
          {"completion_tokens", p.completion_tokens},
          {"tokens_per_second", p.tokens_per_second},
          {"requests_per_second", p.requests_per_second},
          {"gpu_seconds", p.gpu_seconds},
          {"preemptions", p.preemptions},
          {"gpus_held", p.gpus_held},
          {"phase", p.phase},
          {"problem", p.problem},
          {"updated_unix", p.updated_unix}};
}

BatchProgress DecodeProgress(const json& j) {
  BatchProgress p;
  if (!j.is_object()) return p;
  // Field by field: one of the wrong type (the runner's file is the batch
  // user's to write) is left at its default, the others still read.
  auto Take = [&j](const char* key, auto* out) { JsonFields(j, "progress").Optional(key, out); };
  Take("runner_pid", &p.runner_pid);
  Take("total", &p.total);
  Take("done", &p.done);
  Take("failed", &p.failed);
  Take("in_flight", &p.in_flight);
  Take("retries", &p.retries);
  Take("completion_tokens", &p.completion_tokens);
  Take("tokens_per_second", &p.tokens_per_second);
  Take("requests_per_second", &p.requests_per_second);
  Take("gpu_seconds", &p.gpu_seconds);
  Take("preemptions", &p.preemptions);
  Take("gpus_held", &p.gpus_held);
  Take("phase", &p.phase);
  Take("problem", &p.problem);
  Take("updated_unix", &p.updated_unix);
  return p;
}

double EtaSeconds(const BatchProgress& p) {
  int64_t left = p.total - p.done - p.failed;
  if (left <= 0) return 0;
  if (p.requests_per_second <= 0) return -1;
  return static_cast<double>(left) / p.requests_per_second;
}

Status WriteJsonFile(const std::string& path, const json& j) {
  return WriteFileAtomically(path, j.dump(2) + "\n");
}

Result<json> ReadJsonFile(const std::string& path) {
  constexpr size_t kMaxBytes = size_t{1} << 20;
  Result<std::string> text = ReadForeignFile(path, {.max_bytes = kMaxBytes + 1});
  if (!text.ok()) return text.status();
  if (text.value().size() > kMaxBytes) return Status::Corruption(fmt::format("{}: larger than 1 MiB", path));
  json j = json::parse(text.value(), nullptr, false);
  if (j.is_discarded()) return Status::Corruption(fmt::format("{}: not valid JSON", path));
  return j;
}

}  // namespace tarmac::backfill
