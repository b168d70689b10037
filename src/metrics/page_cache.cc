// SPDX-License-Identifier: Apache-2.0
#include "metrics/page_cache.h"

namespace tarmac::metrics {

std::shared_ptr<const std::string> PageCache::Page(const std::shared_ptr<const node::Snapshot>& snapshot) {
  is_scraped_.store(true, std::memory_order_relaxed);
  return Render(snapshot);
}

void PageCache::Prerender(const std::shared_ptr<const node::Snapshot>& snapshot) {
  if (is_scraped_.exchange(false, std::memory_order_relaxed)) Render(snapshot);
}

std::shared_ptr<const std::string> PageCache::Render(const std::shared_ptr<const node::Snapshot>& snapshot) {
  MutexLock lock(&mu_);
  if (rendered_for_ == snapshot && page_ != nullptr) return page_;
  if (page_ == nullptr) {  // The first page: everyone waits for it, under the lock.
    page_ = std::make_shared<const std::string>(render_(*snapshot));
    rendered_for_ = snapshot;
    renders_++;
    return page_;
  }
  if (is_rendering_) return page_;  // Another scrape renders the new one: the previous page, no wait.
  is_rendering_ = true;
  lock.Unlock();
  auto page = std::make_shared<const std::string>(render_(*snapshot));
  lock.Lock();
  is_rendering_ = false;
  renders_++;
  // A render of a snapshot older than the one already cached is answered but not kept.
  if (rendered_for_ == nullptr || snapshot->sequence >= rendered_for_->sequence) {
    page_ = page;
    rendered_for_ = snapshot;
  }
  return page;
}

int64_t PageCache::renders() const {
  MutexLock lock(&mu_);
  return renders_;
}

}  // namespace tarmac::metrics
