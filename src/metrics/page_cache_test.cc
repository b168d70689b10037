// SPDX-License-Identifier: Apache-2.0
#include "metrics/page_cache.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace tarmac::metrics {
namespace {

TEST(PageCacheTest, ConcurrentScrapesOfOneSnapshotShareOneRender) {
  std::atomic<int> calls{0};
  PageCache cache([&calls](const fleet::Snapshot& s) {
    calls++;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // Scrapes pile up meanwhile.
    return "tick " + std::to_string(s.sequence) + "\n";
  });
  auto first = std::make_shared<fleet::Snapshot>();
  first->sequence = 1;
  std::vector<std::thread> scrapers;
  std::vector<std::string> pages(16);
  for (size_t i = 0; i < pages.size(); ++i) {
    scrapers.emplace_back([&, i] { pages[i] = *cache.Page(first); });
  }
  for (std::thread& t : scrapers) t.join();
  EXPECT_EQ(calls.load(), 1);
  for (const std::string& p : pages) EXPECT_EQ(p, "tick 1\n");

  // A new snapshot is rendered again, once.
  auto second = std::make_shared<fleet::Snapshot>();
  second->sequence = 2;
  EXPECT_EQ(*cache.Page(second), "tick 2\n");
  EXPECT_EQ(*cache.Page(second), "tick 2\n");
  EXPECT_EQ(calls.load(), 2);
  EXPECT_EQ(cache.renders(), 2);
}

TEST(PageCacheTest, AnOlderSnapshotAfterANewerOneIsRenderedForItself) {
  PageCache cache([](const fleet::Snapshot& s) { return std::to_string(s.sequence); });
  auto a = std::make_shared<fleet::Snapshot>();
  a->sequence = 1;
  auto b = std::make_shared<fleet::Snapshot>();
  b->sequence = 2;
  EXPECT_EQ(*cache.Page(b), "2");
  EXPECT_EQ(*cache.Page(a), "1");  // Never another snapshot's page.
}

}  // namespace
}  // namespace tarmac::metrics
