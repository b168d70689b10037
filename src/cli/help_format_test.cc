// SPDX-License-Identifier: Apache-2.0
#include "cli/help_format.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace tarmac::cli
