// SPDX-License-Identifier: Apache-2.0
#include "cli/run_command.h"

#include <errno.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>

#include "cli/lease_exit.h"
#include "client/lease_request.h"
#include "client/lease_wait.h"
#include "common/terminal.h"
#include "common/terminal_text.h"
#include "common/text_wrap.h"
#include "common/time_spec.h"
#include "sched/lease_json.h"

namespace tarmac::cli {
namespace {

using nlohmann::json;

// Signals tarmac run passes on to its command's process group.
constexpr int kForwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH, SIGCONT, SIGTSTP};

sigset_t ForwardedSet() {
  sigset_t set;
  sigemptyset(&set);
  for (int s : kForwarded) sigaddset(&set, s);
  sigaddset(&set, SIGCHLD);
  return set;
}

std::string Joined(const std::vector<std::string>& argv) {
  std::string out = fmt::format("{}", fmt::join(argv, " "));
  return out;
}

void ExportLeaseEnv(const sched::Lease& lease) {
  for (const auto& [name, value] : client::LeaseEnvironment(lease)) setenv(name.c_str(), value.c_str(), 1);
}

// Exit code of a wait status, as a shell reports it.
int ExitCodeOf(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return kExitError;
}

// Tells the terminal what the agent says about a lease while its command
// runs: a new idle warning, or that the lease has ended and why.
class LeaseNews {
 public:
  LeaseNews(const client::AgentClient* agent, int64_t id, const char* what)
      : watcher_(agent, id), id_(id), what_(what) {}
  void Poll() {
    client::LeaseWatcher::News news = watcher_.Poll();
    if (!news.warning.empty())
      std::fprintf(stderr, "\ntarmac: %s: warning: %s\n", what_, ForTerminal(news.warning).c_str());
    if (news.ended) Say(*news.ended);
  }
  void SayEnded(const std::string& reason) {
    if (watcher_.MarkEnded()) Say(reason);
  }

 private:
  void Say(const std::string& reason) {
    std::fprintf(stderr, "tarmac: %s: lease %lld ended: %s\n", what_, static_cast<long long>(id_),
                 ForTerminal(reason).c_str());
  }
  client::LeaseWatcher watcher_;
  int64_t id_;
  const char* what_;
};

// A signalfd for the forwarded signals (blocked by the caller): it becomes
// readable when one arrives, which ends a wait for the agent at once.
class SignalFd {
 public:
  explicit SignalFd(const sigset_t& set) : fd_(signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK)) {}
  ~SignalFd() {
    if (fd_ >= 0) close(fd_);
  }
  SignalFd(const SignalFd&) = delete;
  SignalFd& operator=(const SignalFd&) = delete;
  int fd() const { return fd_; }
  // The signal that came, or 0 (SIGCHLD and SIGWINCH are not interrupts).
  int Take() {
    signalfd_siginfo info{};
    while (read(fd_, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
      int sig = static_cast<int>(info.ssi_signo);
      if (sig != SIGCHLD && sig != SIGWINCH) return sig;
    }
    return 0;
  }

 private:
  int fd_;
};

}  // namespace

