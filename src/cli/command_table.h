// SPDX-License-Identifier: Apache-2.0
//
// Every top-level command of `tarmac`, in one table: the names it answers
// to, and how it adds itself to the command line. Adding a command is one
// row here; main builds only the rows the line names (all of them for
// --help, completion, no command or an unknown one) and runs the one parsed.
#ifndef TARMAC_CLI_COMMAND_TABLE_H_
#define TARMAC_CLI_COMMAND_TABLE_H_

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

#include "cli/options.h"
#include "common/clock.h"
#include "common/log.h"

namespace tarmac::cli {

// What every command's run may use, alive for the whole process.
struct CommandContext {
  GlobalOptions global;
  Logger logger;
  Clock* clock = nullptr;
};

// Runs the command if it was the one parsed: its exit code, or -1.
using CommandRun = std::function<int()>;

struct CommandRow {
  // The words that select this row (several for a family like the lease
  // commands); the first is the one the help lists.
  std::vector<std::string> names;
  // Adds the row's command(s) to `app`; its options live in the closure.
  std::function<CommandRun(CLI::App* app, CommandContext* context)> add;
};

// Every row, in the order `tarmac --help` lists them.
std::vector<CommandRow> CommandRows();

// Every command name in `rows`, for "did you mean".
std::vector<std::string> CommandNames(const std::vector<CommandRow>& rows);

}  // namespace tarmac::cli

#endif  // TARMAC_CLI_COMMAND_TABLE_H_
