// SPDX-License-Identifier: Apache-2.0
#include "agent/backfill_jobs.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "backfill/batch_view_json.h"
#include "common/environment.h"
#include "common/fs.h"
#include "common/json_fields.h"
#include "common/pidfd.h"
#include "common/proc_files.h"
#include "common/safe_file.h"
#include "leases/callers.h"

namespace tarmac::agent {
namespace {

using backfill::BatchSpec;
using backfill::BatchState;
using nlohmann::json;
using SteadyClock = std::chrono::steady_clock;

// Whether `pid` is a tarmac-backfill-runner running as `uid`.
bool IsRunnerOf(pid_t pid, int64_t uid) {
  std::string cmdline;
  struct stat st {};
  return ReadSmallFile(fmt::format("/proc/{}/cmdline", pid), &cmdline) &&
         cmdline.find("tarmac-backfill-runner") != std::string::npos &&
         ::stat(fmt::format("/proc/{}", pid).c_str(), &st) == 0 && static_cast<int64_t>(st.st_uid) == uid;
}

// A folder only this process may change: a directory (not a link), owned
// by our effective uid, writable by nobody else. What is in it is ours.
Status CheckOwnFolder(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0)
    return Status::IOError(fmt::format("{}: {}", path, std::strerror(errno)));
  if (!S_ISDIR(st.st_mode))
    return Status::PermissionDenied(fmt::format("{}: is {}", path, FileKindName(st.st_mode)));
  if (st.st_uid != ::geteuid()) {
    return Status::PermissionDenied(
        fmt::format("{}: belongs to uid {}, not to the agent (uid {})", path, st.st_uid, ::geteuid()));
  }
  if ((st.st_mode & 022) != 0) {
    return Status::PermissionDenied(
        fmt::format("{}: others may write in it (mode {:o})", path, st.st_mode & 07777));
  }
  return Status::OK();
}

// The primary group of `uid` (the uid itself when it has no passwd entry).
gid_t GroupOf(int64_t uid) {
  passwd* pw = ::getpwuid(static_cast<uid_t>(uid));
  return pw != nullptr ? pw->pw_gid : static_cast<gid_t>(uid);
}

// Longest phase or problem text a runner may report.
constexpr size_t kMaxProgressText = 4096;

}  // namespace

BackfillJobs::BackfillJobs(BackfillJobsOptions options, leases::ProcessControl* processes, Clock* clock,
                           Logger* logger)
    : options_(std::move(options)),
      nice_(options_.nice),
      processes_(processes),
      clock_(clock),
      logger_(logger),
      wake_fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}

BackfillJobs::~BackfillJobs() {
  Stop();
  MutexLock lock(&mu_);
  for (auto& [id, job] : jobs_) {
    if (job.pidfd >= 0) ::close(job.pidfd);
  }
  ::close(wake_fd_);
}

void BackfillJobs::Record(const std::string& kind, const BatchSpec& spec, int64_t actor_uid,
                          const std::string& detail) {
  if (options_.events)
    options_.events(kind, spec.uid, spec.user, actor_uid, fmt::format("batch {}: {}", spec.id, detail));
}

void BackfillJobs::Wake() {
  uint64_t one = 1;
  (void)!::write(wake_fd_, &one, sizeof one);
}

void BackfillJobs::Hold(Job* job, pid_t pid, int64_t start_ticks, bool is_child) {
  job->pid = pid;
  job->start_ticks = start_ticks;
  job->is_child = is_child;
  job->signalled_at.reset();
  job->started_at = clock_->SteadyNow();
  job->pidfd = PidfdOpen(pid);
  MutexLock lock(&runners_mu_);
  runners_.emplace(pid, start_ticks);
}

bool BackfillJobs::IsRunner(int64_t pid, int64_t start_ticks) const {
  MutexLock lock(&runners_mu_);
  return runners_.count({pid, start_ticks}) != 0;
}

