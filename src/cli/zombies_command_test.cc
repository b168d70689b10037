// SPDX-License-Identifier: Apache-2.0
#include "cli/zombies_command.h"

#include <gtest/gtest.h>

#include <sstream>

namespace tarmac::cli {
namespace {

nlohmann::json Answer(nlohmann::json zombies) {
  return {{"policy", {{"min_memory_bytes", int64_t{1} << 30}, {"idle_for_seconds", 1800}}},
          {"zombies", zombies}};
}

// The answer decoded as the command decodes it, then rendered.
std::string RenderZombies(const nlohmann::json& answer) {
  Result<sched::ZombieReport> report = sched::ZombiesFromJson(answer);
  EXPECT_TRUE(report.ok()) << report.status().ToString();
  return report.ok() ? cli::RenderZombies(report.value()) : "";
}

TEST(ZombiesCommandTest, ATableWithTheEvidenceAndTheRule) {
  nlohmann::json z = {{"gpu", 0},
                      {"pid", 48122},
                      {"user", "alice"},
                      {"memory_bytes", int64_t{20} << 30},
                      {"idle_for_seconds", 5400},
                      {"parent_pid", 1},
                      {"is_orphaned", true},
                      {"lease", nullptr},
                      {"command", "python notebook.py"}};
  std::string text = RenderZombies(Answer(nlohmann::json::array({z})));
  EXPECT_EQ(text,
            "GPU       PID  USER             MEMORY   IDLE FOR  PARENT           LEASE  COMMAND\n"
            "0       48122  alice          20.0 GiB     1h 30m  gone (orphan)    none   python notebook.py\n"
            "1 zombie: processes holding at least 1.0 GiB at 0 % SM for 30m 00s.\n");
  z["is_orphaned"] = false;
  z["parent_pid"] = 4000;
  z["lease"] = 17;
  text = RenderZombies(Answer(nlohmann::json::array({z, z})));
  EXPECT_NE(text.find("4000 (alive)     17"), std::string::npos) << text;
  EXPECT_NE(text.find("2 zombies:"), std::string::npos) << text;
}

// A long command is cut so that every line fits 100 columns.
TEST(ZombiesCommandTest, EveryLineFitsAHundredColumns) {
  nlohmann::json z = {{"gpu", 3},
                      {"pid", 13959},
                      {"user", "root"},
                      {"memory_bytes", int64_t{20} << 30},
                      {"idle_for_seconds", 38},
                      {"parent_pid", 13947},
                      {"is_orphaned", false},
                      {"lease", nullptr},
                      {"command", std::string(200, 'x')}};
  std::string text = RenderZombies(Answer(nlohmann::json::array({z})));
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) EXPECT_LE(line.size(), 100u) << line;
  EXPECT_NE(text.find("xxx..."), std::string::npos) << text;
}

TEST(ZombiesCommandTest, NoneSaysWhatWasLookedFor) {
  EXPECT_EQ(RenderZombies(Answer(nlohmann::json::array())),
            "No zombies: no process holds at least 1.0 GiB at 0 % SM for 30m 00s.\n");
  // What it left out is said, so that "none" does not contradict a holder
  // `tarmac status` flags.
  nlohmann::json answer = Answer(nlohmann::json::array());
  answer["policy"]["includes_system_users"] = false;
  answer["policy"]["allowlist"] = {"Xorg", "ollama"};
  EXPECT_EQ(
      RenderZombies(answer),
      "No zombies: no process holds at least 1.0 GiB at 0 % SM for 30m 00s; processes of root and of users\n"
      "  under uid 1000 are not counted ([zombies] include_system_users); nor servers that hold memory by\n"
      "  design (Xorg, ollama).\n");
}

// An answer of the wrong shape is a clear error, not a crash.
TEST(ZombiesCommandTest, AMalformedAnswerIsCorruption) {
  nlohmann::json wrong_pid = Answer({{{"gpu", 0}, {"pid", "x"}}});
  nlohmann::json wrong_policy = Answer(nlohmann::json::array());
  wrong_policy["policy"]["idle_for_seconds"] = "soon";
  for (const nlohmann::json& bad :
       {nlohmann::json(), wrong_pid, wrong_policy, nlohmann::json{{"policy", 3}}}) {
    Result<sched::ZombieReport> r = sched::ZombiesFromJson(bad);
    EXPECT_EQ(r.status().code(), StatusCode::kCorruption) << bad.dump();
  }
  EXPECT_FALSE(sched::ZombieKillsFromJson({{"terminated", {{{"pid", true}}}}}).ok());
  sched::ZombieKills kills;
  kills.refused.push_back({12, 1, "bob", "pid 12 belongs to bob"});
  Result<sched::ZombieKills> back = sched::ZombieKillsFromJson(sched::ZombieKillsToJson(kills));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back.value().refused[0].why, "pid 12 belongs to bob");
}

}  // namespace
}  // namespace tarmac::cli
