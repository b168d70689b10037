// SPDX-License-Identifier: Apache-2.0
//
// tarmac: see, allocate, reclaim and backfill GPUs. This file reads like a
// table of contents: parse the command line, run the chosen command, map its
// result to an exit code (0 ok, 1 error, 2 usage, 3 no GPU driver).
#include <CLI/CLI.hpp>
#include <cstdio>

#include "cli/agent_command.h"
#include "cli/backfill_command.h"
#include "cli/completion.h"
#include "cli/doctor_command.h"
#include "cli/help_format.h"
#include "cli/history_command.h"
#include "cli/lease_commands.h"
#include "cli/options.h"
#include "cli/pick_command.h"
#include "cli/query_command.h"
#include "cli/report_command.h"
#include "cli/run_command.h"
#include "cli/sibling_program.h"
#include "cli/slurm_command.h"
#include "cli/status_command.h"
#include "cli/web_command.h"
#include "cli/zombies_command.h"
#include "common/clock.h"
#include "common/closest_name.h"
#include "common/log.h"

#ifndef TARMAC_VERSION
#define TARMAC_VERSION "dev"
#endif

namespace {

// Every top-level command, for NamedCommand.
constexpr const char* kCommands[] = {
    "status",  "query",  "pick",     "agent", "config",     "history", "report",  "export", "store",
    "zombies", "web",    "run",      "shell", "reserve",    "extend",  "release", "leases", "queue",
    "events",  "doctor", "backfill", "slurm", "completion", "fleet",   "top"};

bool IsKnownCommand(const std::string& name) {
  for (const char* c : kCommands) {
    if (name == c) return true;
  }
  return false;
}

// The command named on the line: the first word that is neither an option
// nor the value of a global option that takes one; "" when there is none.
std::string NamedCommand(int argc, char** argv) {
  static constexpr const char* kTakesValue[] = {"--backend",  "--socket",  "--nvml-library",
                                                "--scenario", "--sim-dir", "--log-level"};
  for (int i = 1; i < argc; ++i) {
    std::string word = argv[i];
    if (word == "--") return "";
    if (word.empty() || word[0] != '-') return word;
    for (const char* option : kTakesValue) {
      if (word == option) ++i;  // Its value is the next word.
    }
  }
  return "";
}

// The option names `cmd` (and its parents) take, for "did you mean".
std::vector<std::string> OptionNames(const CLI::App* cmd) {
  std::vector<std::string> names;
  for (; cmd != nullptr; cmd = cmd->get_parent()) {
    for (const CLI::Option* o : cmd->get_options()) {
      for (const std::string& n : o->get_lnames()) names.push_back("--" + n);
    }
  }
  return names;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace tarmac::cli;  // NOLINT: main only.
  // Bare `tarmac` shows the status, as bare nvidia-smi does.
  char status_word[] = "status";
  char* status_argv[] = {argv[0], status_word, nullptr};
  if (argc == 1) {
    argc = 2;
    argv = status_argv;
  }
  CLI::App app("tarmac: every GPU and every process on it, at a glance.\n", "tarmac");
  app.formatter(std::make_shared<HelpFormatter>());
  app.set_version_flag("--version", std::string("tarmac ") + TARMAC_VERSION);
  app.require_subcommand(1);

  GlobalOptions global;
  AddGlobalOptions(&app, &global);
  // A one-shot command starts in a few milliseconds: only the command named
  // on the line is built (all of them for --help, no command, or one that
  // does not exist, whose error lists them).
  const std::string named = NamedCommand(argc, argv);
  auto wants = [&named](std::initializer_list<const char*> names) {
    // Completion scripts name every command.
    if (named.empty() || !IsKnownCommand(named) || named == "completion") return true;
    for (const char* n : names) {
      if (named == n) return true;
    }
    return false;
  };
  // `tarmac fleet ...` is tarmac-fleet's (its own options and --help).
  if (named == "fleet") {
    int at = 1;
    while (at < argc && std::string(argv[at]) != "fleet") ++at;
    std::vector<std::string> rest = {"tarmac-fleet"};
    for (int i = at + 1; i < argc; ++i) rest.emplace_back(argv[i]);
    return ExecSibling("tarmac-fleet", rest);
  }
  // `tarmac top ...` is tarmac-top's; the global options before `top` go along.
  if (named == "top") {
    std::vector<std::string> rest = {"tarmac-top"};
    bool skipped = false;
    for (int i = 1; i < argc; ++i) {
      if (!skipped && std::string(argv[i]) == "top") {
        skipped = true;
        continue;
      }
      rest.emplace_back(argv[i]);
    }
    return ExecSibling("tarmac-top", rest);
  }
  if (wants({"top"})) {
    app.add_subcommand("top",
                       "Every GPU, process, lease and the queue, live in the terminal: sort, filter, select "
                       "and signal your own processes (docs/cli.md)");
  }
  if (wants({"fleet"})) {
    app.add_subcommand("fleet",
                       "Every node's GPUs at once, from the Prometheus that scrapes their agents "
                       "(tarmac fleet status; docs/fleet.md)");
  }
  StatusOptions status;
  QueryOptions query;
  PickOptions pick;
  CLI::App* status_cmd = wants({"status"}) ? AddStatusCommand(&app, &status) : nullptr;
  CLI::App* query_cmd = wants({"query"}) ? AddQueryCommand(&app, &query) : nullptr;
  CLI::App* pick_cmd = wants({"pick"}) ? AddPickCommand(&app, &pick) : nullptr;
  AgentCommandOptions agent;
  CLI::App* agent_cmd = wants({"agent"}) ? AddAgentCommand(&app, &agent) : nullptr;
  ConfigCheckOptions config_check;
  CLI::App* config_check_cmd = nullptr;
  if (wants({"config"})) AddConfigCommand(&app, &config_check, &config_check_cmd);
  HistoryOptions history;
  CLI::App* history_cmd = wants({"history"}) ? AddHistoryCommand(&app, &history) : nullptr;
  ReportOptions report;
  CLI::App* report_cmd = wants({"report"}) ? AddReportCommand(&app, &report) : nullptr;
  ExportOptions export_options;
  CLI::App* export_cmd = wants({"export"}) ? AddExportCommand(&app, &export_options) : nullptr;
  StoreInfoOptions store_info;
  CLI::App* store_info_cmd = nullptr;
  if (wants({"store"})) AddStoreCommand(&app, &store_info, &store_info_cmd);
  ZombiesOptions zombies;
  CLI::App* zombies_cmd = wants({"zombies"}) ? AddZombiesCommand(&app, &zombies, &global) : nullptr;
  RunOptions run;
  CLI::App* run_cmd = wants({"run"}) ? AddRunCommand(&app, &run, &global) : nullptr;
  ShellOptions shell;
  CLI::App* shell_cmd = wants({"shell"}) ? AddShellCommand(&app, &shell, &global) : nullptr;
  LeaseCommands lease_commands;
  if (wants({"reserve", "extend", "release", "leases", "queue", "events"})) {
    AddLeaseCommands(&app, &lease_commands, &global);
  }
  WebOptions web;
  CLI::App* web_cmd = wants({"web"}) ? AddWebCommand(&app, &web, &global) : nullptr;
  DoctorOptions doctor;
  CLI::App* doctor_cmd = wants({"doctor"}) ? AddDoctorCommand(&app, &doctor, &global) : nullptr;
  BackfillOptions backfill;
  std::map<std::string, CLI::App*> backfill_cmds;
  if (wants({"backfill"})) backfill_cmds = AddBackfillCommand(&app, &backfill, &global);
  SlurmOptions slurm;
  std::map<std::string, CLI::App*> slurm_cmds;
  if (wants({"slurm"})) slurm_cmds = AddSlurmCommand(&app, &slurm, &global);
  std::string completion_shell;
  CLI::App* completion_cmd = wants({"completion"}) ? AddCompletionCommand(&app, &completion_shell) : nullptr;
  // The exit codes under tarmac --help only (a footer set before the
  // commands are added is copied into each one's help).
  app.footer(std::string(kExitCodesHelp) +
             "\nWithout an agent, commands read the GPUs directly through NVML "
             "(or the simulated world with --backend sim).");
  // Shared options are accepted before or after the command name.
  for (CLI::App* cmd : {status_cmd, query_cmd, pick_cmd}) {
    if (cmd != nullptr) AddGlobalOptions(cmd, &global);
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // Name what was not understood: a command that does not exist, or an
    // option the command does not take.
    std::vector<std::string> left = app.remaining();
    bool is_command_missing = app.get_subcommands().empty() && e.get_exit_code() != 0;
    if (is_command_missing && !left.empty() && !left.front().empty() && left.front()[0] != '-') {
      std::string names;
      for (const CLI::App* sub : app.get_subcommands({}))
        names += (names.empty() ? "" : ", ") + sub->get_name();
      std::vector<std::string> known(std::begin(kCommands), std::end(kCommands));
      std::fprintf(stderr, "tarmac: unknown command '%s'%s (commands: %s; see tarmac --help)\n",
                   left.front().c_str(), tarmac::DidYouMean(left.front(), known).c_str(), names.c_str());
      return kExitUsage;
    }
    // An option the command does not take: name the nearest one it does.
    if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr) {
      CLI::App* cmd = &app;
      while (!cmd->get_subcommands().empty()) cmd = cmd->get_subcommands().front();
      for (const std::string& word : cmd->remaining()) {
        if (word.rfind("--", 0) != 0) continue;
        std::string name = word.substr(0, word.find('='));
        std::fprintf(stderr, "tarmac: %s: unknown option '%s'%s (see tarmac %s --help)\n",
                     cmd->get_name().c_str(), name.c_str(),
                     tarmac::DidYouMean(name, OptionNames(cmd)).c_str(), cmd->get_name().c_str());
        return kExitUsage;
      }
    }
    int code = app.exit(e);
    return code == 0 ? kExitOk : kExitUsage;
  }

