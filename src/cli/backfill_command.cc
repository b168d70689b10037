// SPDX-License-Identifier: Apache-2.0
#include "cli/backfill_command.h"

#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>

#include "backfill/batch_input.h"
#include "cli/options.h"

namespace tarmac::cli {

std::map<std::string, CLI::App*> AddBackfillCommand(CLI::App* app, BackfillOptions* o,
                                                    GlobalOptions* global) {
  CLI::App* cmd = app->add_subcommand("backfill", "Batch inference on idle GPUs (docs/backfill.md)");
  cmd->require_subcommand(1);
  std::map<std::string, CLI::App*> subs;
  CLI::App* check = subs["check"] = cmd->add_subcommand(
      "check",
      "Validate a batch file (OpenAI Batch JSONL, or prompt lines); report every problem with its line");
  check->add_option("file", o->check.path, "The batch file (JSONL)")->required();
  check->add_option("--model", o->check.model, "The model for prompt lines that name none");
  check->add_flag("--json", o->check.json, "Print the summary as JSON");

  CLI::App* submit = subs["submit"] = cmd->add_subcommand(
      "submit",
      "Check a batch file and hand it to the agent, which runs it on idle GPUs under backfill leases: "
      "results in "
      "OpenAI's Batch output format, each custom_id once, surviving preemption and kill -9");
  submit->add_option("file", o->check.path, "The batch file (JSONL)")->required();
  submit->add_option("--model", o->check.model, "The model for prompt lines that name none");
  submit
      ->add_option("--engine", o->engine,
                   "ollama or openai (an OpenAI-compatible server: vLLM, llama.cpp, TGI)")
      ->check(CLI::IsMember({"ollama", "openai"}))
      ->default_str("ollama");
  submit->add_option("--url", o->url, "A running server to use, e.g. http://127.0.0.1:11434");
  submit
      ->add_option(
          "--engine-command", o->engine_command,
          "Start this server in each lease instead, on the lease's GPU and a private port ({port}), e.g. "
          "'ollama serve' or 'vllm serve MODEL --port {port}'")
      ->excludes("--url");
  submit->add_option("--output,-o", o->output, "Results file (default: FILE with .results.jsonl)");
  submit->add_option("--errors", o->errors, "Errors file (default: FILE with .errors.jsonl)");
  submit->add_option("--gpus", o->gpus, "GPUs at most, one engine each")
      ->check(CLI::Range(1, 1024))
      ->default_str("1");
  submit->add_option("--concurrency", o->concurrency, "Requests in flight per GPU")
      ->check(CLI::Range(1, 256))
      ->default_str("4");
  submit->add_option("--max-retries", o->max_retries, "Tries again per request on 5xx and broken connections")
      ->check(CLI::Range(0, 100))
      ->default_str("5");
  submit->add_option("--request-timeout", o->request_timeout_s, "Seconds one request may take")
      ->check(CLI::Range(1, 86400))
      ->default_str("600");
  submit->add_option("--ready-timeout", o->ready_timeout_s, "Seconds a started engine may take to answer")
      ->check(CLI::Range(1, 3600))
      ->default_str("120");
  submit->add_flag("--json", o->json, "Print the batch as JSON");
  submit->footer(
      "Example: tarmac backfill submit prompts.jsonl --model llama3.2 --engine-command 'ollama serve' --gpus "
      "4");

  subs["list"] = cmd->add_subcommand("list", "Every batch: state, progress, GPU time, preemptions");
  subs["list"]->add_flag("--json", o->json, "Print JSON");
  CLI::App* status = subs["status"] =
      cmd->add_subcommand("status",
                          "One batch: done/total, tokens per second, GPU-hours, preemptions, ETA; "
                          "without ID: whether each GPU takes backfill now, and why");
  status->add_option("id", o->id, "The batch")->check(CLI::PositiveNumber);
  status->add_flag("--watch,-w", o->watch, "Follow it with a progress bar until it ends");
  status->add_flag("--json", o->json, "Print JSON");
  for (const char* verb : {"pause", "resume", "cancel"}) {
    const char* what =
        std::string(verb) == "pause"    ? "Stop a batch for now (its GPUs are given back; results stay)"
        : std::string(verb) == "resume" ? "Run a paused or failed batch again, from where it stopped"
                                        : "Stop a batch for good (the results so far stay)";
    subs[verb] = cmd->add_subcommand(verb, what);
    subs[verb]->add_option("id", o->id, "The batch")->required();
    subs[verb]->add_flag("--json", o->json, "Print JSON");
  }
  for (const auto& [name, sub] : subs) {
    if (name != "check") AddSocketOption(sub, global);
  }
  return subs;
}

int RunBackfillCheck(const BackfillCheckOptions& options) {
  Result<backfill::BatchInput> in = backfill::ReadBatchFile(options.path, {options.model});
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
  for (const auto& [url, count] : by_url)
    std::printf(", %lld to %s", static_cast<long long>(count), url.c_str());
  std::printf("\n");
  return kExitOk;
}

}  // namespace tarmac::cli
