// SPDX-License-Identifier: Apache-2.0
#include "cli/help_format.h"

#include <gtest/gtest.h>

#include <sstream>

namespace tarmac::cli {
namespace {

TEST(HelpFormatTest, ValuesAreShownAsAPersonReadsThem) {
  EXPECT_EQ(ValueLabel("FLOAT:POSITIVE"), "X");
  EXPECT_EQ(ValueLabel("INT:INT in [1 - 1024]"), "N in [1 - 1024]");
  EXPECT_EQ(ValueLabel("TEXT:{auto,always,never}"), "{auto,always,never}");
  EXPECT_EQ(ValueLabel("TEXT"), "TEXT");
  EXPECT_EQ(ValueLabel("SECONDS"), "SECONDS");
}

// Every command's --help: no parser internals, and the exit codes once,
// under tarmac --help, not under each command.
TEST(HelpFormatTest, HelpShowsNoParserInternalsAndTheExitCodesOnce) {
  CLI::App app("test", "tarmac");
  app.formatter(std::make_shared<HelpFormatter>());
  CLI::App* cmd = app.add_subcommand("status", "Show");
  double watch = 2;
  bool no_wait = false;
  cmd->add_option("--watch", watch, "Refresh")->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_flag("--no-wait{true},--queue{false}", no_wait, "Wait or not");
  app.footer("Exit codes: ...");
  std::string help = cmd->help();
  EXPECT_NE(help.find("--watch X (default 2)"), std::string::npos) << help;
  EXPECT_NE(help.find("--no-wait,--queue "), std::string::npos) << help;
  EXPECT_EQ(help.find("POSITIVE"), std::string::npos) << help;
  EXPECT_EQ(help.find("{true}"), std::string::npos) << help;
  EXPECT_EQ(help.find("Exit codes"), std::string::npos) << help;
  EXPECT_NE(app.help().find("Exit codes"), std::string::npos);
}

// Help fits the terminal: a long line wraps, its continuation under its
// text (under a table's last column), and lines that fit stay as they are.
TEST(HelpFormatTest, LongLinesWrapUnderTheirText) {
  std::string table =
      "  starved     pipeline      GPUs working in bursts with idle gaps between them, waiting for input";
  std::string wrapped = WrapLongLines("Short line.\n" + table, 60);
  EXPECT_EQ(wrapped.substr(0, 12), "Short line.\n");
  std::string rest = wrapped.substr(12);
  EXPECT_EQ(rest.substr(0, 28), "  starved     pipeline      ");
  for (size_t at = rest.find('\n'); at != std::string::npos; at = rest.find('\n', at + 1)) {
    EXPECT_EQ(rest.substr(at + 1, 28), std::string(28, ' ')) << wrapped;
  }
  std::istringstream lines(wrapped);
  for (std::string line; std::getline(lines, line);) EXPECT_LE(line.size(), 60u) << line;
  // The help of a command with a long description and footer, at 80 columns.
  CLI::App app("test", "tarmac");
  app.formatter(std::make_shared<HelpFormatter>(80));
  app.footer(std::string(30, 'x') + " " + std::string(30, 'y') + " " + std::string(30, 'z'));
  CLI::App* cmd = app.add_subcommand("run", std::string(50, 'a') + " " + std::string(50, 'b'));
  bool queue = false;
  cmd->add_flag("--queue", queue,
                "Wait in the queue when no GPU fits now, for as long as it takes, and say where");
  for (const std::string& help : {app.help(), cmd->help()}) {
    std::istringstream help_lines(help);
    for (std::string line; std::getline(help_lines, line);) EXPECT_LE(line.size(), 80u) << line;
  }
}

}  // namespace
}  // namespace tarmac::cli
