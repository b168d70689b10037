// SPDX-License-Identifier: Apache-2.0
#include "backfill/runner.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <optional>
#include <thread>

#include "backfill/batch_input.h"
#include "backfill/batch_spec.h"
#include "backfill/engine_client.h"
#include "backfill/engine_process.h"
#include "backfill/engine_reply.h"
#include "backfill/memory_freed.h"
#include "backfill/result_log.h"
#include "client/agent_client.h"
#include "client/lease_request.h"
#include "client/lease_wait.h"
#include "common/fs.h"
#include "common/mutex.h"

namespace tarmac::backfill {
namespace {

using nlohmann::json;
using SteadyTime = std::chrono::steady_clock::time_point;
using std::chrono::milliseconds;
using std::chrono::seconds;

bool IsReadable(int fd) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, 0) > 0;
}

// One lease's requests in flight, all stopped at once when it is revoked.
class InFlight {
 public:
  void Add(EngineConnection* c) EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    connections_.push_back(c);
    if (is_aborted_) c->Abort();
  }
  void Remove(EngineConnection* c) EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    connections_.erase(std::find(connections_.begin(), connections_.end(), c));
  }
  void AbortAll() EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    is_aborted_ = true;
    for (EngineConnection* c : connections_) c->Abort();
  }

 private:
  Mutex mu_;
  std::vector<EngineConnection*> connections_ GUARDED_BY(mu_);
  bool is_aborted_ GUARDED_BY(mu_) = false;
};

// <state>/backfill/<id> -> id; 0 when the folder is not named by a number.
int64_t BatchIdOfDir(const std::string& dir) {
  std::string name = dir.substr(dir.rfind('/') + 1);
  if (name.empty() || name.size() > 18 || name.find_first_not_of("0123456789") != std::string::npos) return 0;
  return std::stoll(name);
}

class Runner {
 public:
  Runner(const RunnerOptions& options, int stop_fd, Clock* clock, Logger* logger)
      : dir_(options.dir),
        work_dir_(options.dir + "/work"),
        id_(BatchIdOfDir(options.dir)),
        agent_(options.socket),
        stop_fd_(stop_fd),
        clock_(clock),
        logger_(logger) {}

  int Run();

 private:
  struct Item {
    size_t index = 0;
    int attempts = 0;
    SteadyTime not_before;
  };

  Status Prepare();
  void Worker();
  void RunLease(const sched::Lease& lease);
  // Starts the engine in the lease (when the batch starts its own) and
  // checks the model once per runner; false when no request can be sent.
  bool BringUpEngine(const sched::Lease& lease, const std::atomic<bool>& revoked,
                     std::optional<EngineProcess>* engine, std::string* base_url);
  // Gives the GPU back for real before the lease goes: the engine stopped
  // (or the model unloaded), then the memory seen free through NVML.
  void FreeGpu(const std::string& uuid, int64_t memory_before, int64_t revoke_by_unix, EngineProcess* engine,
               const std::string& base_url);
  void Slot(const std::string& base_url, InFlight* in_flight, const std::atomic<bool>& revoked,
            std::atomic<bool>* engine_failed);
  void Handle(Item item, const Result<HttpAnswer>& answer, const std::atomic<bool>& revoked,
              std::atomic<bool>* engine_failed);
  void Record(ResultLog* log, const json& line, const Item& item, int64_t tokens);
  void Retry(Item item, const std::string& why);
  // The next request to send, waiting for one; false when there is none
  // left, or the lease is revoked, or the runner stops.
  bool Take(Item* item, const std::atomic<bool>& revoked) EXCLUDES(mu_);
  void Put(Item item) EXCLUDES(mu_);
  // Whether a lease is worth asking for: requests wait to be sent.
  bool WaitForWork() EXCLUDES(mu_);
  bool ShouldStop() const { return stopping_ || is_fatal_; }
  void Fatal(const std::string& why) EXCLUDES(mu_);
  void SetProblem(const std::string& why) EXCLUDES(mu_);
  void SetPhase() EXCLUDES(mu_);
  void SleepUnlessStopped(milliseconds how_long);
  void WriteProgress() EXCLUDES(mu_);
  // Writes progress every second until `done_fd` is readable; tells
  // everything to stop once stop_fd_ is.
  void Watch(int done_fd);

