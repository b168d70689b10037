// SPDX-License-Identifier: Apache-2.0
#include "backfill/engine_process.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "backfill/engine_client.h"
#include "common/environment.h"
#include "common/pidfd.h"

namespace tarmac::backfill {
namespace {

// A free loopback port, as the kernel picks one.
Result<int> FreePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::IOError("socket", std::strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    ::close(fd);
    return Status::IOError("cannot find a free port", std::strerror(errno));
  }
  ::close(fd);
  return static_cast<int>(ntohs(addr.sin_port));
}

std::string Replaced(std::string text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

std::string ExitText(int status) {
  if (WIFEXITED(status)) return fmt::format("exit status {}", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return fmt::format("signal {}", strsignal(WTERMSIG(status)));
  return "an unknown end";
}

}  // namespace

Result<EngineProcess> EngineProcess::Start(const EngineLaunch& launch, Clock* clock) {
  Result<int> port = FreePort();
  if (!port.ok()) return port.status();
  std::string p = std::to_string(port.value());
  std::string command = Replaced(launch.command, "{port}", p);
  // Everything the child needs is made before fork: the runner has threads.
  EnvironmentChanges set = launch.lease_env;
  set.insert(set.end(), {{"TARMAC_ENGINE_PORT", p},
                         {"OLLAMA_HOST", "127.0.0.1:" + p},
                         {"OLLAMA_VULKAN", "0"},
                         {"CUDA_DEVICE_ORDER", "PCI_BUS_ID"}});
  std::vector<std::string> env = EnvironmentWith(set);
  std::vector<char*> envp = EnvironmentPointers(env);
  std::string sh = "/bin/sh", dash_c = "-c";
  char* argv[] = {sh.data(), dash_c.data(), command.data(), nullptr};
  int log = ::open(launch.log_path.c_str(),
                   O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
  if (log < 0) return Status::IOError(fmt::format("cannot write {}", launch.log_path), std::strerror(errno));
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(log);
    return Status::IOError("fork", std::strerror(errno));
  }
  if (pid == 0) {
    ::setpgid(0, 0);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    int null = ::open("/dev/null", O_RDONLY);
    if (null >= 0) ::dup2(null, 0);
    ::dup2(log, 1);
    ::dup2(log, 2);
    ::execve(argv[0], argv, envp.data());
    _exit(127);
  }
  ::setpgid(pid, pid);
  ::close(log);
  EngineProcess engine;
  engine.clock_ = clock;
  engine.pid_ = pid;
  engine.base_url_ = "http://127.0.0.1:" + p;
  engine.log_path_ = launch.log_path;
  return engine;
}

bool EngineProcess::HasExited() {
  if (is_reaped_) return true;
  int status = 0;
  if (::waitpid(pid_, &status, WNOHANG) == pid_) {
    is_reaped_ = true;
    exit_status_ = status;
  }
  return is_reaped_;
}

Status EngineProcess::WaitReady(const std::string& kind, std::chrono::seconds timeout,
                                const std::function<bool()>& give_up) {
  auto deadline = clock_->SteadyNow() + timeout;
  for (;;) {
    if (HasExited()) {
      return Status::Unavailable(fmt::format("the engine exited ({}) before it answered; its log: {}",
                                             ExitText(exit_status_), log_path_));
    }
    if (IsEngineUp(base_url_, kind)) return Status::OK();
    if (give_up()) return Status::Cancelled("stopped while the engine started");
    if (clock_->SteadyNow() >= deadline) {
      return Status::DeadlineExceeded(fmt::format("the engine did not answer on {} within {} s; its log: {}",
                                                  base_url_, timeout.count(), log_path_));
    }
    clock_->SleepUntil(clock_->SteadyNow() + std::chrono::milliseconds(50), {});
  }
}

void EngineProcess::Stop(std::chrono::milliseconds grace) {
  if (pid_ <= 0) return;
  ::kill(-pid_, SIGTERM);
  auto deadline = clock_->SteadyNow() + grace;
  // A pidfd wakes the wait the moment the engine exits (a real job may be
  // waiting on its GPU); without one (a kernel before 5.3), a look every 5 ms.
  int pidfd = PidfdOpen(pid_);
  while (!HasExited() && clock_->SteadyNow() < deadline) {
    if (pidfd >= 0) {
      pollfd exited{pidfd, POLLIN, 0};
      ::poll(&exited, 1, 5);
    } else {
      clock_->SleepUntil(clock_->SteadyNow() + std::chrono::milliseconds(5), {});
    }
  }
  if (pidfd >= 0) ::close(pidfd);
  // The group too: a server's own children (Ollama's runner) hold the GPU.
  ::kill(-pid_, SIGKILL);
  if (!is_reaped_) {
    int status = 0;
    if (::waitpid(pid_, &status, 0) == pid_) exit_status_ = status;
    is_reaped_ = true;
  }
}

}  // namespace tarmac::backfill