std::string BackfillJobs::FindRunner(const std::string& self) {
  std::string dir = Dirname(self);
  for (std::string candidate :
       {dir + "/tarmac-backfill-runner", dir + "/../libexec/tarmac/tarmac-backfill-runner"}) {
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return dir + "/tarmac-backfill-runner";
}

std::string BackfillJobs::Dir(int64_t id) const { return fmt::format("{}/{}", options_.dir, id); }

Status BackfillJobs::Save(const BatchSpec& spec) const {
  return backfill::WriteJsonFile(Dir(spec.id) + "/batch.json", backfill::EncodeBatchSpec(spec));
}

void BackfillJobs::SaveProgress(Job* job) {
  json j = backfill::EncodeProgress(job->progress);
  j["runner_pid"] = job->pid;
  j["runner_start_ticks"] = job->start_ticks;
  Status s = backfill::WriteJsonFile(Dir(job->spec.id) + "/progress.json", j);
  if (!s.ok()) logger_->Log(LogLevel::kWarning, "backfill: {}", s.message());
  job->progress_saved_at = clock_->SteadyNow();
  job->progress_phase_saved = job->progress.phase;
}

Status BackfillJobs::MakeWorkDir(const BatchSpec& spec) const {
  // Created in the agent's own folder, then given to the user: the runner
  // keeps its lock, its own progress and engine logs there; the agent
  // never opens anything in it.
  std::string work = Dir(spec.id) + "/work";
  if (::mkdir(work.c_str(), 0700) != 0) {
    if (errno == EEXIST) return Status::OK();  // Given to the user already.
    return Status::IOError(fmt::format("cannot create {}", work), std::strerror(errno));
  }
  if (::geteuid() == 0) {
    if (::fchownat(AT_FDCWD, work.c_str(), static_cast<uid_t>(spec.uid), GroupOf(spec.uid),
                   AT_SYMLINK_NOFOLLOW) != 0) {
      return Status::IOError(fmt::format("cannot give {} to uid {}", work, spec.uid), std::strerror(errno));
    }
  }
  return Status::OK();
}

Status BackfillJobs::Open() {
  Status s = MakeDirs(options_.dir);
  if (!s.ok()) return s.WithContext("backfill");
  ::chmod(options_.dir.c_str(), 0755);
  s = CheckOwnFolder(options_.dir);
  if (!s.ok()) return s.WithContext("backfill");
  DIR* dir = ::opendir(options_.dir.c_str());
  if (dir == nullptr)
    return Status::IOError(fmt::format("cannot read {}", options_.dir), std::strerror(errno));
  MutexLock lock(&mu_);
  while (dirent* entry = ::readdir(dir)) {
    std::string name = entry->d_name;
    if (name.empty() || name.size() > 18 || name.find_first_not_of("0123456789") != std::string::npos)
      continue;
    // Only a folder the agent alone can write holds a batch it trusts
    // (earlier layouts gave the folder to the submitter).
    Status own = CheckOwnFolder(Dir(std::stoll(name)));
    if (!own.ok()) {
      logger_->Log(LogLevel::kWarning, "backfill: skipping batch {}: {}; not trusted, submit it again", name,
                   own.message());
      continue;
    }
    std::string path = Dir(std::stoll(name)) + "/batch.json";
    Result<json> j = backfill::ReadJsonFile(path);
    Result<BatchSpec> spec =
        j.ok() ? backfill::DecodeBatchSpec(j.value(), path) : Result<BatchSpec>(j.status());
    if (!spec.ok()) {
      logger_->Log(LogLevel::kWarning, "backfill: skipping {}: {}", path, spec.status().message());
      continue;
    }
    Job job;
    job.spec = spec.value();
    next_id_ = std::max(next_id_, job.spec.id + 1);
    // Made at submission; made again only if someone removed it.
    if (Status work = MakeWorkDir(job.spec); !work.ok())
      logger_->Log(LogLevel::kWarning, "backfill: {}", work.message());
    // The agent's own record of the runner: a runner from before the
    // agent's restart goes on when that very process (PID, start time,
    // the batch's user) still runs.
    Result<json> progress = backfill::ReadJsonFile(Dir(job.spec.id) + "/progress.json");
    if (progress.ok()) {
      job.progress = backfill::DecodeProgress(progress.value());
      pid_t pid = static_cast<pid_t>(job.progress.runner_pid);
      int64_t ticks = 0;  // The user's file: a field of the wrong type reads as none.
      JsonFields(progress.value(), "progress", JsonFields::kSkipWrongTypes)
          .Optional("runner_start_ticks", &ticks);
      std::optional<int64_t> live = pid > 0 ? LiveStartTicks(pid) : std::nullopt;
      if (backfill::IsActive(job.spec.state) && live && *live == ticks && IsRunnerOf(pid, job.spec.uid)) {
        Hold(&job, pid, ticks, false);
        logger_->Log(LogLevel::kInfo, "backfill: batch {}: its runner (pid {}) goes on", job.spec.id, pid);
      }
    }
    jobs_[job.spec.id] = std::move(job);
  }
  ::closedir(dir);
  return Status::OK();
}

void BackfillJobs::Spawn(Job* job) {
  const BatchSpec& spec = job->spec;
  std::string dir = Dir(spec.id);
  std::string log_path = dir + "/runner.log";
  std::vector<std::string> args = {options_.runner_path, "--dir", dir, "--socket", options_.socket};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  // The agent's environment, with what options_.environment sets in place
  // of the same names (built before fork: the child only execs).
  std::vector<std::string> env = EnvironmentWith(options_.environment);
  std::vector<char*> envp = EnvironmentPointers(env);
  // As the batch's user: the runner reads the input and writes the results
  // with that user's rights, and its engines run as that user.
  bool is_root = ::geteuid() == 0;
  uid_t uid = static_cast<uid_t>(spec.uid);
  gid_t gid = ::getegid();
  if (is_root) gid = GroupOf(spec.uid);
  // In the agent's folder, the agent's file; the user's group may read it.
  int log =
      ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0640);
  if (log >= 0 && is_root) (void)!::fchown(log, static_cast<uid_t>(-1), gid);
  const int nice = nice_;
  pid_t pid = ::fork();
  if (pid < 0) {
    logger_->Log(LogLevel::kError, "backfill: batch {}: fork: {}", spec.id, std::strerror(errno));
    if (log >= 0) ::close(log);
    return;
  }
  if (pid == 0) {
    ::setsid();
    // Backfill yields the CPU to real work too: the runner, and the engines
    // it starts, run at this niceness (an unprivileged user cannot lower it).
    (void)::setpriority(PRIO_PROCESS, 0, nice);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    if (log >= 0) {
      ::dup2(log, 1);
      ::dup2(log, 2);
    }
    int null = ::open("/dev/null", O_RDONLY);
    if (null >= 0) ::dup2(null, 0);
    if (is_root && uid != 0) {
      if (::setgroups(0, nullptr) != 0 || ::setgid(gid) != 0 || ::setuid(uid) != 0) _exit(126);
    }
    ::execve(argv[0], argv.data(), envp.data());
    _exit(127);
  }
  if (log >= 0) ::close(log);
  Hold(job, pid, LiveStartTicks(pid).value_or(0), true);
  SaveProgress(job);  // The runner's PID and start time (progress.runner_pid is set by its first report).
  if (job->spec.state == BatchState::kQueued) {
    job->spec.state = BatchState::kRunning;
    Save(job->spec).IgnoreError();
  }
  logger_->Log(LogLevel::kInfo, "backfill: batch {}: runner started (pid {})", spec.id, pid);
}

