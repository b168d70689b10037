/* SPDX-License-Identifier: Apache-2.0
 *
 * Runs a command and prints its CPU time and peak RSS: "USER_S SYS_S MAXRSS_KIB".
 * A small launcher of its own, because Linux carries a process's peak RSS
 * across exec: a child forked from a big parent (Python) would report the
 * parent's size.
 */
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <fcntl.h>

int main(int argc, char** argv) {
  if (argc < 2) { fprintf(stderr, "usage: rusage_run COMMAND [ARGS...]\n"); return 2; }
  pid_t pid = fork();
  if (pid == 0) {
    int null = open("/dev/null", O_WRONLY);
    dup2(null, 1);
    dup2(null, 2);
    execvp(argv[1], argv + 1);
    _exit(127);
  }
  int status = 0;
  struct rusage usage;
  if (wait4(pid, &status, 0, &usage) < 0) return 1;
  printf("%ld.%06ld %ld.%06ld %ld\n", (long)usage.ru_utime.tv_sec, (long)usage.ru_utime.tv_usec,
         (long)usage.ru_stime.tv_sec, (long)usage.ru_stime.tv_usec, usage.ru_maxrss);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