  tarmac::Logger logger;
  tarmac::Clock* clock = tarmac::RealClock();
  auto parsed = [](const CLI::App* cmd) { return cmd != nullptr && cmd->parsed(); };
  if (parsed(completion_cmd)) {
    std::fputs(CompletionScript(app, completion_shell).c_str(), stdout);
    return kExitOk;
  }
  if (parsed(status_cmd)) return RunStatus(global, status, clock, &logger);
  if (parsed(query_cmd)) return RunQuery(global, query, clock, &logger);
  if (parsed(pick_cmd)) return RunPick(global, pick, clock, &logger);
  if (parsed(agent_cmd)) return RunAgentCommand(agent);
  if (parsed(config_check_cmd)) return RunConfigCheck(config_check);
  for (const auto& [name, cmd] : backfill_cmds) {
    if (!cmd->parsed()) continue;
    return name == "check" ? RunBackfillCheck(backfill.check)
                           : RunBackfillBatches(name, global, backfill, clock);
  }
  for (const auto& [name, cmd] : slurm_cmds) {
    if (cmd->parsed()) return RunSlurm(name, global, slurm, clock, &logger);
  }
  if (parsed(history_cmd)) return RunHistory(history, clock);
  if (parsed(report_cmd)) return RunReport(report, clock);
  if (parsed(export_cmd)) return RunExport(export_options, clock);
  if (parsed(store_info_cmd)) return RunStoreInfo(store_info);
  if (parsed(zombies_cmd)) return RunZombies(global, zombies);
  if (parsed(doctor_cmd)) return RunDoctor(global, doctor, clock, &logger);
  if (parsed(web_cmd)) return RunWeb(global, web);
  if (parsed(run_cmd)) return RunRun(global, run);
  if (parsed(shell_cmd)) return RunShell(global, shell, clock);
  if (int code = RunLeaseCommands(global, lease_commands, clock); code >= 0) return code;
  return kExitUsage;
}
