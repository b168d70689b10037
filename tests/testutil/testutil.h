// SPDX-License-Identifier: Apache-2.0
//
// Helpers shared by integration tests: temporary directories, scenario files,
// and real child processes (tarmac-simload, the tarmac CLI) started with a
// controlled environment.
#pragma once

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

namespace tarmac::testing {

// A fresh directory under $TMPDIR, removed with its contents on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  // Writes `text` to path()/name (creating its folders) and returns the full
  // path.
  std::string Write(const std::string& name, const std::string& text) const;

 private:
  std::string path_;
};

std::string BinDir();        // Where tarmac and tarmac-simload are.
std::string FakeNvmlPath();  // build/fakenvml/libnvidia-ml.so.1
std::string LegacyFakeNvmlPath();
std::string SourceDir();

struct RunResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Runs `argv` with `env` added to the environment, waits, and captures
// stdout and stderr.
RunResult RunCommand(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env);

// A child process that is killed (SIGKILL) and reaped on destruction unless
// already waited for.
class Child {
 public:
  // stderr goes to `stderr_path` (default: discarded).
  Child(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
        const std::string& stderr_path = "/dev/null");
  ~Child();
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  pid_t pid() const { return pid_; }
  // Sends `signal` and reaps the child. Returns its wait status.
  int KillAndWait(int signal);
  // Waits for the child to exit by itself (bounded by the test's timeout).
  int Wait();

 private:
  pid_t pid_ = -1;
};

// Waits (polling, bounded) until `path` names a load file of `pid` in the sim
// dir, i.e. the simload has registered. Returns false on timeout.
bool WaitForLoad(const std::string& sim_dir, pid_t pid);

}  // namespace tarmac::testing
