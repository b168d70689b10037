// SPDX-License-Identifier: Apache-2.0
#include "cli/backfill_command.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>

#include "backfill/batch_input.h"
#include "cli/options.h"
#include "common/proc_files.h"

namespace tarmac::cli {

// A batch file is refused over this (OpenAI's Batch API allows 200 MB).
constexpr size_t kMaxBatchBytes = size_t{256} << 20;

CLI::App* AddBackfillCommand(CLI::App* app, BackfillCheckOptions* options, CLI::App** check) {
  CLI::App* cmd = app->add_subcommand("backfill", "Batch inference on idle GPUs (docs/backfill.md)");
  cmd->require_subcommand(1);
  *check = cmd->add_subcommand(
      "check", "Validate a batch file (OpenAI Batch JSONL, or prompt lines); report every problem with its line");
  (*check)->add_option("file", options->path, "The batch file (JSONL)")->required();
  (*check)->add_option("--model", options->model, "The model for prompt lines that name none");
  (*check)->add_flag("--json", options->json, "Print the summary as JSON");
  return cmd;
}

int RunBackfillCheck(const BackfillCheckOptions& options) {
  std::string text;
  if (!ReadSmallFile(options.path, &text, kMaxBatchBytes + 1)) {
    std::fprintf(stderr, "tarmac: backfill check: %s: %s\n", options.path.c_str(), std::strerror(errno));
    return kExitUsage;
  }
  if (text.size() > kMaxBatchBytes) {
    std::fprintf(stderr, "tarmac: backfill check: %s: larger than %zu MiB; split it\n", options.path.c_str(),
                 kMaxBatchBytes >> 20);
    return kExitUsage;
  }
  Result<backfill::BatchInput> in = backfill::ParseBatchInput(text, options.path, {options.model});
  if (!in.ok()) {
    std::fprintf(stderr, "%s\n", in.status().message().c_str());
    return kExitUsage;
  }
  std::map<std::string, int64_t> by_url;
  for (const backfill::BatchRequest& r : in.value().requests) by_url[r.url]++;
  if (options.json) {
    nlohmann::json j = {{"file", options.path},
                        {"model", in.value().model},
                        {"requests", in.value().requests.size()},
                        {"by_url", by_url}};
    std::printf("%s\n", j.dump(2).c_str());
    return kExitOk;
  }
  std::printf("%s: ok: %zu requests for model %s", options.path.c_str(), in.value().requests.size(),
              in.value().model.c_str());
  for (const auto& [url, count] : by_url) std::printf(", %lld to %s", static_cast<long long>(count), url.c_str());
  std::printf("\n");
  return kExitOk;
}

}  // namespace tarmac::cli
