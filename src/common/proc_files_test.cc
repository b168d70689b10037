// SPDX-License-Identifier: Apache-2.0
#include "common/proc_files.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

namespace tarmac {
namespace {

TEST(ProcFilesTest, ParsesStatWithAwkwardNames) {
  std::optional<ProcStat> s =
      ParseProcStat("42 (a (b) c) Z 7 42 42 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 123456 0 0\n");
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->name, "a (b) c");
  EXPECT_EQ(s->state, 'Z');
  EXPECT_EQ(s->parent_pid, 7);
  EXPECT_EQ(s->start_ticks, 123456);
  // utime (field 14) and stime (15): the CPU time the doctor judges a
  // process's load by; one that is not a count is malformed.
  std::optional<ProcStat> busy =
      ParseProcStat("42 (x) R 7 42 42 0 -1 0 0 0 0 0 250 50 0 0 20 0 1 0 123456 0 0\n");
  ASSERT_TRUE(busy.has_value());
  EXPECT_EQ(busy->cpu_ticks, 300);
  EXPECT_FALSE(ParseProcStat("42 (x) R 7 42 42 0 -1 0 0 0 0 0 zz 50 0 0 20 0 1 0 123456 0 0\n").has_value());
}

TEST(ProcFilesTest, RejectsTruncatedStat) {
  EXPECT_FALSE(ParseProcStat("42 (x) S 1 2 3").has_value());
  EXPECT_FALSE(ParseProcStat("garbage").has_value());
  EXPECT_FALSE(ParseProcStat("").has_value());
}

// Found by fuzz/proc_fuzzer.cc: a negative start time was accepted, and the
// start time is what tells a reused PID from the process it replaced.
TEST(ProcFilesTest, RejectsANegativeStartTime) {
  EXPECT_FALSE(ParseProcStat("42 (x) S 7 42 42 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 -1000 0 0\n").has_value());
  EXPECT_TRUE(ParseProcStat("42 (x) S 7 42 42 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 1000 0 0\n").has_value());
}

TEST(ProcFilesTest, ReadsOwnStat) {
  std::string text;
  ASSERT_TRUE(ReadSmallFile("/proc/self/stat", &text));
  std::optional<ProcStat> s = ParseProcStat(text);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->parent_pid, getppid());
  EXPECT_FALSE(ReadSmallFile("/nonexistent", &text));
  EXPECT_FALSE(ReadSmallFile("/proc", &text));  // A directory is not a file.
}

// A command line longer than one read buffer comes whole through the
// foreign-file path the attribution reads /proc with; a link is not
// followed; a missing file is false.
TEST(ProcFilesTest, ReadsALongCommandLineWhole) {
  // A shell blocked in its `read` builtin keeps its argv (no exec) until
  // its stdin closes; its output goes nowhere, so nothing waits for it.
  std::string long_name(10000, 'x');
  char* argv[] = {const_cast<char*>("/bin/sh"), const_cast<char*>("-c"), const_cast<char*>("read line"),
                  long_name.data(), nullptr};
  int in[2];
  ASSERT_EQ(pipe(in), 0);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in[0], 0);
  posix_spawn_file_actions_addclose(&actions, in[1]);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  ASSERT_EQ(posix_spawn(&pid, "/bin/sh", &actions, nullptr, argv, environ), 0);
  posix_spawn_file_actions_destroy(&actions);
  close(in[0]);
  std::string want = std::string("/bin/sh\0-c\0read line\0", 21) + long_name + std::string(1, '\0');
  std::string cmdline;
  bool read = false;
  for (int i = 0; i < 500 && cmdline != want; ++i) {  // Until the exec is done.
    if (i > 0) usleep(10'000);
    read = ReadSmallFile("/proc/" + std::to_string(pid) + "/cmdline", &cmdline);
  }
  close(in[1]);  // The shell's read sees the end and it exits.
  waitpid(pid, nullptr, 0);
  EXPECT_TRUE(read);
  EXPECT_EQ(cmdline, want);
  std::string text;
  ASSERT_TRUE(ReadSmallFile("/proc/self/cmdline", &text, 3));
  EXPECT_EQ(text.size(), 3u);
  EXPECT_FALSE(ReadSmallFile("/proc/self/exe", &text));  // A link.
  EXPECT_FALSE(ReadSmallFile("/nonexistent", &text));
}

}  // namespace
}  // namespace tarmac
