// SPDX-License-Identifier: Apache-2.0
//
// tarmac: see, allocate, reclaim and backfill GPUs. This file reads like a
// table of contents: parse the command line, run the chosen command, map its
// result to an exit code (0 ok, 1 error, 2 usage, 3 no GPU driver).
#include <CLI/CLI.hpp>
#include <cstdio>

#include "cli/agent_command.h"
#include "cli/backfill_command.h"
#include "cli/doctor_command.h"
#include "cli/history_command.h"
#include "cli/lease_commands.h"
#include "cli/run_command.h"
#include "cli/report_command.h"
#include "cli/options.h"
#include "cli/pick_command.h"
#include "cli/query_command.h"
#include "cli/status_command.h"
#include "cli/slurm_command.h"
#include "cli/zombies_command.h"
#include "common/clock.h"
#include "common/log.h"

#ifndef TARMAC_VERSION
#define TARMAC_VERSION "dev"
#endif

int main(int argc, char** argv) {
  using namespace tarmac::cli;  // NOLINT: main only.
  CLI::App app("tarmac: every GPU and every process on it, at a glance.\n", "tarmac");
  app.footer(std::string(kExitCodesHelp) +
             "\nWithout an agent, commands read the GPUs directly through NVML "
             "(or the simulated world with --backend sim).");
  app.set_version_flag("--version", std::string("tarmac ") + TARMAC_VERSION);
  app.require_subcommand(1);

  GlobalOptions global;
  AddGlobalOptions(&app, &global);
  StatusOptions status;
  QueryOptions query;
  PickOptions pick;
  CLI::App* status_cmd = AddStatusCommand(&app, &status);
  CLI::App* query_cmd = AddQueryCommand(&app, &query);
  CLI::App* pick_cmd = AddPickCommand(&app, &pick);
  AgentCommandOptions agent;
  CLI::App* agent_cmd = AddAgentCommand(&app, &agent);
  ConfigCheckOptions config_check;
  CLI::App* config_check_cmd = nullptr;
  AddConfigCommand(&app, &config_check, &config_check_cmd);
  HistoryOptions history;
  CLI::App* history_cmd = AddHistoryCommand(&app, &history);
  ReportOptions report;
  CLI::App* report_cmd = AddReportCommand(&app, &report);
  ExportOptions export_options;
  CLI::App* export_cmd = AddExportCommand(&app, &export_options);
  StoreInfoOptions store_info;
  CLI::App* store_info_cmd = nullptr;
  AddStoreCommand(&app, &store_info, &store_info_cmd);
  ZombiesOptions zombies;
  CLI::App* zombies_cmd = AddZombiesCommand(&app, &zombies, &global);
  RunOptions run;
  CLI::App* run_cmd = AddRunCommand(&app, &run, &global);
  ShellOptions shell;
  CLI::App* shell_cmd = AddShellCommand(&app, &shell, &global);
  LeaseCommands lease_commands;
  AddLeaseCommands(&app, &lease_commands, &global);
  DoctorOptions doctor;
  CLI::App* doctor_cmd = AddDoctorCommand(&app, &doctor, &global);
  BackfillOptions backfill;
  std::map<std::string, CLI::App*> backfill_cmds = AddBackfillCommand(&app, &backfill, &global);
  SlurmOptions slurm;
  std::map<std::string, CLI::App*> slurm_cmds = AddSlurmCommand(&app, &slurm, &global);
  // Shared options are accepted before or after the command name.
  for (CLI::App* cmd : {status_cmd, query_cmd, pick_cmd}) AddGlobalOptions(cmd, &global);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // Name what was not understood: a command that does not exist, or an
    // option the command does not take.
    std::vector<std::string> left = app.remaining();
    bool is_command_missing = app.get_subcommands().empty() && e.get_exit_code() != 0;
    if (is_command_missing && !left.empty() && !left.front().empty() && left.front()[0] != '-') {
      std::string names;
      for (const CLI::App* sub : app.get_subcommands({})) names += (names.empty() ? "" : ", ") + sub->get_name();
      std::fprintf(stderr, "tarmac: unknown command '%s' (commands: %s; see tarmac --help)\n", left.front().c_str(),
                   names.c_str());
      return kExitUsage;
    }
    int code = app.exit(e);
    return code == 0 ? kExitOk : kExitUsage;
  }

  tarmac::Logger logger;
  tarmac::Clock* clock = tarmac::RealClock();
  if (status_cmd->parsed()) return RunStatus(global, status, clock, &logger);
  if (query_cmd->parsed()) return RunQuery(global, query, clock, &logger);
  if (pick_cmd->parsed()) return RunPick(global, pick, clock, &logger);
  if (agent_cmd->parsed()) return RunAgentCommand(agent);
  if (config_check_cmd->parsed()) return RunConfigCheck(config_check);
  for (const auto& [name, cmd] : backfill_cmds) {
    if (!cmd->parsed()) continue;
    return name == "check" ? RunBackfillCheck(backfill.check) : RunBackfillBatches(name, global, backfill, clock);
  }
  for (const auto& [name, cmd] : slurm_cmds) {
    if (cmd->parsed()) return RunSlurm(name, global, slurm, clock, &logger);
  }
  if (history_cmd->parsed()) return RunHistory(history, clock);
  if (report_cmd->parsed()) return RunReport(report, clock);
  if (export_cmd->parsed()) return RunExport(export_options, clock);
  if (store_info_cmd->parsed()) return RunStoreInfo(store_info);
  if (zombies_cmd->parsed()) return RunZombies(global, zombies);
  if (doctor_cmd->parsed()) return RunDoctor(global, doctor, clock, &logger);
  if (run_cmd->parsed()) return RunRun(global, run);
  if (shell_cmd->parsed()) return RunShell(global, shell);
  if (int code = RunLeaseCommands(global, lease_commands); code >= 0) return code;
  return kExitUsage;
}
