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

std::string RenderZombies(const nlohmann::json& answer) {
  const nlohmann::json& policy = answer["policy"];
  std::string rule =
      fmt::format("at least {} at 0 % SM for {}", FormatBytes(policy.value("min_memory_bytes", int64_t{0})),
                  FormatDuration(std::chrono::seconds(policy.value("idle_for_seconds", int64_t{0}))));
  const nlohmann::json& zombies = answer["zombies"];
  if (zombies.empty()) {
    // Say what was not looked at, so that "none" does not contradict a
    // holder that `tarmac status` flags.
    std::string left_out;
    if (policy.value("includes_system_users", true) == false) {
      left_out +=
          "; processes of root and of users under uid 1000 are not counted ([zombies] include_system_users)";
    }
    if (policy.contains("allowlist") && policy["allowlist"].is_array() && !policy["allowlist"].empty()) {
      std::string names;
      for (const nlohmann::json& n : policy["allowlist"]) {
        if (n.is_string()) names += (names.empty() ? "" : ", ") + n.get<std::string>();
      }
      left_out += "; nor servers that hold memory by design (" + names + ")";
    }
    return WrapText(fmt::format("No zombies: no process holds {}{}.", rule, left_out), 100, 0, 2) + "\n";
  }
  std::string out = fmt::format("{:<4} {:>8}  {:<12} {:>10}  {:>9}  {:<16} {:<6} {}\n", "GPU", "PID", "USER",
                                "MEMORY", "IDLE FOR", "PARENT", "LEASE", "COMMAND");
  for (const nlohmann::json& z : zombies) {
    std::string parent = z.value("is_orphaned", false)
                             ? "gone (orphan)"
                             : fmt::format("{} (alive)", z.value("parent_pid", int64_t{0}));
    std::string lease = z["lease"].is_null() ? "none" : std::to_string(z["lease"].get<int64_t>());
    std::string head = fmt::format(
        "{:<4} {:>8}  {:<12} {:>10}  {:>9}  {:<16} {:<6} ", z.value("gpu", 0), z.value("pid", int64_t{0}),
        z.value("user", std::string("?")), FormatBytes(z.value("memory_bytes", int64_t{0})),
        FormatDuration(std::chrono::seconds(z.value("idle_for_seconds", int64_t{0}))), parent, lease);
    // The command in what is left of 100 columns.
    std::string command = z.value("command", std::string());
    size_t room = head.size() + 12 < 100 ? 100 - head.size() : 12;
    if (command.size() > room) command = command.substr(0, room - 3) + "...";
    out += head + command + "\n";
  }
  out += fmt::format("{} zombie{}: processes holding {}.\n", zombies.size(), zombies.size() == 1 ? "" : "s",
                     rule);
  return out;
}

int RunZombies(const GlobalOptions& global, const ZombiesOptions& options) {
  if (options.pid != 0 && !options.kill)
    return LeaseExit("zombies", Status::InvalidArgument("--pid needs --kill"));
  if (options.kill) {
    nlohmann::json params = nlohmann::json::object();
    if (options.pid != 0) params["pid"] = options.pid;
    Result<nlohmann::json> r =
        client::AgentClient(global.socket).Call("zombies.kill", params, {std::chrono::milliseconds(0)});
    if (!r.ok()) return LeaseExit("zombies --kill", r.status());
    if (options.json) {
      std::printf("%s\n", r.value().dump(2).c_str());
    } else {
      for (const nlohmann::json& z : r.value()["terminated"]) {
        std::printf(
            "terminated: pid %lld of %s on GPU %d (SIGTERM; SIGKILL if it outlives the grace period)\n",
            static_cast<long long>(z.value("pid", int64_t{0})),
            ForTerminal(z.value("user", std::string())).c_str(), z.value("gpu", 0));
      }
      for (const char* kind : {"refused", "skipped"}) {
        for (const nlohmann::json& z : r.value()[kind]) {
          std::printf("%s: pid %lld: %s\n", kind, static_cast<long long>(z.value("pid", int64_t{0})),
                      ForTerminal(z.value("why", std::string())).c_str());
        }
      }
      if (r.value()["terminated"].empty() && r.value()["refused"].empty() && r.value()["skipped"].empty()) {
        std::printf("No zombies to terminate.\n");
      }
    }
    if (!r.value()["refused"].empty()) return kExitNotPermitted;
    return r.value()["skipped"].empty() ? kExitOk : kExitError;
  }
  ipc::Request request;
  request.method = "zombies";
  Result<nlohmann::json> answer = ipc::CallAgent(global.socket, request, std::chrono::seconds(5));
  if (!answer.ok()) {
    std::fprintf(stderr, "tarmac: zombies needs the agent, which watches processes over time: %s\n%s\n",
                 answer.status().ToString().c_str(), kAgentHint);
    return kExitNoAgent;
  }
  std::string text = options.json ? answer.value().dump(2) + "\n" : RenderZombies(answer.value());
  std::fwrite(text.data(), 1, text.size(), stdout);
  return kExitOk;
}

}  // namespace tarmac::cli
