// SPDX-License-Identifier: Apache-2.0
#include "cli/run_command.h"

#include <errno.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "cli/lease_client.h"
#include "common/random_id.h"
#include "common/units.h"

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
  std::string out;
  for (const std::string& a : argv) out += (out.empty() ? "" : " ") + a;
  return out;
}

Result<int64_t> Seconds(const std::string& text, const char* option) {
  Result<std::chrono::milliseconds> d = ParseDuration(text);
  if (!d.ok()) return d.status().WithContext(option);
  if (d.value().count() <= 0) return Status::InvalidArgument(fmt::format("{}: must be positive", option));
  return std::max<int64_t>(1, std::chrono::duration_cast<std::chrono::seconds>(d.value()).count());
}

void ExportLeaseEnv(const json& lease) {
  std::string uuids = UuidList(lease);
  setenv("CUDA_VISIBLE_DEVICES", uuids.c_str(), 1);
  setenv("NVIDIA_VISIBLE_DEVICES", uuids.c_str(), 1);
  setenv("TARMAC_LEASE_ID", std::to_string(lease["id"].get<int64_t>()).c_str(), 1);
  setenv("TARMAC_LEASE_TOKEN", lease.value("token", std::string()).c_str(), 1);
}

// Exit code of a wait status, as a shell reports it.
int ExitCodeOf(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return kExitError;
}

// Tells the terminal what the agent says about a lease while its command
// runs: a new idle warning, or that the lease has ended and why. Polls at
// most once a second.
class LeaseWatcher {
 public:
  LeaseWatcher(std::string socket, int64_t id, const char* what) : socket_(std::move(socket)), id_(id), what_(what) {}

  void Poll() {
    auto now = std::chrono::steady_clock::now();
    if (now < next_) return;
    next_ = now + std::chrono::seconds(1);
    Result<json> got = CallLease(socket_, "lease.get", {{"id", id_}}, std::chrono::milliseconds(0));
    if (!got.ok()) return;
    if (got.value()["state"] == "granted") {
      const json& w = got.value()["lease"].value("warning", json());
      std::string warning = w.is_string() ? w.get<std::string>() : std::string();
      if (!warning.empty() && warning != warned_) std::fprintf(stderr, "\ntarmac: %s: warning: %s\n", what_, warning.c_str());
      warned_ = warning;
    } else if (got.value()["state"] == "ended") {
      SayEnded(got.value().value("reason", ""));
    }
  }
  void SayEnded(const std::string& reason) {
    if (has_said_ended_) return;
    std::fprintf(stderr, "tarmac: %s: lease %lld ended: %s\n", what_, static_cast<long long>(id_), reason.c_str());
    has_said_ended_ = true;
  }

 private:
  std::string socket_;
  int64_t id_;
  const char* what_;
  std::string warned_;
  bool has_said_ended_ = false;
  std::chrono::steady_clock::time_point next_ = std::chrono::steady_clock::now() + std::chrono::seconds(1);
};

}  // namespace

void AddLeaseAskOptions(CLI::App* cmd, LeaseAsk* ask) {
  cmd->add_option("--gpus,-n", ask->gpus, "How many GPUs")->default_str("1");
  cmd->add_option("--gpu", ask->uuids, "Exactly these GPUs: UUIDs, comma-separated")->excludes("--gpus");
  cmd->add_option("--min-free-memory", ask->min_free_memory, "Free memory each GPU needs, e.g. 20GiB");
  cmd->add_option("--idle-timeout", ask->idle_timeout,
                  "Idle this long (no SM activity from your processes) and the idle policy applies, e.g. 30m");
  cmd->add_option("--priority", ask->priority, "low, normal or high")
      ->check(CLI::IsMember({"low", "normal", "high"}))
      ->default_str("normal");
  cmd->add_flag("--no-wait{true},--queue{false}", ask->no_wait,
                "--no-wait: exit 75 at once when no GPUs fit; --queue (default): wait in the queue");
}

Result<json> LeaseParams(const LeaseAsk& ask, const std::string& kind, const std::string& command) {
  // One key per invocation: a request resent after a timeout is the same
  // request to the agent, never a second lease.
  json p = {{"kind", kind},
            {"priority", ask.priority},
            {"wait", !ask.no_wait},
            {"command", command},
            {"request_key", RandomHex128()}};
  if (!ask.uuids.empty()) {
    json uuids = json::array();
    size_t at = 0;
    while (at <= ask.uuids.size()) {
      size_t comma = ask.uuids.find(',', at);
      std::string one = ask.uuids.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
      if (one.empty()) return Status::InvalidArgument("--gpu: expected UUIDs separated by commas");
      uuids.push_back(one);
      if (comma == std::string::npos) break;
      at = comma + 1;
    }
    p["uuids"] = uuids;
  } else {
    p["gpus"] = ask.gpus;
  }
  if (!ask.min_free_memory.empty()) {
    Result<int64_t> bytes = ParseBytes(ask.min_free_memory);
    if (!bytes.ok()) return bytes.status().WithContext("--min-free-memory");
    p["min_free_memory_bytes"] = bytes.value();
  }
  if (!ask.max_time.empty()) {
    Result<int64_t> s = Seconds(ask.max_time, kind == "reservation" ? "--for" : "--max-time");
    if (!s.ok()) return s.status();
    p["max_time_seconds"] = s.value();
  }
  if (!ask.idle_timeout.empty()) {
    Result<int64_t> s = Seconds(ask.idle_timeout, "--idle-timeout");
    if (!s.ok()) return s.status();
    p["idle_timeout_seconds"] = s.value();
  }
  return p;
}