bool BackfillJobs::IsRunning(Job* job) {
  if (job->pid <= 0) return false;
  if (job->is_child) {
    int status = 0;
    pid_t r = ::waitpid(job->pid, &status, WNOHANG);
    if (r == 0) return true;
  } else {
    std::optional<int64_t> ticks = LiveStartTicks(job->pid);
    if (ticks && *ticks == job->start_ticks) return true;
  }
  return false;
}

void BackfillJobs::Ended(Job* job) {
  {
    MutexLock lock(&runners_mu_);
    runners_.erase({job->pid, job->start_ticks});
  }
  job->pid = 0;
  if (job->pidfd >= 0) ::close(job->pidfd);
  job->pidfd = -1;
  job->signalled_at.reset();
  const backfill::BatchProgress& progress = job->progress;
  SaveProgress(job);
  if (!backfill::IsActive(job->spec.state)) return;  // Paused or cancelled: as asked.
  if (progress.phase == "done") {
    job->spec.state = BatchState::kDone;
    job->spec.message.clear();
  } else if (progress.phase == "failed") {
    job->spec.state = BatchState::kFailed;
    job->spec.message = progress.problem;
  } else {
    // Killed, or crashed: again, with backoff.
    bool ran_long = clock_->SteadyNow() - job->started_at > std::chrono::minutes(1);
    job->failures = ran_long ? 1 : job->failures + 1;
    auto backoff = std::min<std::chrono::seconds>(
        std::chrono::seconds(60), std::chrono::seconds(1) * (1 << std::min(job->failures - 1, 6)));
    job->next_start = clock_->SteadyNow() + backoff;
    logger_->Log(LogLevel::kWarning, "backfill: batch {}: its runner ended early; again in {} s",
                 job->spec.id, backoff.count());
    Record("batch_runner_restarted", job->spec, -1,
           fmt::format("its runner ended early ({} done); started again in {} s", progress.done,
                       backoff.count()));
    return;
  }
  job->spec.finished_unix = UnixSeconds(clock_->WallNow());
  Save(job->spec).IgnoreError();
  logger_->Log(LogLevel::kInfo, "backfill: batch {}: {}{}", job->spec.id,
               backfill::BatchStateName(job->spec.state),
               job->spec.message.empty() ? "" : ": " + job->spec.message);
  if (job->spec.state == BatchState::kDone) {
    Record("batch_done", job->spec, -1,
           fmt::format("{} results, {} errors; {} preemptions; {:.3f} GPU-hours", progress.done,
                       progress.failed, progress.preemptions, progress.gpu_seconds / 3600));
  } else {
    Record("batch_failed", job->spec, -1, job->spec.message);
  }
}

