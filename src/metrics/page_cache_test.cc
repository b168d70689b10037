// SPDX-License-Identifier: Apache-2.0
#include "metrics/page_cache.h"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

namespace tarmac::metrics {
namespace {

TEST(PageCacheTest, ConcurrentScrapesOfOneSnapshotShareOneRender) {
  std::atomic<int> calls{0};
  PageCache cache([&calls](const node::Snapshot& s) {
    calls++;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // Scrapes pile up meanwhile.
    return "tick " + std::to_string(s.sequence) + "\n";
  });
  auto first = std::make_shared<node::Snapshot>();
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
  auto second = std::make_shared<node::Snapshot>();
  second->sequence = 2;
  EXPECT_EQ(*cache.Page(second), "tick 2\n");
  EXPECT_EQ(*cache.Page(second), "tick 2\n");
  EXPECT_EQ(calls.load(), 2);
  EXPECT_EQ(cache.renders(), 2);
}

TEST(PageCacheTest, AnOlderSnapshotAfterANewerOneIsRenderedForItself) {
  PageCache cache([](const node::Snapshot& s) { return std::to_string(s.sequence); });
  auto a = std::make_shared<node::Snapshot>();
  a->sequence = 1;
  auto b = std::make_shared<node::Snapshot>();
  b->sequence = 2;
  EXPECT_EQ(*cache.Page(b), "2");
  EXPECT_EQ(*cache.Page(a), "1");  // Never another snapshot's page.
}

// While one scrape renders the page of a new snapshot, the others get the
// previous page at once instead of waiting; then everyone gets the new one.
TEST(PageCacheTest, WhileANewPageRendersOtherScrapesGetThePreviousOne) {
  std::mutex gate;
  gate.lock();  // Holds the render of snapshot 2.
  std::atomic<bool> rendering{false};
  PageCache cache([&](const node::Snapshot& s) {
    if (s.sequence == 2) {
      rendering = true;
      std::lock_guard<std::mutex> wait(gate);
    }
    return "tick " + std::to_string(s.sequence) + "\n";
  });
  auto first = std::make_shared<node::Snapshot>();
  first->sequence = 1;
  auto second = std::make_shared<node::Snapshot>();
  second->sequence = 2;
  EXPECT_EQ(*cache.Page(first), "tick 1\n");
  std::string rendered;
  std::thread renderer([&] { rendered = *cache.Page(second); });
  while (!rendering) std::this_thread::yield();
  EXPECT_EQ(*cache.Page(second), "tick 1\n");  // Not blocked behind the render.
  gate.unlock();
  renderer.join();
  EXPECT_EQ(rendered, "tick 2\n");
  EXPECT_EQ(*cache.Page(second), "tick 2\n");
  EXPECT_EQ(cache.renders(), 2);
}

// After each sample the page is rendered off the request path while
// someone scrapes, and not at all while nobody does.
TEST(PageCacheTest, PrerenderRendersOnlyWhileScraped) {
  int calls = 0;
  PageCache cache([&calls](const node::Snapshot& s) {
    ++calls;
    return std::to_string(s.sequence);
  });
  auto snapshot = [](int64_t n) {
    auto s = std::make_shared<node::Snapshot>();
    s->sequence = n;
    return s;
  };
  cache.Prerender(snapshot(1));
  EXPECT_EQ(calls, 0) << "nobody scrapes";
  EXPECT_EQ(*cache.Page(snapshot(1)), "1");
  auto two = snapshot(2);
  cache.Prerender(two);
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(*cache.Page(two), "2");
  EXPECT_EQ(calls, 2) << "the scrape found the page ready";
  cache.Prerender(snapshot(3));
  EXPECT_EQ(calls, 3);
  cache.Prerender(snapshot(4));
  EXPECT_EQ(calls, 3) << "no scrape since the last prerender";
}

}  // namespace
}  // namespace tarmac::metrics