  std::string dir_;       // The agent's (batch.json): read only.
  std::string work_dir_;  // The user's: runner.lock, progress.json, engine logs.
  int64_t id_;            // The batch's, from its folder's name (known before batch.json is read).
  client::AgentClient agent_;
  int stop_fd_;
  Clock* clock_;
  Logger* logger_;
  BatchSpec spec_;
  BatchInput input_;
  std::unique_ptr<ResultLog> output_;
  std::unique_ptr<ResultLog> errors_;
  Mutex log_mu_;  // Over output_ and errors_.

  mutable Mutex mu_;
  std::condition_variable_any cv_;
  std::deque<Item> queue_ GUARDED_BY(mu_);
  int64_t in_flight_ GUARDED_BY(mu_) = 0;
  BatchProgress progress_ GUARDED_BY(mu_);  // gpu_seconds: of the leases that ended.
  // When each lease held now was granted, by lease id: its time so far
  // counts in the progress written while it runs.
  std::map<int64_t, SteadyTime> held_since_ GUARDED_BY(mu_);
  std::deque<std::pair<SteadyTime, int64_t>> recent_ GUARDED_BY(mu_);  // (finished at, tokens)
  std::atomic<bool> stopping_{false};
  std::atomic<bool> is_fatal_{false};
  std::atomic<bool> is_model_checked_{false};
  std::atomic<int> engine_failures_{0};  // Started engines that never answered, in a row.
  static constexpr int kMaxEngineFailures = 3;
};

Status Runner::Prepare() {
  Result<json> spec = ReadJsonFile(dir_ + "/batch.json");
  if (!spec.ok()) return spec.status();
  Result<BatchSpec> decoded = DecodeBatchSpec(spec.value(), dir_ + "/batch.json");
  if (!decoded.ok()) return decoded.status();
  spec_ = decoded.value();
  Result<BatchInput> parsed = ReadBatchFile(spec_.input, {spec_.model});
  if (!parsed.ok()) return parsed.status();
  input_ = std::move(parsed).value();
  // Results are no more readable than the prompts they answer.
  struct stat input_stat {};
  int mode =
      ::stat(spec_.input.c_str(), &input_stat) == 0 ? static_cast<int>(input_stat.st_mode & 0666) : 0600;
  Result<std::unique_ptr<ResultLog>> out = ResultLog::Open(spec_.output, mode);
  if (!out.ok()) return out.status();
  output_ = std::move(out).value();
  Result<std::unique_ptr<ResultLog>> err = ResultLog::Open(spec_.errors, mode);
  if (!err.ok()) return err.status();
  errors_ = std::move(err).value();
  // One file under two names (a link, a hard link, another spelling)
  // would interleave results and errors: refused before any line is sent.
  FileId input_id{static_cast<uint64_t>(input_stat.st_dev), static_cast<uint64_t>(input_stat.st_ino)};
  if (output_->file_id() == errors_->file_id() || output_->file_id() == input_id ||
      errors_->file_id() == input_id) {
    return Status::InvalidArgument(
        fmt::format("{}, {} and {}: two of them are the same file; name three different files", spec_.input,
                    spec_.output, spec_.errors));
  }
  MutexLock lock(&mu_);
  // GPU time, preemptions and tokens count over every runner of the batch.
  Result<json> before = ReadJsonFile(work_dir_ + "/progress.json");
  if (before.ok()) {
    BatchProgress p = DecodeProgress(before.value());
    progress_.gpu_seconds = p.gpu_seconds;
    progress_.preemptions = p.preemptions;
    progress_.completion_tokens = p.completion_tokens;
  }
  progress_.runner_pid = ::getpid();
  progress_.total = static_cast<int64_t>(input_.requests.size());
  for (size_t i = 0; i < input_.requests.size(); ++i) {
    const std::string& id = input_.requests[i].custom_id;
    if (!output_->IsDone(id) && !errors_->IsDone(id)) queue_.push_back({i, 0, SteadyTime()});
  }
  progress_.done = static_cast<int64_t>(output_->size());
  progress_.failed = static_cast<int64_t>(errors_->size());
  return Status::OK();
}