void BackfillJobs::Tick() {
  MutexLock lock(&mu_);
  for (auto& [id, job] : jobs_) {
    if (job.pid > 0 && !IsRunning(&job)) Ended(&job);
    bool active = backfill::IsActive(job.spec.state);
    if (job.pid > 0 && !active) {
      SteadyClock::time_point now = clock_->SteadyNow();
      sched::ProcessRef runner{job.pid, job.start_ticks};
      if (!job.signalled_at) {
        processes_->Signal(runner, -1, SIGTERM).IgnoreError();  // Gone already: reaped next tick.
        job.signalled_at = now;
      } else if (now - *job.signalled_at > std::chrono::seconds(30)) {
        processes_->Signal(runner, -1, SIGKILL).IgnoreError();
      }
    }
    if (job.pid == 0 && active && clock_->SteadyNow() >= job.next_start) Spawn(&job);
  }
}

void BackfillJobs::Start() {
  thread_ = std::jthread([this](std::stop_token stop) {
    while (!stop.stop_requested()) {
      Tick();
      std::vector<pollfd> fds = {{wake_fd_, POLLIN, 0}};
      {
        MutexLock lock(&mu_);
        for (const auto& [id, job] : jobs_) {
          if (job.pidfd >= 0) fds.push_back({job.pidfd, POLLIN, 0});
        }
      }
      ::poll(fds.data(), fds.size(), 250);
      uint64_t count = 0;
      (void)!::read(wake_fd_, &count, sizeof count);
    }
  });
}

void BackfillJobs::Stop() {
  if (thread_.joinable()) {
    thread_.request_stop();
    Wake();
    thread_.join();
  }
}

json BackfillJobs::View(const Job& job) const {
  backfill::BatchView view;
  view.spec = job.spec;
  view.progress = job.progress;  // As the runner last reported it.
  if (view.progress.total == 0) view.progress.total = job.spec.total;
  if (job.pid > 0) {
    view.runner_pid = job.pid;
    if (double eta = backfill::EtaSeconds(view.progress); eta >= 0) view.eta_s = eta;
  }
  return backfill::EncodeBatchView(view);
}

