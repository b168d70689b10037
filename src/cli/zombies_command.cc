// SPDX-License-Identifier: Apache-2.0
#include "cli/zombies_command.h"

#include <fmt/format.h>

#include <cstdio>

#include "cli/lease_exit.h"
#include "client/agent_client.h"
#include "common/terminal_text.h"
#include "common/text_wrap.h"
#include "common/units.h"
#include "ipc/unix_server.h"

namespace tarmac::cli {

CLI::App* AddZombiesCommand(CLI::App* app, ZombiesOptions* options, GlobalOptions* global) {
  CLI::App* cmd = app->add_subcommand(
      "zombies",
      "Processes holding GPU memory without computing: how much, how long at 0 % SM, whose, "
      "whether their parent is alive, and under which lease. Thresholds and the allowlist are "
      "[zombies] in the agent's config. Needs the agent (it watches over time).");
  cmd->add_flag("--json", options->json, "The agent's answer as JSON (docs/protocol.md)");
  cmd->add_flag(
      "--kill", options->kill,
      "Terminate them (SIGTERM, then SIGKILL after [leases] kill_grace): your own, or all as an admin. "
      "Each PID's start time and owner are re-verified first");
  cmd->add_option("--pid", options->pid, "With --kill: only this process")->check(CLI::PositiveNumber);
  AddSocketOption(cmd, global);
  return cmd;
}

std::string RenderZombies(const sched::ZombieReport& report) {
  const sched::ZombiePolicy& policy = report.policy;
  std::string rule =
      fmt::format("at least {} at 0 % SM for {}", FormatBytes(policy.min_memory_bytes),
                  FormatDuration(std::chrono::duration_cast<std::chrono::seconds>(policy.idle_for)));
  if (report.zombies.empty()) {
    // Say what was not looked at, so that "none" does not contradict a
    // holder that `tarmac status` flags.
    std::string left_out;
    if (!policy.includes_system_users) {
      left_out +=
          "; processes of root and of users under uid 1000 are not counted ([zombies] include_system_users)";
    }
    if (!policy.allowlist.empty()) {
      left_out +=
          fmt::format("; nor servers that hold memory by design ({})", fmt::join(policy.allowlist, ", "));
    }
    return WrapText(fmt::format("No zombies: no process holds {}{}.", rule, left_out), 100, 0, 2) + "\n";
  }
  std::string out = fmt::format("{:<4} {:>8}  {:<12} {:>10}  {:>9}  {:<16} {:<6} {}\n", "GPU", "PID", "USER",
                                "MEMORY", "IDLE FOR", "PARENT", "LEASE", "COMMAND");
  for (const sched::ZombieEvidence& z : report.zombies) {
    std::string parent = z.is_orphaned ? "gone (orphan)" : fmt::format("{} (alive)", z.parent_pid);
    std::string lease = z.lease_id ? std::to_string(*z.lease_id) : "none";
    std::string head = fmt::format("{:<4} {:>8}  {:<12} {:>10}  {:>9}  {:<16} {:<6} ", z.gpu_index, z.pid,
                                   z.user.empty() ? "?" : z.user, FormatBytes(z.memory_bytes),
                                   FormatDuration(z.idle_for), parent, lease);
    // The command in what is left of 100 columns.
    std::string command = z.command;
    size_t room = head.size() + 12 < 100 ? 100 - head.size() : 12;
    if (command.size() > room) command = command.substr(0, room - 3) + "...";
    out += head + command + "\n";
  }
  out += fmt::format("{} zombie{}: processes holding {}.\n", report.zombies.size(),
                     report.zombies.size() == 1 ? "" : "s", rule);
  return out;
}

namespace {

// What zombies.kill did, a line each; the exit code says whether any was
// refused (not permitted) or skipped (an error).
int SayKills(const sched::ZombieKills& kills) {
  for (const sched::ZombieKill& z : kills.terminated) {
    std::printf("terminated: pid %lld of %s on GPU %d (SIGTERM; SIGKILL if it outlives the grace period)\n",
                static_cast<long long>(z.pid), ForTerminal(z.user).c_str(), z.gpu);
  }
  for (auto [kind, list] : {std::pair{"refused", &kills.refused}, std::pair{"skipped", &kills.skipped}}) {
    for (const sched::ZombieKill& z : *list) {
      std::printf("%s: pid %lld: %s\n", kind, static_cast<long long>(z.pid), ForTerminal(z.why).c_str());
    }
  }
  if (kills.terminated.empty() && kills.refused.empty() && kills.skipped.empty())
    std::printf("No zombies to terminate.\n");
  if (!kills.refused.empty()) return kExitNotPermitted;
  return kills.skipped.empty() ? kExitOk : kExitError;
}

}  // namespace

int RunZombies(const GlobalOptions& global, const ZombiesOptions& options) {
  if (options.pid != 0 && !options.kill)
    return LeaseExit("zombies", Status::InvalidArgument("--pid needs --kill"));
  if (options.kill) {
    nlohmann::json params = nlohmann::json::object();
    if (options.pid != 0) params["pid"] = options.pid;
    Result<nlohmann::json> r =
        client::AgentClient(global.socket).Call("zombies.kill", params, {std::chrono::milliseconds(0)});
    if (!r.ok()) return LeaseExit("zombies --kill", r.status());
    Result<sched::ZombieKills> kills = sched::ZombieKillsFromJson(r.value());
    if (!kills.ok())
      return LeaseExit("zombies --kill", Status::Corruption("agent: " + kills.status().message()));
    if (!options.json) return SayKills(kills.value());
    std::printf("%s\n", r.value().dump(2).c_str());
    if (!kills.value().refused.empty()) return kExitNotPermitted;
    return kills.value().skipped.empty() ? kExitOk : kExitError;
  }
  ipc::Request request;
  request.method = "zombies";
  Result<nlohmann::json> answer = ipc::CallAgent(global.socket, request, std::chrono::seconds(5));
  if (!answer.ok()) {
    std::fprintf(stderr, "tarmac: zombies needs the agent, which watches processes over time: %s\n%s\n",
                 answer.status().ToString().c_str(), kAgentHint);
    return kExitNoAgent;
  }
  if (options.json) {
    std::printf("%s\n", answer.value().dump(2).c_str());
    return kExitOk;
  }
  Result<sched::ZombieReport> report = sched::ZombiesFromJson(answer.value());
  if (!report.ok()) return LeaseExit("zombies", Status::Corruption("agent: " + report.status().message()));
  std::string text = RenderZombies(report.value());
  std::fwrite(text.data(), 1, text.size(), stdout);
  return kExitOk;
}

}  // namespace tarmac::cli
