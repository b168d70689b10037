// SPDX-License-Identifier: Apache-2.0
//
// Text that any local user controls (a process's argv, a lease's command, a
// queued request's command) reaches root's terminal and the agent's log
// only through the one terminal filter (common/terminal_text.h): a real
// agent, a real process whose argv holds terminal escapes, and every text
// view that shows it. `--json` keeps the exact bytes.
#include <gtest/gtest.h>
#include <signal.h>

#include <regex>

#include "testutil/lease_fixture.h"

namespace tarmac::testing {
namespace {

using nlohmann::json;

// An OSC title, a screen clear, an OSC 52 clipboard write, an OSC 8 link,
// a C1 CSI and a right-to-left override: what a hostile name would hold.
const std::string kHostile =
    "evil\033]0;pwned\a\033[2J\033]52;c;ZWNobyBwd25lZA==\a\033]8;;http://x\033\\ln\xc2\x9b"
    "2J\u202etxt";

// The same in a file name (no '/').
const std::string kHostileName =
    "evil\033]0;pwned\a\033[2J\xc2\x9b"
    "2J\u202etxt";

// Every escape in `text` is a colour (SGR: ESC [ digits and ; m): tarmac's
// own. Nothing else below 0x20 but the line break; no DEL, no C1, no bidi
// override. Returns what is wrong, or "".
std::string WhatATerminalWouldObey(const std::string& text) {
  static const std::regex kSgr("^\033\\[[0-9;]*m");
  for (size_t i = 0; i < text.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == 0x1b) {
      std::smatch m;
      std::string rest = text.substr(i, 16);
      if (!std::regex_search(rest, m, kSgr))
        return "an escape at byte " + std::to_string(i) + ": " + json(rest).dump();
      continue;
    }
    if ((c < 0x20 && c != '\n') || c == 0x7f)
      return "control byte " + std::to_string(c) + " at " + std::to_string(i);
    if (c == 0xc2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) < 0xa0) {
      return "a C1 control at " + std::to_string(i);
    }
  }
  if (text.find("\u202e") != std::string::npos) return "a right-to-left override";
  return "";
}

class TerminalEscapesTest : public LeaseFixture {
 public:
  void SetUp() override { UseScenarioText("[[gpu]]\ncount = 1\n"); }
  // The batch's runner outlives the agent by design: this test's ends here.
  void TearDown() override {
    RunCommand({"pkill", "-KILL", "-f", "tarmac-backfill-runner --dir " + dir_.path()}, {}).exit_code;
  }
};

TEST_F(TerminalEscapesTest, HostileArgvAndCommandsAreShownEscapedInEveryTextViewAndTheLog) {
  StartAgent({"--config", dir_.Write("agent.toml", "[sampler]\nfast_interval = \"200ms\"\n"), "--log-level",
              "info"});
  // A run whose command and whose GPU process's argv[0] hold the escapes.
  StartRun({"--gpus", "1"},
           {"bash", "-c", "exec -a \"$0\" \"$1\" --pattern idle", kHostile, BinDir() + "/tarmac-simload"});
  ASSERT_TRUE(WaitFor([&] {
    json s = AgentStatus();
    return !s.is_discarded() && !s["gpus"][0]["processes"].empty();
  })) << ReadLog();
  // The load outlives its `tarmac run` (killed with the fixture): ended here.
  struct KillOnExit {
    pid_t pid;
    ~KillOnExit() { ::kill(pid, SIGKILL); }
  } load{static_cast<pid_t>(AgentStatus()["gpus"][0]["processes"][0].value("pid", int64_t{0}))};
  ASSERT_GT(load.pid, 0);
  // A request queued behind it, whose command holds them too.
  json queued = Call("lease.request", {{"gpus", 1}, {"wait", true}, {"command", "python " + kHostile}});
  ASSERT_EQ(queued.value("state", ""), "queued") << queued.dump();

  const std::string shown = "evil\\e]0;";  // What fits a lease's 50-character command column.
  for (std::vector<std::string> view : {std::vector<std::string>{"status"},
                                        {"status", "--color", "always"},
                                        {"status", "--wide"},
                                        {"leases"},
                                        {"queue"},
                                        {"events"}}) {
    RunResult r = T(view);
    std::string name = view[0] + (view.size() > 1 ? " " + view[1] : "");
    ASSERT_EQ(r.exit_code, 0) << name << ": " << r.err;
    EXPECT_EQ(WhatATerminalWouldObey(r.out), "") << name << ":\n" << r.out;
    EXPECT_EQ(WhatATerminalWouldObey(r.err), "") << name << ":\n" << r.err;
    // Shown, visibly, not dropped, where the view shows commands.
    if (view[0] == "status" || view[0] == "leases") {
      EXPECT_NE(r.out.find(shown), std::string::npos) << name << ":\n" << r.out;
    }
  }
  // --watch, drawn twice.
  RunResult watch = RunCommand(
      {"timeout", "-s", "INT", "3", BinDir() + "/tarmac", "status", "--socket", Socket(), "--watch", "1"},
      Env());
  EXPECT_NE(watch.out.find(shown), std::string::npos) << watch.out;
  EXPECT_EQ(WhatATerminalWouldObey(watch.out), "") << watch.out;

  // JSON keeps the exact bytes (escaped as JSON escapes them).
  RunResult j = T({"status", "--json"});
  json status = json::parse(j.out, nullptr, false);
  ASSERT_FALSE(status.is_discarded()) << j.out;
  EXPECT_EQ(status["gpus"][0]["processes"][0]["command"].get<std::string>().substr(0, kHostile.size()),
            kHostile);
  EXPECT_EQ(j.out.find('\033'), std::string::npos);

  // The agent's log quotes a batch's input path, which its submitter
  // named: escaped as well.
  std::string input = dir_.Write("in" + kHostileName + ".jsonl", "{\"custom_id\":\"a\",\"prompt\":\"hi\"}\n");
  RunResult submitted = Tarmac(
      {"backfill", "submit", input, "--model", "m", "--url", "http://127.0.0.1:9", "--socket", Socket()});
  ASSERT_EQ(submitted.exit_code, 0) << submitted.err;
  EXPECT_EQ(WhatATerminalWouldObey(submitted.out), "") << submitted.out;
  ASSERT_TRUE(WaitForLog("submitted by"));
  std::string log = ReadLog();
  EXPECT_EQ(WhatATerminalWouldObey(log), "") << log;
  EXPECT_NE(log.find("inevil\\e]0;pwned\\a\\e[2J\\u009b2J\\u202etxt.jsonl"), std::string::npos) << log;
}

}  // namespace
}  // namespace tarmac::testing