void Runner::Fatal(const std::string& why) {
  MutexLock lock(&mu_);
  if (!is_fatal_) progress_.problem = why;
  is_fatal_ = true;
  cv_.notify_all();
}

void Runner::SetProblem(const std::string& why) {
  MutexLock lock(&mu_);
  if (!is_fatal_) progress_.problem = why;
}

void Runner::SetPhase() {
  MutexLock lock(&mu_);
  if (progress_.gpus_held > 0) {
    progress_.phase =
        fmt::format("running on {} GPU{}", progress_.gpus_held, progress_.gpus_held == 1 ? "" : "s");
  } else {
    progress_.phase = "waiting for an idle GPU";
  }
}

bool Runner::Take(Item* item, const std::atomic<bool>& revoked) {
  MutexLock lock(&mu_);
  for (;;) {
    if (ShouldStop() || revoked) return false;
    if (queue_.empty() && in_flight_ == 0) return false;
    SteadyTime now = clock_->SteadyNow();
    for (auto it = queue_.begin(); it != queue_.end(); ++it) {
      if (it->not_before <= now) {
        *item = *it;
        queue_.erase(it);
        ++in_flight_;
        return true;
      }
    }
    // Nothing ready: wait for a retry's backoff, a put-back, or the end.
    SteadyTime next = now + seconds(1);
    for (const Item& i : queue_) next = std::min(next, i.not_before);
    cv_.wait_until(mu_, next);
  }
}

void Runner::Put(Item item) {
  MutexLock lock(&mu_);
  queue_.push_front(item);
  --in_flight_;
  cv_.notify_all();
}

bool Runner::WaitForWork() {
  MutexLock lock(&mu_);
  for (;;) {
    if (ShouldStop()) return false;
    if (!queue_.empty()) return true;
    if (in_flight_ == 0) return false;
    cv_.wait_for(mu_, seconds(1));
  }
}

void Runner::SleepUnlessStopped(milliseconds how_long) {
  MutexLock lock(&mu_);
  cv_.wait_for(mu_, how_long, [this] { return ShouldStop(); });
}

void Runner::Record(ResultLog* log, const json& line, const Item& item, int64_t tokens) {
  Status s;
  {
    MutexLock lock(&log_mu_);
    s = log->Append(line);
  }
  if (!s.ok() && s.code() != StatusCode::kFailedPrecondition) {  // Not a repeat: the file could not take it.
    Put(item);
    Fatal(fmt::format("{}; then resume the batch (tarmac backfill resume {})", s.message(), spec_.id));
    return;
  }
  MutexLock lock(&mu_);
  if (log == output_.get()) {
    ++progress_.done;
    progress_.completion_tokens += tokens;
  } else {
    ++progress_.failed;
  }
  recent_.emplace_back(clock_->SteadyNow(), tokens);
  --in_flight_;
  cv_.notify_all();
}