void AddLeaseAskOptions(CLI::App* cmd, LeaseAsk* ask) {
  cmd->add_option("--gpus,-n", ask->gpus, "How many GPUs")->default_str("1");
  cmd->add_option(
         "--gpu", ask->uuids,
         "Exactly these GPUs: indices or UUIDs, comma-separated (as CUDA_VISIBLE_DEVICES names them)")
      ->excludes("--gpus");
  cmd->add_option("--mig", ask->mig_profile,
                  "One MIG instance of this profile instead of whole GPUs, e.g. 1g.10gb (packed onto GPUs "
                  "already in use); CUDA_VISIBLE_DEVICES gets its MIG- UUID")
      ->excludes("--gpu");
  cmd->add_option("--mig-uuid", ask->mig_uuid, "Exactly this MIG instance (MIG-...)")
      ->excludes("--gpu")
      ->excludes("--mig");
  cmd->add_option("--min-free-memory", ask->min_free_memory, "Free memory each GPU needs, e.g. 20GiB");
  cmd->add_option(
      "--idle-timeout", ask->idle_timeout,
      "Idle this long (no SM activity from your processes) and the idle policy applies, e.g. 30m");
  cmd->add_option("--priority", ask->priority,
                  "low, normal or high; backfill: preemptible, on idle GPUs only, revoked (told, then "
                  "terminated after [backfill] grace) when another request needs the GPU")
      ->check(CLI::IsMember(sched::PriorityNames()))
      ->default_str("normal");
  cmd->add_flag(
      "--lend-idle", ask->lend_idle,
      "While your processes sit at 0 % SM on a GPU (for a delay learned from them, at most [backfill] "
      "lend_after), backfill may use its memory above their peak plus a margin (on a reservation, all but "
      "the margin where you run nothing); each GPU on its own, revoked the moment they compute or allocate "
      "more there");
  cmd->add_flag(
      "--allow-unhealthy", ask->allow_unhealthy,
      "Root or the admin group: GPUs whose readings say to drain them (an Xid, ECC errors) may be "
      "granted, to test or burn one in; never one unreadable or drained by hand (tarmac undrain it)");
  cmd->add_flag("--no-wait{true},--queue{false}", ask->no_wait,
                "--no-wait: exit 75 at once when no GPUs fit; --queue (default): wait in the queue");
}

Granted AskAndWait(const client::AgentClient& agent, const json& params, const char* what) {
  // --no-wait gives up within kNoWaitPatience against an agent that does
  // not answer (exit 69); a queued request waits as long as the agent does.
  bool is_no_wait = params.is_object() && params.contains("wait") && params["wait"] == false;
  client::CallOptions options;
  if (is_no_wait) options = {kNoWaitPatience, kNoWaitPatience, -1};
  Result<client::LeaseAnswer> answer = agent.RequestLease(params, options);
  if (!answer.ok()) {
    Status s = answer.status();
    if (s.code() == StatusCode::kUnavailable && is_no_wait) {
      s = Status::DeadlineExceeded(fmt::format("the agent did not answer within {} s ({})",
                                               kNoWaitPatience.count() / 1000, s.message()));
    }
    return {{}, LeaseExit(what, s)};
  }
  bool is_tty = isatty(STDERR_FILENO) != 0;
  if (answer.value().is_granted()) {
    // Said on a terminal only: a pipe gets the command's own output.
    if (is_tty) {
      std::fprintf(stderr, "tarmac: %s: lease %lld: %s\n", what,
                   static_cast<long long>(answer.value().lease.lease.id),
                   client::GpuNames(answer.value().lease.lease).c_str());
    }
    return {answer.value().lease, 0};
  }
  int64_t id = answer.value().id;
  LiveText live(stderr);
  int64_t shown_position = -1;
  // On a terminal, the status drawn again in place; elsewhere (a log), its
  // lines only when the position changes. Either way wrapped to the width.
  auto show = [&](const client::LeaseAnswer& queued) {
    std::string prefix = fmt::format("tarmac: {}: queued as request {}: ", what, id);
    std::string text =
        prefix + WrapText(ForTerminal(queued.reason), static_cast<size_t>(TerminalColumns(STDERR_FILENO)),
                          TextColumns(prefix), 4);
    if (is_tty) {
      live.Show(text);
    } else if (queued.position != shown_position) {
      std::fprintf(stderr, "%s\n", text.c_str());
      shown_position = queued.position;
    }
  };
  show(answer.value());
  // Wait with the forwarded signals blocked: an interrupt cancels the
  // request instead of leaving it queued.
  sigset_t set = ForwardedSet();
  sigset_t old;
  sigprocmask(SIG_BLOCK, &set, &old);
  SignalFd signals(set);
  Granted result{{}, kExitError};
  for (;;) {
    Result<client::LeaseAnswer> now = client::WaitForGrant(agent, answer.value(), signals.fd(), show);
    int sig = now.ok() ? 0 : signals.Take();
    if (!now.ok() && now.status().code() == StatusCode::kCancelled && sig == 0)
      continue;  // SIGCHLD, SIGWINCH.
    if (sig > 0) {
      agent.ReleaseLease(id).status().IgnoreError();
      if (is_tty) std::fprintf(stderr, "\n");
      std::fprintf(stderr, "tarmac: %s: %s received; request %lld cancelled\n", what, strsignal(sig),
                   static_cast<long long>(id));
      result.exit_code = 128 + sig;
    } else if (!now.ok()) {
      result.exit_code = LeaseExit(what, now.status());
    } else if (now.value().is_granted()) {
      live.Clear();
      std::fprintf(stderr, "tarmac: %s: request %lld granted: lease %lld, %s\n", what,
                   static_cast<long long>(id), static_cast<long long>(now.value().lease.lease.id),
                   client::GpuNames(now.value().lease.lease).c_str());
      result = {now.value().lease, 0};
    } else {
      if (is_tty) std::fprintf(stderr, "\n");
      std::fprintf(stderr, "tarmac: %s: request %lld ended: %s\n", what, static_cast<long long>(id),
                   ForTerminal(now.value().reason).c_str());
    }
    break;
  }
  sigprocmask(SIG_SETMASK, &old, nullptr);
  return result;
}