Granted AskAndWait(const std::string& socket, const json& params, const char* what) {
  // --no-wait gives up within kNoWaitPatience against an agent that does
  // not answer (exit 69); a queued request waits as long as the agent does.
  bool is_no_wait = params.value("wait", true) == false;
  Result<json> answer = is_no_wait ? CallLease(socket, "lease.request", params, kNoWaitPatience, kNoWaitPatience)
                                   : CallLease(socket, "lease.request", params);
  if (!answer.ok()) {
    Status s = answer.status();
    if (s.code() == StatusCode::kUnavailable && is_no_wait) {
      s = Status::DeadlineExceeded(fmt::format("the agent did not answer within {} s ({})",
                                               kNoWaitPatience.count() / 1000, s.message()));
    }
    return {nullptr, LeaseExit(what, s)};
  }
  if (answer.value()["state"] == "granted") return {answer.value()["lease"], 0};
  int64_t id = answer.value()["request"]["id"].get<int64_t>();
  bool is_tty = isatty(STDERR_FILENO) != 0;
  std::string shown;
  int64_t shown_position = -1;
  // Wait with the forwarded signals blocked: an interrupt cancels the
  // request instead of leaving it queued.
  sigset_t set = ForwardedSet();
  sigset_t old;
  sigprocmask(SIG_BLOCK, &set, &old);
  Granted result{nullptr, kExitError};
  json request = answer.value()["request"];
  for (;;) {
    // On a terminal, one live line; elsewhere (a log), a line only when the
    // position changes.
    std::string line = fmt::format("tarmac: {}: queued as request {}: {}", what, id, request.value("reason", ""));
    int64_t position = request.value("position", int64_t{0});
    if (is_tty && line != shown) {
      std::fprintf(stderr, "\r\033[K%s", line.c_str());
      shown = line;
    } else if (!is_tty && position != shown_position) {
      std::fprintf(stderr, "%s\n", line.c_str());
      shown_position = position;
    }
    timespec wait_for{0, 250 * 1000 * 1000};
    int sig = sigtimedwait(&set, nullptr, &wait_for);
    if (sig > 0 && sig != SIGCHLD && sig != SIGWINCH) {
      CallLease(socket, "lease.release", {{"id", id}}).status().IgnoreError();
      if (is_tty) std::fprintf(stderr, "\n");
      std::fprintf(stderr, "tarmac: %s: %s received; request %lld cancelled\n", what, strsignal(sig),
                   static_cast<long long>(id));
      result.exit_code = 128 + sig;
      break;
    }
    Result<json> now = CallLease(socket, "lease.get", {{"id", id}}, std::chrono::minutes(10));
    if (!now.ok()) {
      result.exit_code = LeaseExit(what, now.status());
      break;
    }
    if (now.value()["state"] == "granted") {
      if (is_tty) std::fprintf(stderr, "\r\033[K");
      const json& lease = now.value()["lease"];
      std::fprintf(stderr, "tarmac: %s: request %lld granted: GPU %s\n", what, static_cast<long long>(id),
                   UuidList(lease).c_str());
      result = {lease, 0};
      break;
    }
    if (now.value()["state"] == "ended") {
      if (is_tty) std::fprintf(stderr, "\n");
      std::fprintf(stderr, "tarmac: %s: request %lld ended: %s\n", what, static_cast<long long>(id),
                   now.value().value("reason", "").c_str());
      break;
    }
    request = now.value()["request"];
  }
  sigprocmask(SIG_SETMASK, &old, nullptr);
  return result;
}

CLI::App* AddRunCommand(CLI::App* app, RunOptions* options, GlobalOptions* global) {
  CLI::App* cmd = app->add_subcommand(
      "run",
      "Run a command on GPUs the agent leases to you: waits in the queue when none fit, sets "
      "CUDA_VISIBLE_DEVICES and NVIDIA_VISIBLE_DEVICES, forwards signals, and exits with the command's status. "
      "The lease ends when the command and everything it started have exited.");
  AddLeaseAskOptions(cmd, &options->ask);
  cmd->add_option("--max-time", options->ask.max_time,
                  "Wall-clock limit, e.g. 4h: then SIGTERM, [leases] kill_grace, SIGKILL");
  AddSocketOption(cmd, global);
  cmd->add_option("command", options->command, "The command and its arguments, after --")->required();
  cmd->footer("Example: tarmac run --gpus 2 --max-time 4h -- python train.py --lr 3e-4");
  return cmd;
}

