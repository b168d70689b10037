// SPDX-License-Identifier: Apache-2.0
//
// What the lease service publishes for readers outside its lock: the lease
// on each GPU (and MIG instance), the backfill preemptions per GPU, and the
// figures /metrics shows. The service replaces the whole of it after each
// tick and each change (Publish); readers (the sampler's tick joining marks
// onto its view, a /metrics scrape) take the current one (Get) and never
// wait for a lease tick's /proc scans or commits.
//
// Thread safety: thread-safe; its lock is taken alone, or after the lease
// service's (never the other way round).
#pragma once

#include <memory>

#include "common/mutex.h"
#include "node/agent_figures.h"
#include "node/lease_marks.h"

namespace tarmac::leases {

// One publication: the lease marks, and the figures /metrics shows.
struct Publication : node::LeaseMarks {
  node::AgentFigures figures;  // As of the publication (for /metrics).
};

class PublishedMarks {
 public:
  void Publish(std::shared_ptr<const Publication> marks) EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    marks_ = std::move(marks);
  }
  std::shared_ptr<const Publication> Get() const EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    return marks_;
  }

 private:
  mutable Mutex mu_;
  std::shared_ptr<const Publication> marks_ GUARDED_BY(mu_) = std::make_shared<const Publication>();
};

}  // namespace tarmac::leases
