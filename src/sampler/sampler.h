// SPDX-License-Identifier: Apache-2.0
//
// The Sampler owns the GPU backend and reads it on a schedule: the fast tier
// every fast_interval, the slow tier as well every slow_interval. Each tick
// publishes an immutable snapshot; readers take a shared_ptr copy and never
// wait for a tick in progress. Driver events (Xid) are watched on a thread
// of their own and appear in the next snapshot.
//
// When the driver goes away (unloaded, or not loaded yet at start) the
// sampler detaches: it closes the backend, keeps publishing snapshots that
// say so (the GPUs it last knew, health "driver_not_loaded"), and tries to
// open the backend again every reattach_interval until it succeeds.
//
// Thread safety: Start/Stop from one thread; Latest(), stats() and
// SetIntervals() from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <stop_token>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/log.h"
#include "common/mutex.h"
#include "node/snapshot.h"
#include "node/utilization_history.h"
#include "sampler/events_watcher.h"
#include "sampler/lateness_window.h"
#include "sampler/node_reader.h"
#include "sampler/sampler_options.h"

namespace tarmac::sampler {

// Opens the GPU backend: at start and again on each re-attach attempt.
using BackendOpener = std::function<Result<gpu::OpenedBackend>()>;

class Sampler {
 public:
  // `on_tick` (optional) runs on the sampler thread after each publish (the
  // agent uses it for the systemd watchdog and to hand the snapshot to the
  // history writer); it must not block.
  Sampler(BackendOpener opener, SamplerOptions options, Clock* clock, Logger* logger,
          std::function<void(const std::shared_ptr<const node::Snapshot>&)> on_tick = {});
  ~Sampler();
  Sampler(const Sampler&) = delete;
  Sampler& operator=(const Sampler&) = delete;

  // Adds to each snapshot, on the sampler thread before it is published,
  // what others know of its GPUs (the agent: the pod each GPU is allocated
  // to). Call before Start; `annotate` must not block.
  void SetAnnotator(std::function<void(node::NodeView*)> annotate) { annotate_ = std::move(annotate); }

  // Opens the backend and takes the first sample (both tiers) on the calling
  // thread, publishes it, then starts the sampler thread, so once Start
  // returns Latest() has data. An open that fails with kUnavailable (no
  // driver yet) starts the sampler detached; any other failure is returned
  // and nothing is started.
  Status Start();

  // Stops the threads and waits for them (at most one tick).
  void Stop();

  // The newest snapshot; null before Start.
  std::shared_ptr<const node::Snapshot> Latest() const;

  node::SamplerStats stats() const;

  // Each GPU's utilization over the last ticks (kCapacity of them).
  const node::UtilizationHistory& history() const { return history_; }

  // New intervals take effect from the next tick (SIGHUP reload).
  // call_timeout takes effect at the next attach.
  void SetIntervals(SamplerOptions options);

  // Asks for a fast-tier reading now, off the grid (the lease service, when
  // a GPU it hands over should be empty): the sampler thread takes it at
  // once and the grid's ticks go on as before. Asks that come while one is
  // pending are one. Does not block; harmless after Stop.
  void RequestReading();

  // Xids the history holds from before this agent started (since the host
  // booted), by GPU UUID and code: shown on each GPU as
  // earlier_xid_count_by_code.
  void SeedEarlierXids(std::map<std::string, std::map<int64_t, int64_t>> by_uuid) EXCLUDES(mu_);
  // An Xid the kernel logged: its GPU's PCI address ("0000:18:00", as the
  // kernel log names it) and when (Unix seconds).
  struct LoggedXid {
    std::string pci;
    int64_t xid = 0;
    int64_t at_unix = 0;
  };
  // The Xids the kernel logged since the host booted, resolved to GPUs by
  // PCI address at the next tick and counted as earlier Xids (per code, the
  // larger of these and the history's); a GPU's from at or before its
  // `cleared_unix` (an admin's undrain) do not count.
  void SeedLoggedXids(std::vector<LoggedXid> xids, std::map<std::string, int64_t> cleared_unix) EXCLUDES(mu_);
  // Forgets every Xid seen on GPU `uuid`, earlier and since the start (an
  // admin vouched for it: tarmac undrain).
  void ForgetXids(const std::string& uuid) EXCLUDES(mu_);

 private:
  struct XidRecord {
    int64_t count = 0;
    node::GpuEvent last;
    std::map<int64_t, int64_t> by_code;
  };

  // Tries to open the backend; on success starts reading through it.
  Status Attach();
  // Closes the backend (after the driver went away); `reason` is shown
  // until the next attach.
  void Detach(const std::string& reason);
  void Tick(bool is_slow);
  void Loop(std::stop_token stop);
  // Sleeps until `tick`, taking the readings asked for meanwhile; false
  // once `stop` is requested.
  bool SleepUntilTick(std::chrono::steady_clock::time_point tick, const std::stop_token& stop);
  void OnEvent(const node::GpuEvent& event);
  // Counts logged_xids_ on the GPUs of `node_view` into earlier_xids_.
  void ResolveLoggedXids(const node::NodeView& node_view) REQUIRES(mu_);
  node::NodeView DetachedView() const;

  BackendOpener opener_;
  Clock* clock_;
  Logger* logger_;
  std::function<void(const std::shared_ptr<const node::Snapshot>&)> on_tick_;
  std::function<void(node::NodeView*)> annotate_;
  std::jthread thread_;

  // Sampler-thread state (Start, then the loop).
  std::unique_ptr<NodeReader> reader_;
  std::unique_ptr<EventsWatcher> events_;  // Destroyed before reader_.
  std::vector<node::GpuInfo> known_gpus_;  // Shown while detached.
  node::SystemInfo known_system_;
  std::string backend_name_;
  std::string detached_reason_;
  node::CallErrorCounts closed_call_errors_;  // Counted by backends since closed.
  std::chrono::steady_clock::time_point next_attach_;
  std::string hostname_;
  node::UtilizationHistory history_;

  mutable Mutex mu_;
  SamplerOptions options_ GUARDED_BY(mu_);
  std::shared_ptr<const node::Snapshot> latest_ GUARDED_BY(mu_);
  node::SamplerStats stats_ GUARDED_BY(mu_);
  std::map<int, XidRecord> xids_ GUARDED_BY(mu_);                                   // By GPU index.
  std::map<std::string, std::map<int64_t, int64_t>> earlier_xids_ GUARDED_BY(mu_);  // By GPU UUID.
  std::set<std::string> forgotten_xids_ GUARDED_BY(mu_);  // UUIDs whose Xids to forget at the next tick.
  std::vector<LoggedXid> logged_xids_ GUARDED_BY(mu_);    // To resolve to GPUs at the next tick.
  std::map<std::string, int64_t> xids_cleared_unix_ GUARDED_BY(mu_);
  LatenessWindow lateness_ GUARDED_BY(mu_);
  bool is_reading_asked_ GUARDED_BY(mu_) = false;
  std::stop_source wake_ GUARDED_BY(mu_);  // Ends the sampler thread's current sleep.
};

}  // namespace tarmac::sampler
