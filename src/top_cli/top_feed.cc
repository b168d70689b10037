// SPDX-License-Identifier: Apache-2.0
#include "top_cli/top_feed.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <unistd.h>

#include <cstdlib>
#include <ctime>
#include <map>
#include <thread>

#include "cli/node_source.h"
#include "client/agent_client.h"
#include "common/json_fields.h"
#include "common/proc_files.h"
#include "common/safe_file.h"
#include "common/split.h"
#include "leases/process_control.h"
#include "node/node_json.h"
#include "store/lease_event_json.h"

namespace tarmac::top {

using nlohmann::json;

namespace {

// The readings each GPU keeps when the feed reads the GPUs itself.
constexpr size_t kSeriesLength = 600;

// "12:01:07 granted lease 3 (alice)": the newest event, one line.
std::string EventLine(const store::LeaseEvent& e) {
  std::time_t at = static_cast<std::time_t>(e.at_unix);
  std::tm tm{};
  localtime_r(&at, &tm);
  char when[16];
  std::strftime(when, sizeof when, "%H:%M:%S", &tm);
  std::string line = fmt::format("{} {}", when, e.kind);
  if (e.lease_id > 0) line += fmt::format(" lease {}", e.lease_id);
  if (!e.user.empty()) line += " (" + e.user + ")";
  if (!e.detail.empty()) line += ": " + e.detail;
  return line;
}

}  // namespace

bool ParseProcStat(std::string_view stat, ProcSample* out) {
  std::optional<ProcStat> parsed = tarmac::ParseProcStat(std::string(stat));
  if (!parsed) return false;
  out->cpu_ticks = parsed->cpu_ticks;
  out->start_ticks = parsed->start_ticks;
  return true;
}

bool ReadProcSample(int64_t pid, std::chrono::steady_clock::time_point now, ProcSample* out,
                    int64_t* rss_bytes, double* elapsed_seconds) {
  Result<std::string> stat = ReadForeignFile(fmt::format("/proc/{}/stat", pid), {.max_bytes = 4096});
  if (!stat.ok() || !ParseProcStat(stat.value(), out)) return false;
  out->at = now;
  static const long kTicks = sysconf(_SC_CLK_TCK);
  static const long kPage = sysconf(_SC_PAGESIZE);
  if (Result<std::string> uptime = ReadForeignFile("/proc/uptime", {.max_bytes = 256}); uptime.ok()) {
    *elapsed_seconds = std::atof(uptime.value().c_str()) - static_cast<double>(out->start_ticks) / kTicks;
  }
  if (Result<std::string> statm = ReadForeignFile(fmt::format("/proc/{}/statm", pid), {.max_bytes = 256});
      statm.ok()) {
    size_t space = statm.value().find(' ');
    if (space != std::string::npos) *rss_bytes = std::atoll(statm.value().c_str() + space + 1) * kPage;
  }
  return true;
}

Result<std::vector<std::string>> GpuEnvironment(int64_t pid) {
  Result<std::string> environ = ReadForeignFile(fmt::format("/proc/{}/environ", pid), {.max_bytes = 1 << 20});
  if (!environ.ok())
    return Status::PermissionDenied(
        fmt::format("its environment cannot be read ({})", environ.status().message()));
  std::vector<std::string> out;
  for (std::string_view var : SplitAt(environ.value(), '\0')) {
    std::string_view name = var.substr(0, var.find('='));
    if (name == leases::kLeaseTokenEnv) continue;  // A secret: never shown.
    bool is_gpu = name.rfind("CUDA_", 0) == 0 || name.rfind("NVIDIA_", 0) == 0 || name == "TARMAC_LEASE_ID" ||
                  (name.rfind("SLURM_", 0) == 0 && name.find("GPU") != std::string::npos) ||
                  name == "GPU_DEVICE_ORDINAL";
    if (is_gpu) out.emplace_back(var);
  }
  return out;
}

std::shared_ptr<TopFeed> TopFeed::Start(const cli::GlobalOptions& global, std::chrono::milliseconds interval,
                                        Clock* clock, Logger* logger) {
  std::shared_ptr<TopFeed> feed(new TopFeed());
  feed->interval_ = interval;
  feed->clock_ = clock;
  if (::pipe2(feed->wake_, O_CLOEXEC | O_NONBLOCK) != 0) return nullptr;
  std::thread([feed, global, clock, logger] { feed->Run(global, clock, logger); }).detach();
  return feed;
}

TopFeed::~TopFeed() {
  for (int fd : wake_) {
    if (fd >= 0) ::close(fd);
  }
}

void TopFeed::Stop() {
  MutexLock lock(&mu_);
  is_stopping_ = true;
}

void TopFeed::SetDetails(int64_t pid, std::vector<std::string> env, std::string error) {
  MutexLock lock(&mu_);
  data_.details_pid = pid;
  data_.details_env = std::move(env);
  data_.details_env_error = std::move(error);
}

void TopFeed::DrainWake() const {
  char buf[64];
  while (::read(wake_[0], buf, sizeof buf) > 0) {
  }
}

top::TopData TopFeed::Latest() const {
  MutexLock lock(&mu_);
  top::TopData d = data_;
  if (d.has_data) {
    d.age_seconds = std::chrono::duration<double>(clock_->SteadyNow() - read_at_).count();
    // Late by more than two intervals and a half: say so.
    if (d.age_seconds > 2.5 * std::chrono::duration<double>(interval_).count()) {
      d.is_stale = true;
      if (d.stale_why.empty())
        d.stale_why = d.is_agent ? "the agent has not answered" : "the GPUs have not answered";
    }
  }
  return d;
}

namespace {

// One reading from the agent: status with its series, leases, queue and
// the newest event; "" or why it failed.
std::string ReadFromAgent(const std::string& socket, top::TopData* fresh_) {
  top::TopData& fresh = *fresh_;
  client::AgentClient agent(socket);
  client::CallOptions quick{std::chrono::milliseconds(0), std::chrono::milliseconds(2000), -1, false};
  Result<json> status = agent.Call("status", {{"series_seconds", 600}}, quick);
  if (!status.ok()) return "the agent does not answer: " + status.status().message();
  Result<node::NodeView> view = node::NodeFromJson(status.value());
  if (!view.ok()) return "a malformed answer: " + view.status().message();
  fresh.status = std::move(view).value();
  fresh.is_agent = true;
  for (auto& [index, series] : node::UtilizationSeriesFromStatus(status.value())) {
    if (series.values.size() > 1 && series.span_seconds > 0)
      fresh.series_step_seconds = series.span_seconds / static_cast<double>(series.values.size() - 1);
    fresh.series[index] = std::move(series.values);
  }
  if (Result<std::vector<sched::LeaseShown>> l = agent.Leases(quick); l.ok())
    fresh.leases = std::move(l).value();
  if (Result<std::vector<sched::PendingShown>> q = agent.Queue(quick); q.ok())
    fresh.queue = std::move(q).value();
  if (Result<json> e = agent.Call("events", {{"newest", true}, {"limit", 1}}, quick); e.ok()) {
    Result<std::vector<store::LeaseEvent>> events = store::LeaseEventsFromJson(e.value());
    if (events.ok() && !events.value().empty()) fresh.last_event = EventLine(events.value().back());
  }
  return "";
}

// Each process's host figures from /proc: start time, resident memory,
// age, and CPU share since the previous reading of the same process.
void AddHostFigures(std::chrono::steady_clock::time_point started, std::map<int64_t, ProcSample>* previous_,
                    top::TopData* fresh_) {
  std::map<int64_t, ProcSample>& previous = *previous_;
  top::TopData& fresh = *fresh_;
  std::map<int64_t, ProcSample> now;
  for (top::TopProcess& p : fresh.processes) {
    ProcSample sample;
    int64_t rss = 0;
    double elapsed = 0;
    if (!ReadProcSample(p.pid, started, &sample, &rss, &elapsed)) continue;
    p.start_ticks = sample.start_ticks;
    p.host_memory_bytes = rss;
    p.elapsed_seconds = elapsed;
    auto was = previous.find(p.pid);
    if (was != previous.end() && was->second.start_ticks == sample.start_ticks) {
      static const double kTicks = static_cast<double>(sysconf(_SC_CLK_TCK));
      double wall = std::chrono::duration<double>(sample.at - was->second.at).count();
      if (wall > 0) p.cpu_ratio = (sample.cpu_ticks - was->second.cpu_ticks) / kTicks / wall;
    }
    now[p.pid] = sample;
  }
  previous = std::move(now);
}

}  // namespace

void TopFeed::Run(cli::GlobalOptions global, Clock* clock, Logger* logger) {
  std::unique_ptr<cli::NodeSource> source;
  std::map<int64_t, ProcSample> previous;
  std::map<int, std::vector<double>> local_series;  // Direct reads only.
  for (;;) {
    auto started = clock->SteadyNow();
    {
      MutexLock lock(&mu_);
      if (is_stopping_) return;
    }
    std::string error;
    top::TopData fresh;
    if (source == nullptr) {
      Result<std::unique_ptr<cli::NodeSource>> opened = cli::NodeSource::Open(global, clock, logger);
      if (opened.ok()) {
        source = std::move(opened).value();
      } else {
        error = opened.status().ToString();
      }
    }
    if (source != nullptr && source->is_agent()) {
      error = ReadFromAgent(global.socket, &fresh);
    } else if (source != nullptr) {
      Result<node::NodeView> read = source->Read(std::nullopt);
      if (read.ok()) {
        fresh.status = std::move(read).value();
        for (const node::GpuView& g : fresh.status.gpus) {
          std::vector<double>& s = local_series[g.info.index];
          s.push_back(g.sample.utilization_gpu_ratio.value_or(0.0));
          if (s.size() > kSeriesLength) s.erase(s.begin());
        }
        fresh.series = local_series;
        fresh.series_step_seconds = std::chrono::duration<double>(interval_).count();
      } else {
        error = read.status().message();
      }
    }
    if (error.empty()) fresh.processes = top::ProcessesFromStatus(fresh.status);
    if (error.empty()) {
      AddHostFigures(started, &previous, &fresh);
      fresh.has_data = true;
      fresh.now_unix = static_cast<double>(UnixSeconds(clock->WallNow()));
    }
    {
      MutexLock lock(&mu_);
      if (error.empty()) {
        int64_t details_pid = data_.details_pid;
        std::vector<std::string> env = std::move(data_.details_env);
        std::string env_error = std::move(data_.details_env_error);
        data_ = std::move(fresh);
        data_.details_pid = details_pid;
        data_.details_env = std::move(env);
        data_.details_env_error = std::move(env_error);
        read_at_ = clock->SteadyNow();
      } else {
        data_.is_stale = data_.has_data;
        data_.stale_why = error;
        if (source != nullptr && !source->is_agent()) source.reset();
      }
    }
    char byte = 1;
    (void)!::write(wake_[1], &byte, 1);
    clock->SleepUntil(started + interval_, std::stop_token());
  }
}

}  // namespace tarmac::top