Result<json> BackfillJobs::Submit(const json& params, uid_t uid, gid_t) {
  // What the submitter chooses, read as the runner reads it; what the
  // agent decides (id, owner, state, times) is set here.
  if (!params.is_object()) return Status::InvalidArgument("params: expected an object");
  json chosen = params;
  for (const char* agents : {"id", "uid", "user", "state", "message", "submitted_unix", "finished_unix"}) {
    chosen.erase(agents);
  }
  Result<BatchSpec> decoded = backfill::DecodeBatchSpec(chosen, "params");
  if (!decoded.ok()) return decoded.status();
  BatchSpec spec = decoded.value();
  Status s = backfill::CheckBatchSpec(spec);
  if (!s.ok()) return s;
  spec.uid = uid;
  spec.user = leases::UserName(uid);
  spec.submitted_unix = UnixSeconds(clock_->WallNow());
  MutexLock lock(&mu_);
  spec.id = next_id_;
  std::string dir = Dir(spec.id);
  // The batch's folder is the agent's (identity, command and paths are
  // never read back from a file the user can write); its work/ is the
  // user's.
  if (::mkdir(dir.c_str(), 0755) != 0) {
    return Status::IOError(fmt::format("cannot create {}", dir), std::strerror(errno));
  }
  ::chmod(dir.c_str(), 0755);  // Whatever the umask: Open trusts only a folder others cannot write.
  s = Save(spec);
  if (s.ok()) s = MakeWorkDir(spec);
  if (!s.ok()) {
    ::unlink((dir + "/batch.json").c_str());
    ::rmdir((dir + "/work").c_str());
    ::rmdir(dir.c_str());
    return s;
  }
  ++next_id_;
  Job& job = jobs_[spec.id];
  job.spec = spec;
  Wake();
  logger_->Log(LogLevel::kInfo, "backfill: batch {} submitted by {}: {} ({} requests)", spec.id, spec.user,
               spec.input, spec.total);
  Record("batch_submitted", spec, spec.uid,
         fmt::format("{}: {} requests for {} on up to {} GPU{}", spec.input, spec.total, spec.model,
                     spec.gpus, spec.gpus == 1 ? "" : "s"));
  return json{{"batch", View(job)}};
}

Result<json> BackfillJobs::Progress(const json& params, const ipc::PeerCredentials& peer) {
  Result<int64_t> id = ipc::IdParam(params);
  if (!id.ok()) return id.status();
  if (!params.contains("progress") || !params["progress"].is_object()) {
    return Status::InvalidArgument("progress: expected an object");
  }
  backfill::BatchProgress p = backfill::DecodeProgress(params["progress"]);
  if (p.phase.size() > kMaxProgressText || p.problem.size() > kMaxProgressText) {
    return Status::InvalidArgument(
        fmt::format("progress: phase and problem are at most {} bytes", kMaxProgressText));
  }
  MutexLock lock(&mu_);
  auto it = jobs_.find(id.value());
  if (it == jobs_.end()) return Status::NotFound(fmt::format("no batch {}", id.value()));
  Job& job = it->second;
  // Only the very runner the agent started (or adopted) for this batch,
  // as the batch's user, as the kernel tells: SO_PEERCRED.
  if (job.pid <= 0 || peer.pid != job.pid || static_cast<int64_t>(peer.uid) != job.spec.uid) {
    return Status::PermissionDenied(fmt::format("only batch {}'s runner reports its progress", job.spec.id));
  }
  p.runner_pid = job.pid;
  bool phase_changed = p.phase != job.progress_phase_saved;
  job.progress = std::move(p);
  if (phase_changed || clock_->SteadyNow() - job.progress_saved_at >= std::chrono::seconds(5))
    SaveProgress(&job);
  return json{{"ok", true}};
}

