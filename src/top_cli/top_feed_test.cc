// SPDX-License-Identifier: Apache-2.0
#include "top_cli/top_feed.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>

namespace tarmac::top {
namespace {

TEST(TopFeedTest, ProcStatIsReadAfterTheLastParenthesis) {
  ProcSample s;
  // A name with spaces and parentheses, as a process may choose.
  std::string stat =
      "4242 (evil ) 1 2 (x) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 1 0 987654 1000 200";
  ASSERT_TRUE(ParseProcStat(stat, &s));
  EXPECT_EQ(s.cpu_ticks, 300);
  EXPECT_EQ(s.start_ticks, 987654);
  for (const char* bad : {"", "4242 (x", "4242 (x) S 1 2 3",
                          "4242 (x) S 1 4242 4242 0 -1 4 1 0 0 0 zz 50 0 0 20 0 1 0 9 1 2"}) {
    EXPECT_FALSE(ParseProcStat(bad, &s)) << bad;
  }
}

TEST(TopFeedTest, ReadsThisProcessAndItsGpuVariablesButNeverTheLeaseToken) {
  ProcSample s;
  int64_t rss = 0;
  double elapsed = -1;
  ASSERT_TRUE(ReadProcSample(getpid(), std::chrono::steady_clock::time_point{}, &s, &rss, &elapsed));
  EXPECT_GT(s.start_ticks, 0);
  EXPECT_GT(rss, 1 << 20);
  EXPECT_GE(elapsed, 0);
  ::setenv("CUDA_VISIBLE_DEVICES", "3", 1);
  ::setenv("TARMAC_LEASE_TOKEN", "secret-token", 1);
  // /proc/self/environ is the environment at exec: the child sees these.
  pid_t child = fork();
  if (child == 0) {
    execl("/bin/sleep", "sleep", "5", static_cast<char*>(nullptr));
    _exit(127);
  }
  Result<std::vector<std::string>> env = Status::NotFound("not read yet");
  for (int i = 0; i < 100; ++i) {
    env = GpuEnvironment(child);
    if (env.ok() &&
        std::find(env.value().begin(), env.value().end(), "CUDA_VISIBLE_DEVICES=3") != env.value().end()) {
      break;  // The child has exec'd: its environment is the one given.
    }
    usleep(10000);
  }
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  ::unsetenv("TARMAC_LEASE_TOKEN");
  ::unsetenv("CUDA_VISIBLE_DEVICES");
  ASSERT_TRUE(env.ok()) << env.status().ToString();
  const std::vector<std::string>& vars = env.value();
  EXPECT_NE(std::find(vars.begin(), vars.end(), "CUDA_VISIBLE_DEVICES=3"), vars.end());
  for (const std::string& v : vars) {
    EXPECT_EQ(v.find("TARMAC_LEASE_TOKEN"), std::string::npos) << v;
    EXPECT_EQ(v.find("secret-token"), std::string::npos) << v;
    EXPECT_TRUE(v.rfind("CUDA_", 0) == 0 || v.rfind("NVIDIA_", 0) == 0 || v.rfind("SLURM_", 0) == 0 ||
                v.rfind("TARMAC_LEASE_ID", 0) == 0 || v.rfind("GPU_DEVICE_ORDINAL", 0) == 0)
        << v;
  }
}

}  // namespace
}  // namespace tarmac::top
