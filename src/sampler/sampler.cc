// SPDX-License-Identifier: Apache-2.0
#include "sampler/sampler.h"

#include <algorithm>
#include <cstdio>

#include "common/host_name.h"

namespace tarmac::sampler {
namespace {

// A PCI address as "domain:bus:device" in hex without leading zeros, from
// NVML's "00000000:18:00.0" or the kernel log's "0000:18:00"; "" when it
// is neither.
std::string PciKey(const std::string& address) {
  unsigned domain = 0, bus = 0, device = 0;
  if (std::sscanf(address.c_str(), "%x:%x:%x", &domain, &bus, &device) != 3) return "";
  return fmt::format("{:x}:{:x}:{:x}", domain, bus, device);
}

}  // namespace

using std::chrono::duration_cast;
using std::chrono::microseconds;
using std::chrono::steady_clock;

Sampler::Sampler(BackendOpener opener, SamplerOptions options, Clock* clock, Logger* logger,
                 std::function<void(const std::shared_ptr<const node::Snapshot>&)> on_tick)
    : opener_(std::move(opener)),
      clock_(clock),
      logger_(logger),
      on_tick_(std::move(on_tick)),
      hostname_(options.hostname.empty() ? HostName() : options.hostname),
      options_(options) {}

Sampler::~Sampler() { Stop(); }

Status Sampler::Start() {
  Status s = Attach();
  if (!s.ok() && s.code() != StatusCode::kUnavailable) return s;
  if (!s.ok()) {
    MutexLock lock(&mu_);
    logger_->Log(LogLevel::kWarning, "sampler: {}; serving without GPUs and retrying every {} ms",
                 s.message(), options_.reattach_interval.count());
  }
  Tick(/*is_slow=*/true);
  thread_ = std::jthread([this](std::stop_token stop) { Loop(stop); });
  return Status::OK();
}

void Sampler::Stop() {
  if (thread_.joinable()) {
    thread_.request_stop();
    thread_.join();
  }
  events_.reset();
  if (reader_ != nullptr && reader_->HasCallInDriver()) {
    (void)reader_.release();  // A thread is stuck in the driver and still uses it.
  }
  reader_.reset();
}

std::shared_ptr<const node::Snapshot> Sampler::Latest() const {
  MutexLock lock(&mu_);
  return latest_;
}

node::SamplerStats Sampler::stats() const {
  std::vector<int64_t> window;
  node::SamplerStats stats;
  {
    MutexLock lock(&mu_);
    stats = stats_;
    window = lateness_.Values();
  }
  stats.p99_lateness = LatenessWindow::P99(std::move(window));
  return stats;
}

void Sampler::SetIntervals(SamplerOptions options) {
  MutexLock lock(&mu_);
  options_ = options;
}

Status Sampler::Attach() {
  SamplerOptions options;
  {
    MutexLock lock(&mu_);
    options = options_;
  }
  next_attach_ = clock_->SteadyNow() + options.reattach_interval;
  Result<gpu::OpenedBackend> opened = opener_();
  if (!opened.ok()) {
    if (opened.status().message() != detached_reason_ && !detached_reason_.empty()) {
      logger_->Log(LogLevel::kWarning, "sampler: still detached: {}", opened.status().message());
    }
    detached_reason_ = opened.status().message();
    return opened.status();
  }
  known_gpus_ = opened.value().gpus;
  known_system_ = opened.value().backend->system_info();
  backend_name_ = std::string(opened.value().backend->name());
  reader_ = std::make_unique<NodeReader>(std::move(opened).value(), clock_, hostname_);
  if (options.call_timeout.count() > 0) reader_->BoundCalls(options.call_timeout, logger_);
  events_ = std::make_unique<EventsWatcher>(reader_->backend(), logger_,
                                            [this](const node::GpuEvent& e) { OnEvent(e); });
  int64_t attaches = 0;
  {
    MutexLock lock(&mu_);
    attaches = ++stats_.attaches;
  }
  if (attaches > 1) {
    logger_->Log(LogLevel::kWarning, "sampler: re-attached: {} GPU{} via {}", known_gpus_.size(),
                 known_gpus_.size() == 1 ? "" : "s", backend_name_);
  }
  detached_reason_.clear();
  return Status::OK();
}

void Sampler::Detach(const std::string& reason) {
  std::chrono::milliseconds retry;
  {
    MutexLock lock(&mu_);
    retry = options_.reattach_interval;
  }
  logger_->Log(LogLevel::kWarning, "sampler: {}; detaching from the GPUs and retrying every {} ms", reason,
               retry.count());
  detached_reason_ = reason;
  for (const auto& [key, n] : reader_->backend()->CallErrors()) closed_call_errors_[key] += n;
  events_.reset();
  if (reader_->HasCallInDriver()) {
    logger_->Log(LogLevel::kWarning, "sampler: a driver call is still stuck; its backend is left open");
    (void)reader_.release();
  }
  reader_.reset();
  next_attach_ = clock_->SteadyNow() + retry;
}

void Sampler::OnEvent(const node::GpuEvent& event) {
  if (event.event_type == node::kEventMigConfigChange) {
    // The instances are read again at every sample; the new layout shows
    // from the next tick (and leases on vanished instances end there).
    logger_->Log(LogLevel::kWarning, "events: gpu {}: MIG configuration changed", event.gpu_index);
    MutexLock lock(&mu_);
    stats_.mig_config_changes++;
    return;
  }
  logger_->Log(event.xid == 79 ? LogLevel::kError : LogLevel::kWarning, "events: gpu {}: Xid {}",
               event.gpu_index, event.xid);
  MutexLock lock(&mu_);
  XidRecord& r = xids_[event.gpu_index];
  r.count++;
  r.last = event;
  r.by_code[event.xid]++;
  stats_.xid_events++;
}

void Sampler::SeedEarlierXids(std::map<std::string, std::map<int64_t, int64_t>> by_uuid) {
  MutexLock lock(&mu_);
  earlier_xids_ = std::move(by_uuid);
}

void Sampler::SeedLoggedXids(std::vector<LoggedXid> xids, std::map<std::string, int64_t> cleared_unix) {
  MutexLock lock(&mu_);
  logged_xids_ = std::move(xids);
  xids_cleared_unix_ = std::move(cleared_unix);
}

void Sampler::ResolveLoggedXids(const node::NodeView& node_view) {
  for (const node::GpuView& g : node_view.gpus) {
    std::string key = PciKey(g.info.pci_bus_id);
    if (key.empty()) continue;
    auto cleared = xids_cleared_unix_.find(g.info.uuid);
    std::map<int64_t, int64_t> counts;
    for (const LoggedXid& x : logged_xids_) {
      if (PciKey(x.pci) != key) continue;
      if (cleared != xids_cleared_unix_.end() && x.at_unix <= cleared->second) continue;
      counts[x.xid]++;
    }
    std::map<int64_t, int64_t>& earlier = earlier_xids_[g.info.uuid];
    for (const auto& [code, n] : counts) earlier[code] = std::max(earlier[code], n);
    if (earlier.empty()) earlier_xids_.erase(g.info.uuid);
  }
  logged_xids_.clear();
}

void Sampler::ForgetXids(const std::string& uuid) {
  MutexLock lock(&mu_);
  earlier_xids_.erase(uuid);
  forgotten_xids_.insert(uuid);
}

node::NodeView Sampler::DetachedView() const {
  node::NodeView view;
  view.hostname = hostname_;
  view.backend = backend_name_;
  view.system = known_system_;
  view.taken_at = clock_->WallNow();
  view.backend_error = detached_reason_;
  for (const node::GpuInfo& info : known_gpus_) {
    node::GpuView g;
    g.info = info;
    g.sample.index = info.index;
    g.sample.taken_at = view.taken_at;
    g.sample.health = node::GpuHealth::kDriverNotLoaded;
    g.sample.error = detached_reason_;
    view.gpus.push_back(std::move(g));
  }
  return view;
}

void Sampler::Tick(bool is_slow) {
  steady_clock::time_point start = clock_->SteadyNow();
  if (reader_ == nullptr && start >= next_attach_ && Attach().ok()) is_slow = true;
  auto snapshot = std::make_shared<node::Snapshot>();
  // Thread entry points keep one last-resort catch: a bug in one tick is
  // logged, and sampling goes on.
  try {
    if (reader_ != nullptr) {
      snapshot->node_view =
          reader_->Read(std::nullopt, is_slow ? node::kAllTiers : unsigned{node::kFastTier});
      for (const node::GpuView& g : snapshot->node_view.gpus) {
        if (g.sample.health != node::GpuHealth::kDriverNotLoaded) continue;
        Detach(g.sample.error);
        snapshot->node_view = DetachedView();
        break;
      }
    } else {
      snapshot->node_view = DetachedView();
    }
    snapshot->call_errors = closed_call_errors_;
    if (reader_ != nullptr) {
      for (const auto& [key, n] : reader_->backend()->CallErrors()) snapshot->call_errors[key] += n;
    }
  } catch (const std::exception& e) {
    logger_->Log(LogLevel::kError, "sampler: tick failed: {}", e.what());
    return;
  }
  if (annotate_) annotate_(&snapshot->node_view);
  snapshot->taken_at_steady = clock_->SteadyNow();
  for (const node::GpuView& g : snapshot->node_view.gpus) {
    if (g.sample.health == node::GpuHealth::kOk && g.sample.utilization_gpu_ratio) {
      history_.Record(g.info.index, snapshot->taken_at_steady, *g.sample.utilization_gpu_ratio);
    }
  }
  snapshot->tick_duration = duration_cast<microseconds>(snapshot->taken_at_steady - start);
  {
    MutexLock lock(&mu_);
    if (!logged_xids_.empty()) ResolveLoggedXids(snapshot->node_view);
    for (node::GpuView& g : snapshot->node_view.gpus) {
      if (forgotten_xids_.erase(g.info.uuid) != 0) xids_.erase(g.info.index);
      if (auto e = earlier_xids_.find(g.info.uuid); e != earlier_xids_.end())
        g.earlier_xid_count_by_code = e->second;
      auto it = xids_.find(g.info.index);
      if (it == xids_.end()) continue;
      g.xid_count = it->second.count;
      g.last_xid = it->second.last;
      g.xid_count_by_code = it->second.by_code;
    }
    snapshot->sequence = stats_.ticks + 1;
    stats_.ticks++;
    if (is_slow) stats_.slow_ticks++;
    stats_.last_tick_duration = snapshot->tick_duration;
    latest_ = snapshot;
  }
  if (on_tick_) on_tick_(snapshot);
}

void Sampler::RequestReading() {
  MutexLock lock(&mu_);
  is_reading_asked_ = true;
  wake_.request_stop();
}

bool Sampler::SleepUntilTick(steady_clock::time_point tick, const std::stop_token& stop) {
  for (;;) {
    std::stop_source wake;
    {
      MutexLock lock(&mu_);
      if (is_reading_asked_) {
        is_reading_asked_ = false;
        lock.Unlock();
        Tick(/*is_slow=*/false);
        continue;
      }
      wake_ = wake;
    }
    // The agent's stop ends this sleep too.
    std::stop_callback forward(stop, [&wake] { wake.request_stop(); });
    bool is_on_time = clock_->SleepUntil(tick, wake.get_token());
    if (stop.stop_requested()) return false;
    if (is_on_time) return true;
  }
}

void Sampler::Loop(std::stop_token stop) {
  // Ticks are scheduled on a fixed grid from the start, so a slow tick does
  // not shift the ones after it; a missed slot is skipped, not made up.
  steady_clock::time_point next = clock_->SteadyNow();
  steady_clock::time_point next_slow;
  {
    MutexLock lock(&mu_);
    next_slow = next + options_.slow_interval;
  }
  while (!stop.stop_requested()) {
    SamplerOptions options;
    {
      MutexLock lock(&mu_);
      options = options_;
    }
    next += options.fast_interval;
    steady_clock::time_point now = clock_->SteadyNow();
    while (next <= now) next += options.fast_interval;
    if (!SleepUntilTick(next, stop)) break;
    microseconds late = duration_cast<microseconds>(clock_->SteadyNow() - next);
    bool is_slow = clock_->SteadyNow() >= next_slow;
    if (is_slow) next_slow = next + options.slow_interval;
    Tick(is_slow);
    MutexLock lock(&mu_);
    if (late > stats_.max_lateness) stats_.max_lateness = late;
    lateness_.Add(late);
  }
}

}  // namespace tarmac::sampler
