// SPDX-License-Identifier: Apache-2.0
//
// ExitWatch says a process has exited once it has (a zombie not yet reaped
// included), and not before.
#include "sim/exit_watch.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

namespace tarmac::sim {
namespace {

pid_t Sleeper() {
  pid_t pid = ::fork();
  if (pid == 0) {
    ::pause();
    _exit(0);
  }
  return pid;
}

TEST(ExitWatchTest, SaysSoOnceAWatchedProcessHasExited) {
  pid_t a = Sleeper();
  pid_t b = Sleeper();
  ExitWatch watch;
  EXPECT_FALSE(watch.AnyExited());  // Nothing watched.
  watch.Watch({a, b, ::getpid()});
  EXPECT_FALSE(watch.AnyExited());
  ::kill(b, SIGKILL);
  siginfo_t info{};
  ::waitid(P_PID, static_cast<id_t>(b), &info, WEXITED | WNOWAIT);  // Exited, still a zombie.
  EXPECT_TRUE(watch.AnyExited());
  ::waitpid(b, nullptr, 0);
  EXPECT_TRUE(watch.AnyExited());
  // Watching anew forgets the old set.
  watch.Watch({a});
  EXPECT_FALSE(watch.AnyExited());
  ::kill(a, SIGKILL);
  ::waitpid(a, nullptr, 0);
  EXPECT_TRUE(watch.AnyExited());
}

TEST(ExitWatchTest, APidWithNoProcessHasExitedAlready) {
  pid_t gone = Sleeper();
  ::kill(gone, SIGKILL);
  ::waitpid(gone, nullptr, 0);
  ExitWatch watch;
  watch.Watch({gone});
  EXPECT_TRUE(watch.AnyExited());
}

}  // namespace
}  // namespace tarmac::sim