int RunRun(const GlobalOptions& global, const RunOptions& options) {
  Result<json> params = LeaseParams(options.ask, "run", Joined(options.command));
  if (!params.ok()) return LeaseExit("run", params.status());
  Granted granted = AskAndWait(global.socket, params.value(), "run");
  if (granted.exit_code != 0) return granted.exit_code;
  const json& lease = granted.lease;
  int64_t id = lease["id"].get<int64_t>();

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
    CallLease(global.socket, "lease.release", {{"id", id}}).status().IgnoreError();
    return kExitError;
  }
  if (child == 0) {
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
  setpgid(child, child);
  Result<json> attached = CallLease(global.socket, "lease.attach", {{"id", id}, {"pid", child}});
  if (!attached.ok()) {
    std::fprintf(stderr, "tarmac: run: the agent could not attach pid %d to lease %lld: %s\n", child,
                 static_cast<long long>(id), attached.status().message().c_str());
  }

  int status = 0;
  bool has_exited = false;
  LeaseWatcher watcher(global.socket, id, "run");
  for (;;) {
    // Reap whatever has exited; done when no descendant is left.
    bool is_empty = false;
    for (;;) {
      int st = 0;
      pid_t w = waitpid(-1, &st, WNOHANG);
      if (w == child) {
        status = st;
        has_exited = true;
      }
      if (w > 0) continue;
      is_empty = w < 0 && errno == ECHILD;
      break;
    }
    if (is_empty) break;
    timespec wait_for{1, 0};
    int sig = sigtimedwait(&set, nullptr, &wait_for);
    if (sig > 0 && sig != SIGCHLD) kill(-child, sig);
    watcher.Poll();
  }
  if (is_foreground) {
    signal(SIGTTOU, SIG_IGN);
    tcsetpgrp(STDIN_FILENO, getpgrp());
    signal(SIGTTOU, SIG_DFL);
  }
  sigprocmask(SIG_SETMASK, &old, nullptr);
  Result<json> released = CallLease(global.socket, "lease.release", {{"id", id}});
  if (!released.ok() && released.status().code() != StatusCode::kNotFound) {
    std::fprintf(stderr, "tarmac: run: releasing lease %lld: %s\n", static_cast<long long>(id),
                 released.status().message().c_str());
  } else if (released.ok() && released.value().value("state", "") == "ended") {
    // The agent ended it first (max-time, idle policy, an admin): say why.
    watcher.SayEnded(released.value().value("reason", ""));
  }
  return has_exited ? ExitCodeOf(status) : kExitError;
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

int RunShell(const GlobalOptions& global, const ShellOptions& options) {
  Result<int64_t> id = ChooseLease(global.socket, options.lease, "reservation");
  if (!id.ok()) return LeaseExit("shell", id.status());
  Result<json> got = CallLease(global.socket, "lease.get", {{"id", id.value()}});
  if (!got.ok()) return LeaseExit("shell", got.status());
  if (got.value()["state"] != "granted") {
    return LeaseExit("shell", Status::NotFound(fmt::format("lease {} is not held (it is {})", id.value(),
                                                           got.value()["state"].get<std::string>())));
  }
  const json& lease = got.value()["lease"];
  if (lease.value("uid", int64_t{-1}) != static_cast<int64_t>(getuid()) && getuid() != 0) {
    return LeaseExit("shell", Status::PermissionDenied(fmt::format("lease {} belongs to {}", id.value(),
                                                                   lease.value("user", std::string("?")))));
  }
  ExportLeaseEnv(lease);
  std::vector<std::string> command = options.command;
  if (command.empty()) {
    const char* shell = std::getenv("SHELL");
    command.push_back(shell != nullptr && *shell != '\0' ? shell : "/bin/sh");
    std::fprintf(stderr, "tarmac: shell: lease %lld, GPU %s; exit the shell to leave (the reservation stays)\n",
                 static_cast<long long>(id.value()), UuidList(lease).c_str());
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
  LeaseWatcher watcher(global.socket, id.value(), "shell");
  int status = 0;
  for (;;) {
    pid_t w = waitpid(child, &status, WNOHANG | WUNTRACED);
    if (w == child && !WIFSTOPPED(status)) break;
    if (w < 0 && errno != EINTR) return kExitError;
    watcher.Poll();
    usleep(100 * 1000);
  }
  return ExitCodeOf(status);
}

}  // namespace tarmac::cli
