// SPDX-License-Identifier: Apache-2.0
#include "metrics/page_cache.h"

namespace tarmac::metrics {

std::shared_ptr<const std::string> PageCache::Page(const std::shared_ptr<const fleet::Snapshot>& snapshot) {
  MutexLock lock(&mu_);
  if (rendered_for_ != snapshot || page_ == nullptr) {
    page_ = std::make_shared<const std::string>(render_(*snapshot));
    rendered_for_ = snapshot;
    renders_++;
  }
  return page_;
}

int64_t PageCache::renders() const {
  MutexLock lock(&mu_);
  return renders_;
}

}  // namespace tarmac::metrics
