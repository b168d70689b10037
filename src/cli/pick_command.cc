// SPDX-License-Identifier: Apache-2.0
#include "cli/pick_command.h"

#include <fmt/format.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/node_source.h"
#include "cli/pick.h"
#include "cli/status_command.h"
#include "common/units.h"

namespace tarmac::cli {

CLI::App* AddPickCommand(CLI::App* app, PickOptions* options) {
  CLI::App* cmd = app->add_subcommand(
      "pick",
      "Print the best free GPU(s) as UUIDs, for CUDA_VISIBLE_DEVICES=$(tarmac pick). Free as "
      "tarmac run means it: not to drain, no lease, no process outside a lease, recent "
      "utilization at most the limit, the free memory asked. Exit 1 when none fits");
  cmd->add_option("-n,--count,--gpus", options->count, "How many GPUs")
      ->check(CLI::Range(1, 1024))
      ->default_str("1");
  cmd->add_option("--min-free-memory", options->min_free_memory, "Free memory each GPU needs, e.g. 20GiB")
      ->default_str("0");
  cmd->add_option("--max-utilization", options->max_utilization_percent,
                  "Skip GPUs whose recent utilization is above this percent")
      ->check(CLI::Range(0.0, 100.0))
      ->default_str("50");
  cmd->add_option("--window", options->window_seconds, "Seconds of utilization history to judge by")
      ->check(CLI::Range(1, 600))
      ->default_str("10");
  cmd->add_flag("--json", options->json, "Print the choice and the reasons as JSON");
  return cmd;
}

int RunPick(const GlobalOptions& global, const PickOptions& options, Clock* clock, Logger* logger) {
  Result<int64_t> min_free = ParseBytes(options.min_free_memory);
  if (!min_free.ok()) return ExitWith(min_free.status().WithContext("--min-free-memory"));
  Result<std::unique_ptr<NodeSource>> source =
      NodeSource::Open(global, clock, logger, std::chrono::seconds(options.window_seconds));
  if (!source.ok()) return ExitWith(source.status());
  Result<node::NodeView> read = source.value()->Read(std::chrono::seconds(options.window_seconds));
  if (!read.ok()) return ExitWith(read.status());
  const node::NodeView& node_view = read.value();
  PickRequest request;
  request.count = options.count;
  request.min_free_memory_bytes = min_free.value();
  request.max_utilization_ratio = options.max_utilization_percent / 100.0;
  PickResult result = Pick(node_view, request);
  std::string uuids;
  for (const node::GpuView* g : result.chosen) uuids += (uuids.empty() ? "" : ",") + g->info.uuid;
  if (options.json) {
    nlohmann::json j;
    j["uuids"] = nlohmann::json::array();
    j["indices"] = nlohmann::json::array();
    for (const node::GpuView* g : result.chosen) {
      j["uuids"].push_back(g->info.uuid);
      j["indices"].push_back(g->info.index);
    }
    j["rejected"] = result.rejections;
    j["gpus"] = nlohmann::json::array();
    for (const PickJudgement& g : result.gpus) {
      j["gpus"].push_back({{"gpu", g.gpu->info.index},
                           {"uuid", g.gpu->info.uuid},
                           {"verdict", node::VerdictName(g.health.verdict)},
                           {"free", g.is_free},
                           {"chosen", g.is_chosen},
                           {"why", g.why}});
    }
    j["ok"] = !result.chosen.empty();
    std::puts(j.dump(2).c_str());
    return result.chosen.empty() ? kExitError : kExitOk;
  }
  if (result.chosen.empty()) {
    std::string why;
    for (const std::string& r : result.rejections) why += "\n  " + r;
    std::fprintf(stderr, "tarmac: pick: no %d GPU%s fit%s\n", options.count, options.count == 1 ? "" : "s",
                 why.c_str());
    return kExitError;
  }
  std::puts(uuids.c_str());
  return kExitOk;
}

}  // namespace tarmac::cli
