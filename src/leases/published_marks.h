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
#include "fleet/lease_figures.h"
#include "fleet/lease_marks.h"

namespace tarmac::leases {

struct GpuMarks : fleet::LeaseMarks {
  fleet::LeaseFigures figures;  // As of the publication (for /metrics).
};

class PublishedMarks {
 public:
  void Publish(std::shared_ptr<const GpuMarks> marks) EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    marks_ = std::move(marks);
  }
  std::shared_ptr<const GpuMarks> Get() const EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    return marks_;
  }

 private:
  mutable Mutex mu_;
  std::shared_ptr<const GpuMarks> marks_ GUARDED_BY(mu_) = std::make_shared<const GpuMarks>();
};

}  // namespace tarmac::leases
