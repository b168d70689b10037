// SPDX-License-Identifier: Apache-2.0
#include "config/config_reload.h"

#include <gtest/gtest.h>

namespace tarmac::config {
namespace {

Config Parse(const std::string& text) {
  Result<Config> c = ParseConfig(text, "test.toml");
  EXPECT_TRUE(c.ok()) << c.status().message();
  return c.ok() ? c.value() : Config{};
}

TEST(ConfigReloadTest, LiveSectionsAreAppliedTheRestWaitForARestart) {
  Config running = Parse("[zombies]\nmin_memory = \"8GiB\"\n");
  Config next = Parse(
      "[zombies]\nmin_memory = \"1GiB\"\n[sampler]\nfast_interval = \"500ms\"\ncall_timeout = \"5s\"\n"
      "[http]\nmax_process_series = 10\n[leases]\nadmin_group = \"wheel\"\nkill_grace = \"2s\"\n"
      "[backfill]\ngrace = \"7s\"\n[agent]\nlog_level = \"debug\"\nstate_dir = \"/tmp/elsewhere\"\n");
  ReloadPlan plan = PlanReload(running, next);
  EXPECT_EQ(plan.applied,
            (std::vector<std::string>{"agent.log_level", "sampler", "leases", "zombies", "backfill"}));
  EXPECT_EQ(plan.restart,
            (std::vector<std::string>{"agent", "sampler.call_timeout", "http", "leases.admin_group"}));
  // The result runs the live values and keeps the running ones of the rest.
  EXPECT_EQ(plan.result.leases.zombies.min_memory_bytes, int64_t{1} << 30);
  EXPECT_EQ(plan.result.leases.kill_grace, std::chrono::seconds(2));
  EXPECT_EQ(plan.result.leases.admin_group, running.leases.admin_group);
  EXPECT_EQ(plan.result.sampler.fast_interval, std::chrono::milliseconds(500));
  EXPECT_EQ(plan.result.sampler.call_timeout, running.sampler.call_timeout);
  EXPECT_EQ(plan.result.agent.log_level, "debug");
  EXPECT_EQ(plan.result.agent.state_dir, running.agent.state_dir);
  EXPECT_EQ(plan.result.http, running.http);
  EXPECT_EQ(plan.result.metrics, running.metrics);
  EXPECT_EQ(DescribeReload(plan),
            "applied [agent.log_level], [sampler], [leases], [zombies], [backfill]; [agent], "
            "[sampler.call_timeout], "
            "[http], [leases.admin_group] take effect on restart");
  // Reloading the same file again changes nothing more.
  ReloadPlan again = PlanReload(plan.result, next);
  EXPECT_TRUE(again.applied.empty());
  EXPECT_EQ(again.restart, plan.restart);
  EXPECT_EQ(DescribeReload(PlanReload(running, running)), "nothing changed");
}

TEST(ConfigReloadTest, OnlyTheSectionThatChangedIsNamed) {
  Config running = Parse("");
  ReloadPlan plan = PlanReload(running, Parse("[slurm]\nidle_after = \"20m\"\n"));
  EXPECT_EQ(plan.applied, (std::vector<std::string>{"slurm"}));
  EXPECT_TRUE(plan.restart.empty());
  EXPECT_EQ(DescribeReload(plan), "applied [slurm]");
  plan = PlanReload(running, Parse("[kubernetes]\nenabled = true\n"));
  EXPECT_EQ(DescribeReload(plan), "[kubernetes] takes effect on restart");
}

}  // namespace
}  // namespace tarmac::config
