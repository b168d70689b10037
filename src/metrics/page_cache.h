// SPDX-License-Identifier: Apache-2.0
//
// The /metrics page, rendered once per snapshot. The first scrape after a
// new snapshot renders it; scrapes that arrive meanwhile wait for that
// render instead of starting their own; every later scrape of the same
// snapshot shares the result. So N scrapers cost one render per tick, not
// N, and a scrape's cost between ticks is a pointer copy.
//
// Thread safety: Page may be called from any number of threads at once.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "fleet/snapshot.h"
#include "common/mutex.h"

namespace tarmac::metrics {

class PageCache {
 public:
  using Renderer = std::function<std::string(const fleet::Snapshot&)>;
  explicit PageCache(Renderer render) : render_(std::move(render)) {}

  // The page for `snapshot` (which must not be null).
  std::shared_ptr<const std::string> Page(const std::shared_ptr<const fleet::Snapshot>& snapshot);

  // Pages rendered so far.
  int64_t renders() const;

 private:
  Renderer render_;
  mutable Mutex mu_;  // Held while rendering: one render at a time.
  std::shared_ptr<const fleet::Snapshot> rendered_for_ GUARDED_BY(mu_);
  std::shared_ptr<const std::string> page_ GUARDED_BY(mu_);
  int64_t renders_ GUARDED_BY(mu_) = 0;
};

}  // namespace tarmac::metrics
