// SPDX-License-Identifier: Apache-2.0
//
// `tarmac zombies` against a real agent: simload processes stand in for a
// notebook that holds GPU memory and computes nothing, a busy job, and a
// small holder under the threshold.
#include <gtest/gtest.h>

#include "testutil/agent_fixture.h"

namespace tarmac::testing {
namespace {

using nlohmann::json;

class ZombiesTest : public AgentFixture {
 public:
  json Zombies() {
    RunResult r = Tarmac({"zombies", "--json", "--socket", Socket()});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return json::parse(r.out, nullptr, false);
  }
};

TEST_F(ZombiesTest, AnIdleHolderIsReportedWithItsEvidenceAndOthersAreNot) {
  UseScenarioText("[[gpu]]\ncount = 2\n");
  Child* idle = StartLoad("0", {"--memory", "2GiB", "--util", "0"});
  Child* busy = StartLoad("1", {"--memory", "4GiB", "--util", "50"});
  Child* small = StartLoad("1", {"--memory", "256MiB", "--util", "0"});
  // The tests run as root: count system users' processes too.
  std::string config =
      dir_.Write("agent.toml",
                 "[sampler]\nfast_interval = \"200ms\"\n"
                 "[zombies]\nmin_memory = \"1GiB\"\nidle_for = \"1s\"\ninclude_system_users = true\n");
  StartAgent({"--config", config});
  json answer;
  for (int i = 0; i < 100; ++i) {
    answer = Zombies();
    if (!answer.is_discarded() && !answer["zombies"].empty()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_EQ(answer["zombies"].size(), 1u) << answer.dump(2);
  const json& z = answer["zombies"][0];
  EXPECT_EQ(z["pid"], idle->pid());
  EXPECT_EQ(z["gpu"], 0);
  EXPECT_EQ(z["memory_bytes"], int64_t{2} << 30);
  EXPECT_GE(z["idle_for_seconds"].get<int64_t>(), 1);
  EXPECT_EQ(z["uid"], static_cast<int64_t>(geteuid()));
  EXPECT_EQ(z["parent_pid"], getpid());  // The test started it: not orphaned.
  EXPECT_EQ(z["is_orphaned"], false);
  EXPECT_TRUE(z["lease"].is_null());
  EXPECT_NE(z["command"].get<std::string>().find("tarmac-simload"), std::string::npos);
  EXPECT_EQ(answer["policy"]["idle_for_seconds"], 1);
  (void)busy;
  (void)small;

  RunResult text = Tarmac({"zombies", "--socket", Socket()});
  EXPECT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find(std::to_string(idle->pid())), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("2.0 GiB"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("1 zombie: processes holding at least 1.0 GiB at 0 % SM for"), std::string::npos)
      << text.out;

  // It exits: no longer listed.
  idle->KillAndWait(SIGKILL);
  for (int i = 0; i < 100; ++i) {
    answer = Zombies();
    if (!answer.is_discarded() && answer["zombies"].empty()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(answer["zombies"].empty()) << answer.dump(2);
  EXPECT_NE(Tarmac({"zombies", "--socket", Socket()}).out.find("No zombies"), std::string::npos);
}

// A SIGHUP applies a changed [zombies] at once, and says which changed
// sections wait for a restart.
TEST_F(ZombiesTest, ASighupAppliesAChangedZombiesSection) {
  UseScenarioText("[[gpu]]\ncount = 1\n");
  Child* idle = StartLoad("0", {"--memory", "2GiB", "--util", "0"});
  std::string config =
      dir_.Write("agent.toml",
                 "[sampler]\nfast_interval = \"200ms\"\n"
                 "[zombies]\nmin_memory = \"8GiB\"\nidle_for = \"1s\"\ninclude_system_users = true\n");
  Child* agent = StartAgent({"--config", config});
  // Two seconds of samples: under 8 GiB, not a zombie.
  std::this_thread::sleep_for(std::chrono::seconds(2));
  json answer = Zombies();
  EXPECT_TRUE(answer["zombies"].empty()) << answer.dump(2);
  EXPECT_EQ(answer["policy"]["min_memory_bytes"], int64_t{8} << 30) << answer.dump(2);
  dir_.Write("agent.toml",
             "[sampler]\nfast_interval = \"200ms\"\n"
             "[zombies]\nmin_memory = \"1GiB\"\nidle_for = \"1s\"\ninclude_system_users = true\n"
             "[http]\nmax_process_series = 100\n");
  kill(agent->pid(), SIGHUP);
  EXPECT_TRUE(WaitForLog("config reloaded: applied [zombies]; [http] takes effect on restart")) << ReadLog();
  // The event log says it too (it said nothing: the event went only to the history).
  RunResult events = Tarmac({"events", "--kind", "config_reload", "--json", "--socket", Socket()});
  EXPECT_EQ(events.exit_code, 0) << events.err;
  json logged = json::parse(events.out, nullptr, false);
  ASSERT_FALSE(logged.is_discarded()) << events.out;
  ASSERT_EQ(logged["events"].size(), 1u) << events.out;
  EXPECT_EQ(logged["events"][0]["detail"], "applied [zombies]; [http] takes effect on restart");
  for (int i = 0; i < 100; ++i) {
    answer = Zombies();
    if (!answer.is_discarded() && !answer["zombies"].empty()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_EQ(answer["zombies"].size(), 1u) << answer.dump(2);
  EXPECT_EQ(answer["zombies"][0]["pid"], idle->pid());
  EXPECT_EQ(answer["policy"]["min_memory_bytes"], int64_t{1} << 30);
}

TEST_F(ZombiesTest, WithoutAnAgentItSaysWhyAndFails) {
  RunResult r = Tarmac({"zombies", "--socket", dir_.path() + "/none.sock"});
  EXPECT_EQ(r.exit_code, 69);  // As every command that needs the agent.
  EXPECT_NE(r.err.find("is the agent running"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("zombies needs the agent"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace tarmac::testing
