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
#include "backfill/batch_view_json.h"
#include "cli/backfill_command.h"
#include "cli/lease_exit.h"
#include "cli/options.h"
#include "cli/table.h"
#include "client/agent_client.h"
#include "common/terminal_text.h"
#include "common/units.h"
#include "leases/backfill_gates_json.h"

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

std::string Summary(const backfill::BatchView& b) {
  const backfill::BatchProgress& p = b.progress;
  std::string state = backfill::BatchStateName(b.spec.state);
  std::string line = fmt::format("batch {} {}: {}", b.spec.id, state, Bar(p.done + p.failed, p.total, 24));
  if (p.failed > 0) line += fmt::format(", {} failed", p.failed);
  line += fmt::format("\n  {:.1f} requests/s, {:.0f} tokens/s, {} tokens; GPU-hours {:.3f}; preemptions {}",
                      p.requests_per_second, p.tokens_per_second, p.completion_tokens, p.gpu_seconds / 3600,
                      p.preemptions);
  if (b.eta_s) line += fmt::format("; ETA {}", Duration(*b.eta_s));
  if (b.spec.state == backfill::BatchState::kRunning && !p.phase.empty()) line += "\n  " + p.phase;
  const std::string& message = b.spec.message;
  if (!p.problem.empty() && b.spec.state != backfill::BatchState::kDone && p.problem != message)
    line += "\n  problem: " + p.problem;
  if (!message.empty()) line += "\n  " + message;
  line += fmt::format("\n  results {}\n  errors  {}", b.spec.output, b.spec.errors);
  return line;
}

// The batch an answer carries; a malformed one is the agent's error.
Result<backfill::BatchView> BatchOf(const Result<json>& answer) {
  if (!answer.ok()) return answer.status();
  Result<backfill::BatchView> b = backfill::DecodeBatchAnswer(answer.value());
  if (!b.ok()) return Status::Corruption("agent: " + b.status().message());
  return b;
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
  Result<backfill::BatchView> b = BatchOf(r);
  if (!b.ok()) return LeaseExit("backfill submit", b.status());
  if (o.json) {
    std::printf("%s\n", r.value()["batch"].dump(2).c_str());
    return kExitOk;
  }
  std::printf(
      "batch %lld submitted: %zu requests for %s on up to %d GPU%s\n"
      "results in %s\n"
      "follow it: tarmac backfill status %lld --watch\n",
      static_cast<long long>(b.value().spec.id), in.value().requests.size(),
      ForTerminal(in.value().model).c_str(), o.gpus, o.gpus == 1 ? "" : "s",
      ForTerminal(b.value().spec.output).c_str(), static_cast<long long>(b.value().spec.id));
  return kExitOk;
}

