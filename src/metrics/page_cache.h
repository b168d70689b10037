// SPDX-License-Identifier: Apache-2.0
//
// The /metrics page, rendered once per snapshot: after each sample while
// someone scrapes (Prerender), else by the first scrape after it; scrapes that arrive meanwhile get the
// previous page at once (one sample older) instead of waiting for that render or starting their own, except
// for the very first page, which they wait for; every later scrape of the same snapshot shares the result. So
// N scrapers cost one render per tick, not N, only the rendering scrape waits on it, and a scrape's cost
// between renders is a pointer copy.
//
// Thread safety: Page may be called from any number of threads at once.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "common/mutex.h"
#include "node/snapshot.h"

namespace tarmac::metrics {

class PageCache {
 public:
  using Renderer = std::function<std::string(const node::Snapshot&)>;
  explicit PageCache(Renderer render) : render_(std::move(render)) {}

  // The page for `snapshot` (which must not be null).
  std::shared_ptr<const std::string> Page(const std::shared_ptr<const node::Snapshot>& snapshot);

  // Renders the page for `snapshot` now when a scrape came since the last
  // call (someone is scraping), so the scrapes that follow find it ready
  // and none pays the render; does nothing while nobody scrapes. Called
  // after each sample, off the request path.
  void Prerender(const std::shared_ptr<const node::Snapshot>& snapshot);

  // Pages rendered so far.
  int64_t renders() const;

 private:
  // Renders `snapshot`'s page, or answers the previous one while another
  // render runs (see above).
  std::shared_ptr<const std::string> Render(const std::shared_ptr<const node::Snapshot>& snapshot);

  Renderer render_;
  std::atomic<bool> is_scraped_{false};
  mutable Mutex mu_;  // Held while rendering: one render at a time.
  std::shared_ptr<const node::Snapshot> rendered_for_ GUARDED_BY(mu_);
  std::shared_ptr<const std::string> page_ GUARDED_BY(mu_);
  int64_t renders_ GUARDED_BY(mu_) = 0;
  bool is_rendering_ GUARDED_BY(mu_) = false;  // A scrape renders a new page now, outside the lock.
};

}  // namespace tarmac::metrics