CLI::App* AddRunCommand(CLI::App* app, RunOptions* options, GlobalOptions* global) {
  CLI::App* cmd = app->add_subcommand(
      "run",
      "Run a command on GPUs the agent leases to you: waits in the queue when none fit, sets "
      "CUDA_VISIBLE_DEVICES and NVIDIA_VISIBLE_DEVICES, forwards signals, and exits with the command's "
      "status. "
      "The lease ends when the command and everything it started have exited.");
  AddLeaseAskOptions(cmd, &options->ask);
  cmd->add_option("--max-time", options->ask.max_time,
                  "Wall-clock limit, e.g. 4h: then SIGTERM, [leases] kill_grace, SIGKILL");
  AddSocketOption(cmd, global);
  cmd->add_option("command", options->command, "The command and its arguments, after --")->required();
  cmd->footer("Example: tarmac run --gpus 2 --max-time 4h -- python train.py --lr 3e-4");
  return cmd;
}

namespace {

// The child's side of fork: its own process group (the terminal's
// foreground when ours was), the lease's environment, then the command.
[[noreturn]] void ExecCommand(const RunOptions& options, const sched::Lease& lease, bool is_foreground,
                              const sigset_t& old) {
  setpgid(0, 0);
  if (is_foreground) {
    signal(SIGTTOU, SIG_IGN);
    tcsetpgrp(STDIN_FILENO, getpid());
    signal(SIGTTOU, SIG_DFL);
  }
  sigprocmask(SIG_SETMASK, &old, nullptr);
  ExportLeaseEnv(lease);
  std::vector<char*> argv;
  for (const std::string& a : options.command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  execvp(argv[0], argv.data());
  std::fprintf(stderr, "tarmac: run: %s: %s\n", argv[0], std::strerror(errno));
  _exit(errno == ENOENT ? 127 : 126);
}

// A backfill lease may be revoked for another holder: the command hears
// of it at once (SIGTERM), so it can stop cleanly within the grace.
std::unique_ptr<client::RevocationWatch> WatchRevocation(client::AgentClient* agent, int64_t id,
                                                         pid_t child) {
  std::unique_ptr<client::RevocationWatch> revocation;
  revocation =
      std::make_unique<client::RevocationWatch>(agent, id, [child, id](const sched::LeaseShown& lease) {
        std::string by = lease.revoke_by_unix
                             ? FormatRfc3339(std::chrono::system_clock::time_point(
                                   std::chrono::duration_cast<std::chrono::system_clock::duration>(
                                       std::chrono::duration<double>(*lease.revoke_by_unix))))
                             : std::string("the grace");
        // revoked_for names the request; 0: another scheduler (Slurm, the kubelet).
        const char* whom = lease.lease.revoked_for != 0 ? "another request" : "another scheduler's job";
        std::fprintf(stderr,
                     "\ntarmac: run: backfill lease %lld revoked for %s; SIGTERM to the command; "
                     "the agent ends the lease at %s\n",
                     static_cast<long long>(id), whom, by.c_str());
        kill(-child, SIGTERM);
      });
  return revocation;
}

// Forwards signals to the command's group and reaps until no descendant
// is left; the command's own wait status, when it was reaped.
std::optional<int> WaitForDescendants(pid_t child, const sigset_t& set, LeaseNews* watcher) {
  std::optional<int> status;
  for (;;) {
    // Reap whatever has exited; done when no descendant is left.
    bool is_empty = false;
    for (;;) {
      int st = 0;
      pid_t w = waitpid(-1, &st, WNOHANG);
      if (w == child) status = st;
      if (w > 0) continue;
      is_empty = w < 0 && errno == ECHILD;
      break;
    }
    if (is_empty) return status;
    timespec wait_for{1, 0};
    int sig = sigtimedwait(&set, nullptr, &wait_for);
    if (sig > 0 && sig != SIGCHLD) kill(-child, sig);
    watcher->Poll();
  }
}

}  // namespace

int RunRun(const GlobalOptions& global, const RunOptions& options) {
  Result<json> params = client::LeaseParams(options.ask, "run", Joined(options.command));
  if (!params.ok()) return LeaseExit("run", params.status());
  client::AgentClient agent(global.socket);
  Granted granted = AskAndWait(agent, params.value(), "run");
  if (granted.exit_code != 0) return granted.exit_code;
  const sched::Lease& lease = granted.lease.lease;
  int64_t id = lease.id;

  // Everything the command starts is re-parented to us when its parent
  // exits, so that we see all of it end before the lease does.
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  sigset_t set = ForwardedSet();
  sigset_t old;
  sigprocmask(SIG_BLOCK, &set, &old);
  bool is_foreground = isatty(STDIN_FILENO) && tcgetpgrp(STDIN_FILENO) == getpgrp();
  pid_t child = fork();
  if (child < 0) {
    std::fprintf(stderr, "tarmac: run: fork: %s\n", std::strerror(errno));
    agent.ReleaseLease(id).status().IgnoreError();
    return kExitError;
  }
  if (child == 0) ExecCommand(options, lease, is_foreground, old);
  setpgid(child, child);
  Result<json> attached = agent.AttachLease(id, child);
  if (!attached.ok()) {
    std::fprintf(stderr, "tarmac: run: the agent could not attach pid %d to lease %lld: %s\n", child,
                 static_cast<long long>(id), attached.status().message().c_str());
  }

  std::unique_ptr<client::RevocationWatch> revocation;
  if (options.ask.priority == "backfill") revocation = WatchRevocation(&agent, id, child);
  LeaseNews watcher(&agent, id, "run");
  std::optional<int> status = WaitForDescendants(child, set, &watcher);
  if (is_foreground) {
    signal(SIGTTOU, SIG_IGN);
    tcsetpgrp(STDIN_FILENO, getpgrp());
    signal(SIGTTOU, SIG_DFL);
  }
  sigprocmask(SIG_SETMASK, &old, nullptr);
  revocation.reset();
  Result<client::ReleaseAnswer> released = agent.ReleaseLease(id);
  if (!released.ok() && released.status().code() != StatusCode::kNotFound) {
    std::fprintf(stderr, "tarmac: run: releasing lease %lld: %s\n", static_cast<long long>(id),
                 released.status().message().c_str());
  } else if (released.ok() && released.value().was_ended) {
    // The agent ended it first (max-time, idle policy, an admin): say why.
    watcher.SayEnded(released.value().reason);
    // Stopped by --max-time: 124, as timeout(1) exits.
    if (released.value().ended_by == "expired") {
      std::fprintf(stderr, "tarmac: run: exit %d: the command ran out of its --max-time\n", kExitTimedOut);
      return kExitTimedOut;
    }
  }
  return status ? ExitCodeOf(*status) : kExitError;
}

CLI::App* AddShellCommand(CLI::App* app, ShellOptions* options, GlobalOptions* global) {
  CLI::App* cmd = app->add_subcommand(
      "shell",
      "Open a shell (or run -- CMD) inside a reservation (tarmac reserve): CUDA_VISIBLE_DEVICES and "
      "NVIDIA_VISIBLE_DEVICES name its GPUs. Without LEASE: $TARMAC_LEASE_ID, or your only reservation.");
  cmd->add_option("--lease", options->lease, "The reservation's lease id");
  AddSocketOption(cmd, global);
  cmd->add_option("command", options->command, "A command to run instead of $SHELL, after --");
  return cmd;
}

int RunShell(const GlobalOptions& global, const ShellOptions& options, Clock* clock) {
  client::AgentClient agent(global.socket);
  Result<int64_t> id = agent.ChooseLease(options.lease, "reservation");
  if (!id.ok()) return LeaseExit("shell", id.status());
  Result<client::LeaseAnswer> got = agent.GetLease(id.value());
  if (!got.ok()) return LeaseExit("shell", got.status());
  if (!got.value().is_granted()) {
    return LeaseExit("shell", Status::NotFound(fmt::format("lease {} is not held (it is {})", id.value(),
                                                           got.value().is_queued() ? "queued" : "ended")));
  }
  const sched::Lease& lease = got.value().lease.lease;
  if (lease.uid != static_cast<int64_t>(getuid()) && getuid() != 0) {
    return LeaseExit("shell",
                     Status::PermissionDenied(fmt::format("lease {} belongs to {}", id.value(), lease.user)));
  }
  ExportLeaseEnv(lease);
  std::vector<std::string> command = options.command;
  if (command.empty()) {
    const char* shell = std::getenv("SHELL");
    command.push_back(shell != nullptr && *shell != '\0' ? shell : "/bin/sh");
    std::fprintf(stderr, "tarmac: shell: lease %lld, %s; exit the shell to leave (the reservation stays)\n",
                 static_cast<long long>(id.value()), client::GpuNames(lease).c_str());
  }
  // The shell runs as our child, in our process group (so the terminal's
  // keys reach it as usual), while we pass on the agent's idle warnings.
  signal(SIGINT, SIG_IGN);
  signal(SIGQUIT, SIG_IGN);
  pid_t child = fork();
  if (child < 0) {
    std::fprintf(stderr, "tarmac: shell: fork: %s\n", std::strerror(errno));
    return kExitError;
  }
  if (child == 0) {
    signal(SIGINT, SIG_DFL);
    signal(SIGQUIT, SIG_DFL);
    std::vector<char*> argv;
    for (const std::string& a : command) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    std::fprintf(stderr, "tarmac: shell: %s: %s\n", argv[0], std::strerror(errno));
    _exit(errno == ENOENT ? 127 : 126);
  }
  LeaseNews watcher(&agent, id.value(), "shell");
  int status = 0;
  for (;;) {
    pid_t w = waitpid(child, &status, WNOHANG | WUNTRACED);
    if (w == child && !WIFSTOPPED(status)) break;
    if (w < 0 && errno != EINTR) return kExitError;
    watcher.Poll();
    clock->SleepUntil(clock->SteadyNow() + std::chrono::milliseconds(100), std::stop_token());
  }
  return ExitCodeOf(status);
}

}  // namespace tarmac::cli
