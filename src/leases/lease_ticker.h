// SPDX-License-Identifier: Apache-2.0
//
// LeaseTicker runs the lease service's tick (LeaseService::OnTick: grants,
// ends of leases, /proc scans, signals, SQLite commits) on a thread of its
// own, fed by the sampler's snapshots, as the history writer is. Submit
// never blocks the sampler: it leaves the snapshot for the thread, and when
// a tick runs long the snapshots that came meanwhile are skipped for the
// newest one (counted in skipped()). Between snapshots it wakes when a
// revoked backfill lease's grace passes or a backfill gate opens
// (LeaseService::NextWake, OnWake).
//
// Thread safety: Start/Stop from one thread; Submit and the counters from
// any thread.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <thread>

#include "common/mutex.h"
#include "leases/lease_service.h"
#include "node/snapshot.h"

namespace tarmac::leases {

class LeaseTicker {
 public:
  explicit LeaseTicker(LeaseService* service) : service_(service) {}
  ~LeaseTicker() { Stop(); }
  LeaseTicker(const LeaseTicker&) = delete;
  LeaseTicker& operator=(const LeaseTicker&) = delete;

  void Start();
  // Finishes the tick in progress, if any, and stops.
  void Stop();

  // Hands the newest snapshot to the thread; returns at once.
  void Submit(std::shared_ptr<const node::Snapshot> snapshot);

  int64_t ticks() const;
  int64_t skipped() const;

 private:
  void Loop(std::stop_token stop);
  // A revocation began or a backfill request was queued: the deadline to
  // wait for may be sooner.
  void Nudge();

  LeaseService* service_;
  std::jthread thread_;
  mutable Mutex mu_;
  std::condition_variable_any wake_;
  std::shared_ptr<const node::Snapshot> next_ GUARDED_BY(mu_);
  int64_t ticks_ GUARDED_BY(mu_) = 0;
  int64_t skipped_ GUARDED_BY(mu_) = 0;
  bool is_nudged_ GUARDED_BY(mu_) = false;
};

}  // namespace tarmac::leases