void Runner::Retry(Item item, const std::string& why) {
  ++item.attempts;
  {
    MutexLock lock(&mu_);
    ++progress_.retries;
    if (!is_fatal_) progress_.problem = why;
  }
  if (item.attempts > spec_.max_retries) {
    const std::string& id = input_.requests[item.index].custom_id;
    json line = {{"id", "batch_req_" + id},
                 {"custom_id", id},
                 {"response", nullptr},
                 {"error",
                  {{"code", "retries_exhausted"},
                   {"message", fmt::format("{} tries: {}", item.attempts, why)},
                   {"line", input_.requests[item.index].line}}}};
    Record(errors_.get(), line, item, 0);
    return;
  }
  milliseconds backoff =
      std::min<milliseconds>(seconds(30), milliseconds(500) * (1 << std::min(item.attempts - 1, 10)));
  item.not_before = clock_->SteadyNow() + backoff;
  MutexLock lock(&mu_);
  queue_.push_back(item);
  --in_flight_;
  cv_.notify_all();
}

void Runner::Handle(Item item, const Result<HttpAnswer>& answer, const std::atomic<bool>& revoked,
                    std::atomic<bool>* engine_failed) {
  const BatchRequest& r = input_.requests[item.index];
  if (!answer.ok()) {
    if (answer.status().code() == StatusCode::kCancelled || revoked || stopping_) return Put(item);
    if (!spec_.engine.command.empty()) *engine_failed = true;
    return Retry(item, answer.status().message());
  }
  EngineReply reply = ReadEngineReply(r.custom_id, r.url, answer.value().status, answer.value().body,
                                      answer.value().content_type);
  switch (reply.verdict) {
    case EngineReply::Verdict::kDone:
      return Record(output_.get(), reply.line, item, reply.completion_tokens);
    case EngineReply::Verdict::kFailItem:
      reply.line["error"]["line"] = r.line;  // Which input line it was.
      return Record(errors_.get(), reply.line, item, 0);
    case EngineReply::Verdict::kRetry:
      if (revoked || stopping_) return Put(item);
      return Retry(item, reply.why);
    case EngineReply::Verdict::kFailBatch:
      Put(item);
      return Fatal(fmt::format("{}: {}", r.url, reply.why));
  }
}

void Runner::Slot(const std::string& base_url, InFlight* in_flight, const std::atomic<bool>& revoked,
                  std::atomic<bool>* engine_failed) {
  EngineConnection connection(base_url, seconds(spec_.request_timeout_s));
  in_flight->Add(&connection);
  Item item;
  while (!*engine_failed && Take(&item, revoked)) {
    const BatchRequest& r = input_.requests[item.index];
    Handle(item, connection.Post(r.url, r.body), revoked, engine_failed);
  }
  in_flight->Remove(&connection);
}

bool Runner::BringUpEngine(const sched::Lease& lease, const std::atomic<bool>& revoked,
                           std::optional<EngineProcess>* engine, std::string* base_url) {
  if (!spec_.engine.command.empty()) {
    int64_t id = lease.id;
    Result<EngineProcess> started =
        EngineProcess::Start({spec_.engine.command, client::LeaseEnvironment(lease),
                              fmt::format("{}/engine-{}.log", work_dir_, id)},
                             clock_);
    if (!started.ok()) {
      Fatal("cannot start the engine: " + started.status().message());
      return false;
    }
    *engine = std::move(started).value();
    agent_.AttachLease(id, (*engine)->pid()).status().IgnoreError();
    *base_url = (*engine)->base_url();
    Status ready = (*engine)->WaitReady(spec_.engine.kind, seconds(spec_.engine.ready_timeout_s),
                                        [&] { return revoked || ShouldStop(); });
    if (ready.code() == StatusCode::kCancelled) return true;  // Revoked or stopped: nothing to say.
    if (!ready.ok()) {
      // An engine that never comes up fails the batch, not a loop of leases.
      if (++engine_failures_ >= kMaxEngineFailures) {
        Fatal(fmt::format("the engine failed to start {} times in a row: {}", kMaxEngineFailures,
                          ready.message()));
      } else {
        SetProblem(ready.message());
      }
      return false;
    }
    engine_failures_ = 0;
  }
  if (is_model_checked_ || ShouldStop() || revoked) return true;
  Status model = CheckEngineModel(*base_url, spec_.engine.kind, input_.model);
  if (model.code() == StatusCode::kNotFound) {
    Fatal(model.message());
    return false;
  }
  if (!model.ok()) {
    SetProblem(model.message());
    return false;
  }
  is_model_checked_ = true;
  return true;
}

