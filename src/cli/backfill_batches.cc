// SPDX-License-Identifier: Apache-2.0
//
// tarmac backfill submit, list, status, pause, resume and cancel: the
// agent's backfill.* methods (docs/protocol.md) for people.
#include <fmt/format.h>
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "backfill/batch_input.h"
#include "backfill/batch_spec.h"
#include "cli/backfill_command.h"
#include "cli/lease_exit.h"
#include "cli/options.h"
#include "cli/table.h"
#include "client/agent_client.h"
#include "common/terminal_text.h"
#include "common/units.h"

namespace tarmac::cli {
namespace {

using nlohmann::json;

std::string WithSuffix(const std::string& input, const char* suffix) {
  std::string base = input;
  if (base.size() > 6 && base.substr(base.size() - 6) == ".jsonl") base.resize(base.size() - 6);
  return base + suffix;
}

std::string Absolute(const std::string& path) {
  if (!path.empty() && path[0] == '/') return path;
  char cwd[PATH_MAX];
  return getcwd(cwd, sizeof cwd) != nullptr ? std::string(cwd) + "/" + path : path;
}

std::string Duration(double seconds) {
  if (seconds < 0) return "?";
  return FormatDuration(std::chrono::seconds(static_cast<int64_t>(seconds + 0.5)));
}

// "1200/5000 (24%) [######              ]"
std::string Bar(int64_t finished, int64_t total, int width) {
  double ratio =
      total > 0 ? std::clamp(static_cast<double>(finished) / static_cast<double>(total), 0.0, 1.0) : 0;
  int filled = static_cast<int>(ratio * width + 0.5);
  return fmt::format("{}/{} ({:.0f}%) [{}{}]", finished, total, ratio * 100,
                     std::string(static_cast<size_t>(filled), '#'),
                     std::string(static_cast<size_t>(width - filled), ' '));
}

std::string Summary(const json& b) {
  const json& p = b["progress"];
  int64_t done = p.value("done", int64_t{0});
  int64_t failed = p.value("failed", int64_t{0});
  int64_t total = p.value("total", int64_t{0});
  std::string state = b.value("state", "");
  std::string line =
      fmt::format("batch {} {}: {}", b.value("id", int64_t{0}), state, Bar(done + failed, total, 24));
  if (failed > 0) line += fmt::format(", {} failed", failed);
  line += fmt::format("\n  {:.1f} requests/s, {:.0f} tokens/s, {} tokens; GPU-hours {:.3f}; preemptions {}",
                      p.value("requests_per_second", 0.0), p.value("tokens_per_second", 0.0),
                      p.value("completion_tokens", int64_t{0}), p.value("gpu_seconds", 0.0) / 3600,
                      p.value("preemptions", int64_t{0}));
  if (b.contains("eta_s") && b["eta_s"].is_number())
    line += fmt::format("; ETA {}", Duration(b["eta_s"].get<double>()));
  std::string phase = p.value("phase", "");
  if (state == "running" && !phase.empty()) line += "\n  " + phase;
  std::string problem = p.value("problem", "");
  std::string message = b.value("message", "");
  if (!problem.empty() && state != "done" && problem != message) line += "\n  problem: " + problem;
  if (!message.empty()) line += "\n  " + message;
  line += fmt::format("\n  results {}\n  errors  {}", b.value("output", ""), b.value("errors", ""));
  return line;
}

int Submit(const client::AgentClient& agent, const BackfillOptions& o) {
  Result<backfill::BatchInput> in = backfill::ReadBatchFile(o.check.path, {o.check.model});
  if (!in.ok()) {
    std::fprintf(stderr, "%s\n", in.status().message().c_str());
    return kExitUsage;
  }
  if (o.url.empty() && o.engine_command.empty()) {
    std::fprintf(stderr,
                 "tarmac: backfill submit: say where the requests go: --url (a running server) or "
                 "--engine-command (started in each lease)\n");
    return kExitUsage;
  }
  // The spec as the agent and the runner read it (backfill/batch_spec.h);
  // what the agent decides (id, owner, state, times) it sets itself.
  backfill::BatchSpec spec;
  spec.input = Absolute(o.check.path);
  spec.output = Absolute(o.output.empty() ? WithSuffix(spec.input, ".results.jsonl") : o.output);
  spec.errors = Absolute(o.errors.empty() ? WithSuffix(spec.input, ".errors.jsonl") : o.errors);
  spec.model = in.value().model;
  spec.engine = {o.engine, o.url, o.engine_command, o.ready_timeout_s};
  spec.gpus = o.gpus;
  spec.concurrency = o.concurrency;
  spec.max_retries = o.max_retries;
  spec.request_timeout_s = o.request_timeout_s;
  spec.total = static_cast<int64_t>(in.value().requests.size());
  Result<json> r = agent.Call("backfill.submit", backfill::EncodeBatchSpec(spec));
  if (!r.ok()) return LeaseExit("backfill submit", r.status());
  const json& b = r.value()["batch"];
  if (o.json) {
    std::printf("%s\n", b.dump(2).c_str());
    return kExitOk;
  }
  std::printf(
      "batch %lld submitted: %zu requests for %s on up to %d GPU%s\n"
      "results in %s\n"
      "follow it: tarmac backfill status %lld --watch\n",
      static_cast<long long>(b.value("id", int64_t{0})), in.value().requests.size(),
      ForTerminal(in.value().model).c_str(), o.gpus, o.gpus == 1 ? "" : "s",
      ForTerminal(b.value("output", "")).c_str(), static_cast<long long>(b.value("id", int64_t{0})));
  return kExitOk;
}

int List(const client::AgentClient& agent, const BackfillOptions& o) {
  Result<json> r = agent.Call("backfill.list", json::object());
  if (!r.ok()) return LeaseExit("backfill list", r.status());
  if (o.json) {
    std::printf("%s\n", r.value().dump(2).c_str());
    return kExitOk;
  }
  const json& batches = r.value()["batches"];
  if (batches.empty()) {
    std::printf("No batches. Submit one: tarmac backfill submit FILE --model M --url URL\n");
    return kExitOk;
  }
  std::vector<std::vector<std::string>> rows;
  for (const json& b : batches) {
    const json& p = b["progress"];
    std::string note = b.value("state", "") == "running" ? p.value("phase", "") : b.value("message", "");
    if (!p.value("problem", "").empty() && b.value("state", "") != "done") note = p.value("problem", "");
    rows.push_back(
        {std::to_string(b.value("id", int64_t{0})), b.value("user", ""), b.value("state", ""),
         fmt::format("{}/{}", p.value("done", int64_t{0}), p.value("total", b.value("total", int64_t{0}))),
         std::to_string(p.value("failed", int64_t{0})),
         fmt::format("{:.3f}", p.value("gpu_seconds", 0.0) / 3600),
         std::to_string(p.value("preemptions", int64_t{0})), note});
  }
  std::printf("%s", RenderTable({{"ID", true},
                                 {"USER"},
                                 {"STATE"},
                                 {"DONE", true},
                                 {"FAILED", true},
                                 {"GPU-H", true},
                                 {"PREEMPTED", true},
                                 {"NOTE"}},
                                rows)
                        .c_str());
  return kExitOk;
}

// Why each GPU does or does not take backfill yet, one line each, for a
// batch that waits: "GPU 2: idle 3m of idle_for 10m; starts at 17:42".
std::string GateLines(const json& gates) {
  std::string out;
  for (const json& g : gates.value("gpus", json::array())) {
    std::string device = fmt::format("GPU {}", g.value("gpu", 0));
    if (g.contains("mig_profile"))
      device += " " + g.value("mig_profile", "") + " " + g.value("uuid", "").substr(0, 12);
    std::string line = fmt::format("\n  {}: {}", device, g.value("why", ""));
    if (g.contains("starts_at_unix") && g["starts_at_unix"].is_number()) {
      std::time_t at = static_cast<std::time_t>(g["starts_at_unix"].get<int64_t>());
      std::tm local{};
      localtime_r(&at, &local);
      line += fmt::format("; starts at {:02d}:{:02d}", local.tm_hour, local.tm_min);
    }
    out += line;
  }
  return out;
}

// Without a batch: each GPU and MIG instance as backfill's gate sees it.
int ShowGates(const client::AgentClient& agent, const BackfillOptions& o) {
  Result<json> r = agent.Call("backfill.gpus", json::object());
  if (!r.ok()) return LeaseExit("backfill status", r.status());
  if (o.json) {
    std::printf("%s\n", r.value().dump(2).c_str());
    return kExitOk;
  }
  const json& gates = r.value();
  if (gates.value("idle_for", "") == "auto") {
    std::printf("idle_for auto: settle %s, min_run %s\n",
                Duration(gates.value("settle_seconds", 0.0)).c_str(),
                Duration(gates.value("min_run_seconds", 0.0)).c_str());
  } else {
    std::printf("idle_for %s\n", Duration(gates.value("idle_for_seconds", 0.0)).c_str());
  }
  std::string lines = GateLines(gates);
  std::printf("%s\n", lines.empty() ? "  no GPU seen yet" : ForTerminalLines(lines.substr(1)).c_str());
  return kExitOk;
}

int ShowStatus(const client::AgentClient& agent, const BackfillOptions& o, Clock* clock) {
  if (o.id == 0) return ShowGates(agent, o);
  bool is_tty = isatty(STDOUT_FILENO) != 0;
  int shown_lines = 0;
  for (;;) {
    Result<json> r = agent.Call("backfill.get", {{"id", o.id}});
    if (!r.ok()) return LeaseExit("backfill status", r.status());
    const json& b = r.value()["batch"];
    std::string state = b.value("state", "");
    backfill::BatchState s = backfill::BatchState::kQueued;
    backfill::ParseBatchState(state, &s);
    if (o.json) {
      std::printf("%s\n", b.dump(2).c_str());
    } else {
      std::string text = Summary(b);  // Made terminal-safe below, with the gates.
      // Active and on no GPU yet: why not, GPU by GPU.
      if (backfill::IsActive(s) && b["progress"].value("gpus_held", int64_t{0}) == 0) {
        Result<json> gates = agent.Call("backfill.gpus", json::object());
        if (gates.ok()) text += GateLines(gates.value());
      }
      text = ForTerminalLines(text);
      if (o.watch && is_tty && shown_lines > 0) std::printf("\033[%dA\033[J", shown_lines);
      std::printf("%s\n", text.c_str());
      shown_lines = 1 + static_cast<int>(std::count(text.begin(), text.end(), '\n'));
    }
    std::fflush(stdout);
    if (!o.watch || !backfill::IsActive(s)) {
      if (s == backfill::BatchState::kFailed) return kExitError;
      return kExitOk;
    }
    clock->SleepUntil(clock->SteadyNow() + std::chrono::seconds(1), {});
  }
}

int Change(const client::AgentClient& agent, const std::string& verb, const BackfillOptions& o) {
  std::string what = "backfill " + verb;
  Result<json> r = agent.Call("backfill." + verb, {{"id", o.id}});
  if (!r.ok()) return LeaseExit(what.c_str(), r.status());
  const json& b = r.value()["batch"];
  if (o.json) {
    std::printf("%s\n", b.dump(2).c_str());
  } else {
    std::printf("batch %lld %s\n", static_cast<long long>(o.id), ForTerminal(b.value("state", "")).c_str());
  }
  return kExitOk;
}

}  // namespace

int RunBackfillBatches(const std::string& name, const GlobalOptions& global, const BackfillOptions& options,
                       Clock* clock) {
  client::AgentClient agent(global.socket);
  if (name == "submit") return Submit(agent, options);
  if (name == "list") return List(agent, options);
  if (name == "status") return ShowStatus(agent, options, clock);
  return Change(agent, name, options);
}

}  // namespace tarmac::cli