Result<json> BackfillJobs::Change(const json& params, uid_t uid, gid_t gid, const std::string& to) {
  Result<int64_t> id = ipc::IdParam(params);
  if (!id.ok()) return id.status();
  MutexLock lock(&mu_);
  auto it = jobs_.find(id.value());
  if (it == jobs_.end()) return Status::NotFound(fmt::format("no batch {}", id.value()));
  Job& job = it->second;
  sched::Caller caller = leases::ResolveCaller(uid, gid, options_.admin_group);
  if (!caller.is_admin && caller.uid != job.spec.uid) {
    return Status::PermissionDenied(fmt::format("batch {} is {}'s", job.spec.id, job.spec.user));
  }
  BatchState from = job.spec.state;
  BatchState next = from;
  if (to == "pause") {
    if (!backfill::IsActive(from)) {
      return Status::FailedPrecondition(
          fmt::format("batch {} is {}", job.spec.id, backfill::BatchStateName(from)));
    }
    next = BatchState::kPaused;
  } else if (to == "resume") {
    if (from != BatchState::kPaused && from != BatchState::kFailed) {
      return Status::FailedPrecondition(fmt::format("batch {} is {}: only a paused or failed batch resumes",
                                                    job.spec.id, backfill::BatchStateName(from)));
    }
    next = BatchState::kQueued;
    job.next_start = clock_->SteadyNow();
    job.failures = 0;
  } else {
    if (from == BatchState::kDone || from == BatchState::kCancelled) {
      return Status::FailedPrecondition(
          fmt::format("batch {} is {}", job.spec.id, backfill::BatchStateName(from)));
    }
    next = BatchState::kCancelled;
    job.spec.finished_unix = UnixSeconds(clock_->WallNow());
  }
  job.spec.state = next;
  std::string done = to == "pause" ? "paused" : to == "resume" ? "resumed" : "cancelled";
  job.spec.message = fmt::format("{} by {}", done, caller.user);
  Status s = Save(job.spec);
  if (!s.ok()) {
    job.spec.state = from;
    return s;
  }
  logger_->Log(LogLevel::kInfo, "backfill: batch {}: {}", job.spec.id, job.spec.message);
  Record("batch_" + done, job.spec, caller.uid, job.spec.message);
  Wake();
  return json{{"batch", View(job)}};
}

Status BackfillJobs::AddMethods(ipc::MethodTable* table) {
  auto answer = [](const ipc::Request& request, const Result<json>& r) {
    if (!r.ok()) return ipc::EncodeError(request.id, ipc::ErrorCodeOf(r.status()), r.status().message());
    return ipc::EncodeResult(request.id, r.value());
  };
  Status s = table->Add("backfill.submit",
                        [this, answer](const ipc::Request& request, const ipc::PeerCredentials& peer) {
                          return answer(request, Submit(request.params, peer.uid, peer.gid));
                        });
  if (!s.ok()) return s;
  s = table->Add("backfill.list", [this, answer](const ipc::Request& request, const ipc::PeerCredentials&) {
    MutexLock lock(&mu_);
    json batches = json::array();
    for (const auto& [id, job] : jobs_) batches.push_back(View(job));
    return answer(request, json{{"batches", batches}});
  });
  if (!s.ok()) return s;
  s = table->Add("backfill.get", [this, answer](const ipc::Request& request, const ipc::PeerCredentials&) {
    Result<int64_t> id = ipc::IdParam(request.params);
    if (!id.ok()) return answer(request, id.status());
    MutexLock lock(&mu_);
    auto it = jobs_.find(id.value());
    if (it == jobs_.end()) return answer(request, Status::NotFound(fmt::format("no batch {}", id.value())));
    return answer(request, json{{"batch", View(it->second)}});
  });
  if (!s.ok()) return s;
  s = table->Add("backfill.progress",
                 [this, answer](const ipc::Request& request, const ipc::PeerCredentials& peer) {
                   return answer(request, Progress(request.params, peer));
                 });
  if (!s.ok()) return s;
  for (const char* verb : {"pause", "resume", "cancel"}) {
    s = table->Add(fmt::format("backfill.{}", verb),
                   [this, answer, verb](const ipc::Request& request, const ipc::PeerCredentials& peer) {
                     return answer(request, Change(request.params, peer.uid, peer.gid, verb));
                   });
    if (!s.ok()) return s;
  }
  return Status::OK();
}

void BackfillJobs::AddFigures(node::AgentFigures* f) const {
  for (BatchState s : {BatchState::kQueued, BatchState::kRunning, BatchState::kPaused, BatchState::kCancelled,
                       BatchState::kDone, BatchState::kFailed}) {
    f->batches_by_state[backfill::BatchStateName(s)] = 0;
  }
  MutexLock lock(&mu_);
  for (const auto& [id, job] : jobs_) {
    ++f->batches_by_state[backfill::BatchStateName(job.spec.state)];
    const backfill::BatchProgress& progress = job.progress;  // In memory: no file read per scrape.
    f->batch_requests_done += progress.done;
    f->batch_requests_failed += progress.failed;
    f->batch_completion_tokens += progress.completion_tokens;
  }
}

}  // namespace tarmac::agent