void Runner::FreeGpu(const std::string& uuid, int64_t memory_before, int64_t revoke_by_unix,
                     EngineProcess* engine, const std::string& base_url) {
  // Before the revocation's deadline when there is one: the engine stopped
  // (or the model unloaded), then the memory seen free.
  SteadyTime until = clock_->SteadyNow() + seconds(10);
  if (revoke_by_unix > 0) {
    int64_t left = revoke_by_unix - UnixSeconds(clock_->WallNow());
    until = clock_->SteadyNow() + std::max<seconds>(seconds(1), seconds(left));
  }
  std::chrono::system_clock::time_point since = clock_->WallNow();
  if (engine != nullptr) {
    engine->Stop(std::chrono::duration_cast<milliseconds>(until - clock_->SteadyNow()) / 2);
    // Revoked: the engine's process group is gone, and the agent hands the
    // GPU over only once a reading taken after the release shows it empty;
    // a real request waits on this, so the release goes at once.
    if (revoke_by_unix > 0) return;
  } else if (spec_.engine.kind == "ollama") {
    Status s = UnloadModel(base_url, input_.model,
                           std::chrono::duration_cast<milliseconds>(until - clock_->SteadyNow()), clock_);
    if (!s.ok() && s.code() != StatusCode::kUnavailable) SetProblem("unload: " + s.message());
  }
  Status freed = WaitForMemoryFreed(agent_, clock_, uuid, memory_before, since, until);
  if (!freed.ok()) SetProblem(freed.message());
}

void Runner::RunLease(const sched::Lease& lease) {
  int64_t id = lease.id;
  std::string uuids = client::UuidList(lease);
  SteadyTime granted = clock_->SteadyNow();
  int64_t memory_before = 0;
  if (Result<node::NodeView> view = agent_.FetchStatus(); view.ok()) {
    for (const node::GpuView& g : view.value().gpus) {
      if (g.info.uuid == uuids) memory_before = g.sample.memory_used_bytes.value_or(0);
    }
  }
  {
    MutexLock lock(&mu_);
    ++progress_.gpus_held;
    held_since_[id] = granted;
  }
  SetPhase();
  std::atomic<bool> revoked{false};
  std::atomic<int64_t> revoke_by{0};
  InFlight in_flight;
  {
    client::RevocationWatch watch(&agent_, id, [&](const sched::LeaseShown& l) {
      revoke_by = static_cast<int64_t>(l.revoke_by_unix.value_or(0));
      revoked = true;
      in_flight.AbortAll();
      MutexLock lock(&mu_);
      cv_.notify_all();
    });
    std::optional<EngineProcess> engine;
    std::string base_url = spec_.engine.url;
    std::atomic<bool> engine_failed{!BringUpEngine(lease, revoked, &engine, &base_url)};
    if (!engine_failed && !ShouldStop() && !revoked) {
      std::vector<std::thread> slots;
      for (int i = 0; i < spec_.concurrency; ++i) {
        slots.emplace_back([&] { Slot(base_url, &in_flight, revoked, &engine_failed); });
      }
      for (std::thread& t : slots) t.join();
    }
    in_flight.AbortAll();
    FreeGpu(uuids, memory_before, revoke_by, engine ? &*engine : nullptr, base_url);
    if (engine_failed) SleepUnlessStopped(seconds(2));
  }
  agent_.ReleaseLease(id).status().IgnoreError();
  MutexLock lock(&mu_);
  --progress_.gpus_held;
  held_since_.erase(id);
  progress_.gpu_seconds += std::chrono::duration<double>(clock_->SteadyNow() - granted).count();
  if (revoked) ++progress_.preemptions;
}