int List(const client::AgentClient& agent, const BackfillOptions& o) {
  Result<json> r = agent.Call("backfill.list", json::object());
  if (!r.ok()) return LeaseExit("backfill list", r.status());
  if (o.json) {
    std::printf("%s\n", r.value().dump(2).c_str());
    return kExitOk;
  }
  Result<std::vector<backfill::BatchView>> batches = backfill::DecodeBatchList(r.value());
  if (!batches.ok())
    return LeaseExit("backfill list", Status::Corruption("agent: " + batches.status().message()));
  if (batches.value().empty()) {
    std::printf("No batches. Submit one: tarmac backfill submit FILE --model M --url URL\n");
    return kExitOk;
  }
  std::vector<std::vector<std::string>> rows;
  for (const backfill::BatchView& b : batches.value()) {
    const backfill::BatchProgress& p = b.progress;
    std::string note = b.spec.state == backfill::BatchState::kRunning ? p.phase : b.spec.message;
    if (!p.problem.empty() && b.spec.state != backfill::BatchState::kDone) note = p.problem;
    rows.push_back({std::to_string(b.spec.id), b.spec.user, backfill::BatchStateName(b.spec.state),
                    fmt::format("{}/{}", p.done, p.total != 0 ? p.total : b.spec.total),
                    std::to_string(p.failed), fmt::format("{:.3f}", p.gpu_seconds / 3600),
                    std::to_string(p.preemptions), note});
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
std::string GateLines(const leases::GateReport& gates) {
  std::string out;
  for (const leases::GateReport::Device& g : gates.gpus) {
    std::string device = fmt::format("GPU {}", g.gpu);
    if (!g.mig_profile.empty()) device += " " + g.mig_profile + " " + g.uuid.substr(0, 12);
    std::string line = fmt::format("\n  {}: {}", device, g.why);
    if (g.starts_at_unix) {
      std::time_t at = static_cast<std::time_t>(*g.starts_at_unix);
      std::tm local{};
      localtime_r(&at, &local);
      line += fmt::format("; starts at {:02d}:{:02d}", local.tm_hour, local.tm_min);
    }
    if (g.lender != 0)
      line += fmt::format("; lease {} lends it after {}", g.lender, ForTerminal(g.lend_delay_why));
    out += line;
  }
  return out;
}

// backfill.gpus, decoded; a malformed answer is the agent's error.
Result<leases::GateReport> Gates(const client::AgentClient& agent, json* raw = nullptr) {
  Result<json> r = agent.Call("backfill.gpus", json::object());
  if (!r.ok()) return r.status();
  if (raw != nullptr) *raw = r.value();
  Result<leases::GateReport> gates = leases::GateReportFromJson(r.value());
  if (!gates.ok()) return Status::Corruption("agent: " + gates.status().message());
  return gates;
}

// Without a batch: each GPU and MIG instance as backfill's gate sees it.
int ShowGates(const client::AgentClient& agent, const BackfillOptions& o) {
  json raw;
  Result<leases::GateReport> gates = Gates(agent, &raw);
  if (!gates.ok()) return LeaseExit("backfill status", gates.status());
  if (o.json) {
    std::printf("%s\n", raw.dump(2).c_str());
    return kExitOk;
  }
  const leases::GateReport& g = gates.value();
  if (g.is_auto) {
    std::printf("idle_for auto: settle %s, min_run %s\n", Duration(g.settle_seconds).c_str(),
                Duration(g.min_run_seconds).c_str());
  } else {
    std::printf("idle_for %s\n", Duration(g.idle_for_seconds).c_str());
  }
  std::string lines = GateLines(g);
  std::printf("%s\n", lines.empty() ? "  no GPU seen yet" : ForTerminalLines(lines.substr(1)).c_str());
  return kExitOk;
}

int ShowStatus(const client::AgentClient& agent, const BackfillOptions& o, Clock* clock) {
  if (o.id == 0) return ShowGates(agent, o);
  bool is_tty = isatty(STDOUT_FILENO) != 0;
  int shown_lines = 0;
  for (;;) {
    Result<json> r = agent.Call("backfill.get", {{"id", o.id}});
    Result<backfill::BatchView> b = BatchOf(r);
    if (!b.ok()) return LeaseExit("backfill status", b.status());
    backfill::BatchState s = b.value().spec.state;
    if (o.json) {
      std::printf("%s\n", r.value()["batch"].dump(2).c_str());
    } else {
      std::string text = Summary(b.value());  // Made terminal-safe below, with the gates.
      // Active and on no GPU yet: why not, GPU by GPU.
      if (backfill::IsActive(s) && b.value().progress.gpus_held == 0) {
        Result<leases::GateReport> gates = Gates(agent);
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
  Result<backfill::BatchView> b = BatchOf(r);
  if (!b.ok()) return LeaseExit(what.c_str(), b.status());
  if (o.json) {
    std::printf("%s\n", r.value()["batch"].dump(2).c_str());
  } else {
    std::printf("batch %lld %s\n", static_cast<long long>(o.id),
                backfill::BatchStateName(b.value().spec.state));
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
