// SPDX-License-Identifier: Apache-2.0
//
// tarmac: see, allocate, reclaim and backfill GPUs. This file reads like a
// table of contents: parse the command line, run the chosen command, map its
// result to an exit code (0 ok, 1 error, 2 usage, 3 no GPU driver).
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>

#include "cli/command_table.h"
#include "cli/help_format.h"
#include "cli/options.h"
#include "cli/sibling_program.h"
#include "common/clock.h"
#include "common/closest_name.h"
#include "common/log.h"
#include "common/terminal.h"

#ifndef TARMAC_VERSION
#define TARMAC_VERSION "dev"
#endif

namespace {

using tarmac::cli::CommandRow;

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

// Whether `row` is built for a line naming `named`: only the row named is
// (a one-shot command starts in milliseconds), all of them for --help, no
// command, an unknown one (its error lists them) or completion (its script
// names every command).
bool Wanted(const CommandRow& row, const std::string& named, const std::vector<std::string>& known) {
  if (named.empty() || named == "completion" || std::find(known.begin(), known.end(), named) == known.end()) {
    return true;
  }
  return std::find(row.names.begin(), row.names.end(), named) != row.names.end();
}

// `tarmac fleet ...` is tarmac-fleet's line (its own options and --help);
// `tarmac top ...` is tarmac-top's, with the global options before `top`.
// Returns -1 when the line names neither (or the exec's exit code).
int HandToSibling(const std::string& named, int argc, char** argv) {
  if (named != "fleet" && named != "top") return -1;
  std::vector<std::string> rest = {"tarmac-" + named};
  int at = 1;
  if (named == "fleet") {
    while (at < argc && std::string(argv[at]) != "fleet") ++at;
    for (int i = at + 1; i < argc; ++i) rest.emplace_back(argv[i]);
  } else {
    bool skipped = false;
    for (int i = 1; i < argc; ++i) {
      if (!skipped && std::string(argv[i]) == "top") {
        skipped = true;
        continue;
      }
      rest.emplace_back(argv[i]);
    }
  }
  return tarmac::cli::ExecSibling(rest.front(), rest);
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

// The exit code for a line CLI11 refused: names what was not understood (a
// command that does not exist, or an option the command does not take).
int Refuse(CLI::App& app, const CLI::ParseError& e, const std::vector<std::string>& known) {
  using tarmac::cli::kExitUsage;
  std::vector<std::string> left = app.remaining();
  bool is_command_missing = app.get_subcommands().empty() && e.get_exit_code() != 0;
  if (is_command_missing && !left.empty() && !left.front().empty() && left.front()[0] != '-') {
    std::string names;
    for (const CLI::App* sub : app.get_subcommands({}))
      names += (names.empty() ? "" : ", ") + sub->get_name();
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
                   cmd->get_name().c_str(), name.c_str(), tarmac::DidYouMean(name, OptionNames(cmd)).c_str(),
                   cmd->get_name().c_str());
      return kExitUsage;
    }
  }
  int code = app.exit(e);
  return code == 0 ? tarmac::cli::kExitOk : kExitUsage;
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
  const std::string named = NamedCommand(argc, argv);
  if (int code = HandToSibling(named, argc, argv); code >= 0) return code;

  CLI::App app("tarmac: every GPU and every process on it, at a glance.\n", "tarmac");
  app.formatter(std::make_shared<HelpFormatter>(static_cast<size_t>(tarmac::TerminalColumns(STDOUT_FILENO))));
  app.set_version_flag("--version", std::string("tarmac ") + TARMAC_VERSION);
  app.require_subcommand(1);
  CommandContext context;
  context.clock = tarmac::RealClock();
  AddGlobalOptions(&app, &context.global);
  const std::vector<CommandRow> rows = CommandRows();  // Built once; only the named one adds itself.
  const std::vector<std::string> known = CommandNames(rows);
  std::vector<CommandRun> runs;
  for (const CommandRow& row : rows) {
    if (Wanted(row, named, known)) runs.push_back(row.add(&app, &context));
  }
  // The exit codes under tarmac --help only (a footer set before the
  // commands are added is copied into each one's help).
  app.footer(std::string(kExitCodesHelp) +
             "\nWithout an agent, commands read the GPUs directly through NVML "
             "(or the simulated world with --backend sim).");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return Refuse(app, e, known);
  }
  for (const CommandRun& run : runs) {
    if (int code = run(); code >= 0) return code;
  }
  return kExitUsage;
}