void Runner::Worker() {
  while (WaitForWork()) {
    SetPhase();
    client::LeaseAsk ask;
    ask.priority = "backfill";
    Result<json> params = client::LeaseParams(
        ask, "run",
        fmt::format("backfill batch {} ({})", spec_.id, spec_.input.substr(spec_.input.rfind('/') + 1)));
    if (!params.ok()) return Fatal(params.status().message());
    client::CallOptions options;
    options.patience = std::chrono::minutes(10);
    options.interrupt_fd = stop_fd_;
    Result<client::LeaseAnswer> answer = agent_.RequestLease(params.value(), options);
    if (!answer.ok()) {
      if (stopping_) return;
      SetProblem("the agent: " + answer.status().message());
      SleepUnlessStopped(seconds(2));
      continue;
    }
    client::LeaseAnswer now = answer.value();
    while (!now.is_granted() && !ShouldStop()) {
      Result<client::LeaseAnswer> waited =
          client::WaitForGrant(agent_, now, stop_fd_, [](const client::LeaseAnswer&) {});
      if (!waited.ok()) {
        if (waited.status().code() == StatusCode::kCancelled) continue;  // Checked above.
        SetProblem("the agent: " + waited.status().message());
        SleepUnlessStopped(seconds(2));
        continue;
      }
      now = waited.value();
      if (!now.is_granted()) break;  // Ended while queued.
    }
    if (!now.is_granted()) {
      agent_.ReleaseLease(now.id).status().IgnoreError();  // Cancels it when still queued.
      continue;
    }
    RunLease(now.lease.lease);
  }
}

void Runner::WriteProgress() {
  BatchProgress p;
  {
    MutexLock lock(&mu_);
    SteadyTime now = clock_->SteadyNow();
    while (!recent_.empty() && recent_.front().first < now - seconds(60)) recent_.pop_front();
    int64_t tokens = 0;
    for (const auto& r : recent_) tokens += r.second;
    double span = recent_.empty()
                      ? 0
                      : std::max(1.0, std::chrono::duration<double>(now - recent_.front().first).count());
    progress_.requests_per_second = span > 0 ? static_cast<double>(recent_.size()) / span : 0;
    progress_.tokens_per_second = span > 0 ? static_cast<double>(tokens) / span : 0;
    progress_.in_flight = in_flight_;
    progress_.updated_unix = UnixSeconds(clock_->WallNow());
    p = progress_;
    for (const auto& [id, since] : held_since_)
      p.gpu_seconds += std::chrono::duration<double>(now - since).count();
  }
  // The runner's own copy (its next run carries GPU time on from it), and
  // the agent's: the agent never reads a file of the user's.
  Status s = WriteJsonFile(work_dir_ + "/progress.json", EncodeProgress(p));
  if (!s.ok()) logger_->Log(LogLevel::kWarning, "{}", s.message());
  client::CallOptions once;
  once.patience = milliseconds(0);
  once.timeout = milliseconds(2000);
  Result<json> told = agent_.Call("backfill.progress", {{"id", id_}, {"progress", EncodeProgress(p)}}, once);
  if (!told.ok())
    logger_->Log(LogLevel::kDebug, "backfill runner: progress not taken: {}", told.status().message());
}

void Runner::Watch(int done_fd) {
  for (;;) {
    pollfd p[2] = {{stop_fd_, POLLIN, 0}, {done_fd, POLLIN, 0}};
    if (::poll(p, 2, 1000) > 0) {
      if (p[0].revents != 0) {
        stopping_ = true;
        MutexLock lock(&mu_);
        cv_.notify_all();
      }
      return;
    }
    // A batch whose folder was removed (its agent's state deleted) has
    // nowhere to answer: it stops as on SIGTERM rather than ask for ever.
    struct stat st {};
    if (::stat(dir_.c_str(), &st) != 0 && errno == ENOENT) {
      logger_->Log(LogLevel::kWarning, "backfill runner: {} was removed; stopping", dir_);
      uint64_t one = 1;
      (void)!::write(stop_fd_, &one, sizeof one);
      continue;
    }
    WriteProgress();
  }
}

