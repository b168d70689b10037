// SPDX-License-Identifier: Apache-2.0
#include "cli/command_table.h"

#include <cstdio>
#include <map>
#include <memory>

#include "cli/agent_command.h"
#include "cli/backfill_command.h"
#include "cli/completion.h"
#include "cli/doctor_command.h"
#include "cli/drain_command.h"
#include "cli/history_command.h"
#include "cli/lease_commands.h"
#include "cli/pick_command.h"
#include "cli/query_command.h"
#include "cli/report_command.h"
#include "cli/run_command.h"
#include "cli/sibling_program.h"
#include "cli/slurm_command.h"
#include "cli/status_command.h"
#include "cli/web_command.h"
#include "cli/zombies_command.h"
#include "common/exit_codes.h"

namespace tarmac::cli {
namespace {

// `run` when `cmd` was parsed, -1 otherwise.
CommandRun When(const CLI::App* cmd, std::function<int()> run) {
  return [cmd, run = std::move(run)] { return cmd != nullptr && cmd->parsed() ? run() : -1; };
}

// A row whose command is one subcommand with options of type Options:
// `add(app, options, context)` adds it, `run(options, context)` runs it.
template <typename Options, typename Add, typename Run>
CommandRow Row(std::string name, Add add, Run run) {
  return {{std::move(name)}, [add, run](CLI::App* app, CommandContext* c) {
            auto options = std::make_shared<Options>();
            CLI::App* cmd = add(app, options.get(), c);
            return When(cmd, [options, c, run] { return run(*options, c); });
          }};
}

// A command that is another program's (`tarmac fleet`, `tarmac top`): listed
// in the help; main hands the line to that program before parsing.
CommandRow Sibling(std::string name, std::string help) {
  return {{name}, [name, help](CLI::App* app, CommandContext*) {
            app->add_subcommand(name, help);
            return CommandRun([] { return -1; });
          }};
}

// The commands that read (the GPUs, the history, reports), and the agent.
void AddReadingRows(std::vector<CommandRow>* out) {
  std::vector<CommandRow>& rows = *out;
  using C = CommandContext;
  rows.push_back(
      Sibling("top",
              "Every GPU, process, lease and the queue, live in the terminal: sort, filter, select "
              "and signal your own processes (docs/cli.md)"));
  rows.push_back(Sibling("fleet",
                         "Every node's GPUs at once, from the Prometheus that scrapes their agents "
                         "(tarmac fleet status; docs/fleet.md)"));
  // status, query and pick also take the shared options after their name.
  rows.push_back(Row<StatusOptions>(
      "status",
      [](CLI::App* app, StatusOptions* o, C* c) {
        CLI::App* cmd = AddStatusCommand(app, o);
        AddGlobalOptions(cmd, &c->global);
        return cmd;
      },
      [](const StatusOptions& o, C* c) { return RunStatus(c->global, o, c->clock, &c->logger); }));
  rows.push_back(Row<QueryOptions>(
      "query",
      [](CLI::App* app, QueryOptions* o, C* c) {
        CLI::App* cmd = AddQueryCommand(app, o);
        AddGlobalOptions(cmd, &c->global);
        return cmd;
      },
      [](const QueryOptions& o, C* c) { return RunQuery(c->global, o, c->clock, &c->logger); }));
  rows.push_back(Row<PickOptions>(
      "pick",
      [](CLI::App* app, PickOptions* o, C* c) {
        CLI::App* cmd = AddPickCommand(app, o);
        AddGlobalOptions(cmd, &c->global);
        return cmd;
      },
      [](const PickOptions& o, C* c) { return RunPick(c->global, o, c->clock, &c->logger); }));
  rows.push_back(Row<AgentCommandOptions>(
      "agent", [](CLI::App* app, AgentCommandOptions* o, C*) { return AddAgentCommand(app, o); },
      [](const AgentCommandOptions& o, C*) { return RunAgentCommand(o); }));
  rows.push_back(Row<ConfigCheckOptions>(
      "config",
      [](CLI::App* app, ConfigCheckOptions* o, C*) {
        CLI::App* check = nullptr;
        AddConfigCommand(app, o, &check);
        return check;
      },
      [](const ConfigCheckOptions& o, C*) { return RunConfigCheck(o); }));
  rows.push_back(Row<HistoryOptions>(
      "history", [](CLI::App* app, HistoryOptions* o, C*) { return AddHistoryCommand(app, o); },
      [](const HistoryOptions& o, C* c) { return RunHistory(o, c->clock); }));
  rows.push_back(Row<ReportOptions>(
      "report", [](CLI::App* app, ReportOptions* o, C*) { return AddReportCommand(app, o); },
      [](const ReportOptions& o, C* c) { return RunReport(o, c->clock); }));
  rows.push_back(Row<ExportOptions>(
      "export", [](CLI::App* app, ExportOptions* o, C*) { return AddExportCommand(app, o); },
      [](const ExportOptions& o, C* c) { return RunExport(o, c->clock); }));
  rows.push_back(Row<StoreInfoOptions>(
      "store",
      [](CLI::App* app, StoreInfoOptions* o, C*) {
        CLI::App* info = nullptr;
        AddStoreCommand(app, o, &info);
        return info;
      },
      [](const StoreInfoOptions& o, C*) { return RunStoreInfo(o); }));
}

// The commands that act: zombies, leases, the console, the doctor,
// backfill, Slurm, completion.
void AddActingRows(std::vector<CommandRow>* out) {
  using C = CommandContext;
  std::vector<CommandRow>& rows = *out;
  rows.push_back(Row<ZombiesOptions>(
      "zombies", [](CLI::App* app, ZombiesOptions* o, C* c) { return AddZombiesCommand(app, o, &c->global); },
      [](const ZombiesOptions& o, C* c) { return RunZombies(c->global, o); }));
  rows.push_back({{"drain", "undrain"}, [](CLI::App* app, C* c) {
                    auto options = std::make_shared<DrainOptions>();
                    CLI::App* drain = nullptr;
                    CLI::App* undrain = nullptr;
                    AddDrainCommands(app, options.get(), &c->global, &drain, &undrain);
                    return CommandRun([options, c, drain, undrain] {
                      if (drain->parsed()) return RunDrain(c->global, *options, false);
                      return undrain->parsed() ? RunDrain(c->global, *options, true) : -1;
                    });
                  }});
  rows.push_back(Row<RunOptions>(
      "run", [](CLI::App* app, RunOptions* o, C* c) { return AddRunCommand(app, o, &c->global); },
      [](const RunOptions& o, C* c) { return RunRun(c->global, o); }));
  rows.push_back(Row<ShellOptions>(
      "shell", [](CLI::App* app, ShellOptions* o, C* c) { return AddShellCommand(app, o, &c->global); },
      [](const ShellOptions& o, C* c) { return RunShell(c->global, o, c->clock); }));
  rows.push_back({{"reserve", "extend", "release", "leases", "queue", "events"}, [](CLI::App* app, C* c) {
                    auto commands = std::make_shared<LeaseCommands>();
                    AddLeaseCommands(app, commands.get(), &c->global);
                    return CommandRun(
                        [commands, c] { return RunLeaseCommands(c->global, *commands, c->clock); });
                  }});
  rows.push_back(Row<WebOptions>(
      "web", [](CLI::App* app, WebOptions* o, C* c) { return AddWebCommand(app, o, &c->global); },
      [](const WebOptions& o, C* c) { return RunWeb(c->global, o); }));
  rows.push_back(Row<DoctorOptions>(
      "doctor", [](CLI::App* app, DoctorOptions* o, C* c) { return AddDoctorCommand(app, o, &c->global); },
      [](const DoctorOptions& o, C* c) { return RunDoctor(c->global, o, c->clock, &c->logger); }));
  rows.push_back({{"backfill"}, [](CLI::App* app, C* c) {
                    auto options = std::make_shared<BackfillOptions>();
                    auto cmds = AddBackfillCommand(app, options.get(), &c->global);
                    return CommandRun([options, cmds, c] {
                      for (const auto& [name, cmd] : cmds) {
                        if (!cmd->parsed()) continue;
                        return name == "check" ? RunBackfillCheck(options->check)
                                               : RunBackfillBatches(name, c->global, *options, c->clock);
                      }
                      return -1;
                    });
                  }});
  rows.push_back({{"slurm"}, [](CLI::App* app, C* c) {
                    auto options = std::make_shared<SlurmOptions>();
                    auto cmds = AddSlurmCommand(app, options.get(), &c->global);
                    return CommandRun([options, cmds, c] {
                      for (const auto& [name, cmd] : cmds) {
                        if (cmd->parsed()) return RunSlurm(name, c->global, *options, c->clock, &c->logger);
                      }
                      return -1;
                    });
                  }});
  rows.push_back({{"completion"}, [](CLI::App* app, C*) {
                    auto shell = std::make_shared<std::string>();
                    CLI::App* cmd = AddCompletionCommand(app, shell.get());
                    // The script describes the whole line, from the top.
                    return When(cmd, [app, shell] {
                      // tarmac fleet and tarmac top: their own commands, as they say.
                      std::map<std::string, std::string> siblings = {
                          {"fleet", SiblingCompletionEntries("tarmac-fleet")},
                          {"top", SiblingCompletionEntries("tarmac-top")}};
                      std::fputs(CompletionScript(*app, *shell, siblings).c_str(), stdout);
                      return kExitOk;
                    });
                  }});
}

std::vector<CommandRow> MakeRows() {
  std::vector<CommandRow> rows;
  AddReadingRows(&rows);
  AddActingRows(&rows);
  return rows;
}

}  // namespace

std::vector<CommandRow> CommandRows() { return MakeRows(); }

std::vector<std::string> CommandNames(const std::vector<CommandRow>& rows) {
  std::vector<std::string> names;
  for (const CommandRow& row : rows) names.insert(names.end(), row.names.begin(), row.names.end());
  return names;
}

}  // namespace tarmac::cli
