// SPDX-License-Identifier: Apache-2.0
#include "cli/drain_command.h"

#include <fmt/format.h>

#include <cstdio>

#include "cli/lease_exit.h"
#include "client/agent_client.h"
#include "common/terminal_text.h"

namespace tarmac::cli {

void AddDrainCommands(CLI::App* app, DrainOptions* options, GlobalOptions* global, CLI::App** drain,
                      CLI::App** undrain) {
  *drain = app->add_subcommand(
      "drain",
      "Take a GPU out of allocation (root or the admin group): no new lease, pick or backfill gets it "
      "until tarmac undrain; a lease on it keeps it, and its holder is told. Kept across agent restarts, "
      "shown in status, top, /metrics and fleet status, logged as an event");
  (*drain)->add_option("gpu", options->gpu, "GPU index or UUID")->required();
  (*drain)
      ->add_option("--reason", options->reason, "Why, for everyone who sees it (printable, <= 200 bytes)")
      ->required();
  (*drain)->add_flag("--json", options->json, "The agent's answer as JSON");
  AddSocketOption(*drain, global);
  *undrain = app->add_subcommand(
      "undrain",
      "Put a drained GPU back into allocation (root or the admin group); its readings still count");
  (*undrain)->add_option("gpu", options->gpu, "GPU index or UUID")->required();
  (*undrain)->add_flag("--json", options->json, "The agent's answer as JSON");
  AddSocketOption(*undrain, global);
}

int RunDrain(const GlobalOptions& global, const DrainOptions& options, bool is_undrain) {
  const char* what = is_undrain ? "undrain" : "drain";
  client::AgentClient agent(global.socket);
  client::CallOptions once;
  once.patience = std::chrono::milliseconds(0);
  nlohmann::json params = {{"gpu", options.gpu}};
  if (!is_undrain) params["reason"] = options.reason;
  Result<nlohmann::json> r = agent.Call(is_undrain ? "gpu.undrain" : "gpu.drain", params, once);
  if (!r.ok()) return LeaseExit(what, r.status());
  if (options.json) {
    std::puts(r.value().dump(2).c_str());
    return kExitOk;
  }
  std::string line = is_undrain ? fmt::format("GPU {} undrained: it is given out again when free and healthy",
                                              ForTerminal(options.gpu))
                                : fmt::format("GPU {} drained: no new lease gets it until tarmac undrain {}",
                                              ForTerminal(options.gpu), ForTerminal(options.gpu));
  std::puts(line.c_str());
  return kExitOk;
}

}  // namespace tarmac::cli