int Runner::Run() {
  std::string lock_path = work_dir_ + "/runner.lock";
  int lock = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
  if (lock < 0) {
    // Not another runner: this one cannot work here (its folder is out of
    // reach, as under a state folder others may not enter). Said, and the
    // batch stops instead of waiting on a runner that is not there.
    std::string why = fmt::format("backfill runner: cannot open {}: {}", lock_path, std::strerror(errno));
    logger_->Log(LogLevel::kError, "{}", why);
    {
      MutexLock l(&mu_);
      progress_.problem = why;
      progress_.phase = "failed";
      progress_.runner_pid = ::getpid();
    }
    WriteProgress();
    return kRunnerFailed;
  }
  if (::flock(lock, LOCK_EX | LOCK_NB) != 0) {
    logger_->Log(LogLevel::kWarning, "backfill runner: {} is held by another runner", lock_path);
    ::close(lock);
    return kRunnerBusy;
  }
  Status prepared = Prepare();
  if (!prepared.ok()) {
    MutexLock l(&mu_);
    progress_.problem = prepared.message();
    progress_.phase = "failed";
    progress_.runner_pid = ::getpid();
  }
  if (prepared.ok() && spec_.engine.command.empty()) {
    // A running server: is it up, and does it have the model?
    for (milliseconds backoff(500); !stopping_ && !IsReadable(stop_fd_);
         backoff = std::min<milliseconds>(backoff * 2, seconds(30))) {
      Status model = CheckEngineModel(spec_.engine.url, spec_.engine.kind, input_.model);
      if (model.ok()) {
        is_model_checked_ = true;
        break;
      }
      if (model.code() == StatusCode::kNotFound) {
        Fatal(model.message());
        break;
      }
      SetProblem(fmt::format("{} (trying again in {} s)", model.message(), backoff.count() / 1000.0));
      WriteProgress();
      pollfd p{stop_fd_, POLLIN, 0};
      ::poll(&p, 1, static_cast<int>(backoff.count()));
    }
  }
  if (prepared.ok() && !ShouldStop() && !IsReadable(stop_fd_)) {
    SetProblem("");
    int done_fd = ::eventfd(0, EFD_CLOEXEC);
    std::thread watcher([this, done_fd] { Watch(done_fd); });
    std::vector<std::thread> workers;
    for (int i = 0; i < spec_.gpus; ++i) workers.emplace_back([this] { Worker(); });
    for (std::thread& t : workers) t.join();
    stopping_ = true;
    uint64_t one = 1;
    (void)!::write(done_fd, &one, sizeof one);
    watcher.join();
    ::close(done_fd);
  }
  int code = kRunnerFinished;
  {
    MutexLock l(&mu_);
    if (!prepared.ok() || is_fatal_) {
      code = kRunnerFailed;
      progress_.phase = "failed";
    } else if (!queue_.empty() || in_flight_ > 0) {
      code = kRunnerStopped;
      progress_.phase = "stopped";
      progress_.problem.clear();
    } else {
      progress_.phase = "done";
      progress_.problem.clear();
    }
  }
  WriteProgress();
  {
    MutexLock l(&mu_);
    logger_->Log(LogLevel::kInfo,
                 "backfill runner: batch {}: {}: {} done, {} failed; {} preemptions; {:.1f} GPU-seconds",
                 spec_.id, progress_.phase, progress_.done, progress_.failed, progress_.preemptions,
                 progress_.gpu_seconds);
  }
  ::close(lock);
  return code;
}

}  // namespace

int RunBatch(const RunnerOptions& options, int stop_fd, Clock* clock, Logger* logger) {
  Runner runner(options, stop_fd, clock, logger);
  return runner.Run();
}

}  // namespace tarmac::backfill
