// SPDX-License-Identifier: Apache-2.0
#include "web/stream_feed.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace tarmac::web {
namespace {

using nlohmann::json;

// A feed over a counter for the sample and a journal of events the test
// appends to; counts how often each method is asked.
struct FakeAgent {
  std::atomic<int64_t> sequence{1};
  std::atomic<int> status_asks{0};
  Mutex mu;
  std::vector<int64_t> journal GUARDED_BY(mu);  // Event seqs.

  StreamFeed::Sources Sources() {
    StreamFeed::Sources sources;
    sources.sequence = [this] { return sequence.load(); };
    sources.status = [this]() -> Result<json> {
      ++status_asks;
      return json{{"sequence", sequence.load()}};
    };
    sources.leases = []() -> Result<json> {
      return json{{"leases", json::array()}, {"queue", json::array()}};
    };
    sources.events = [this](int64_t after, int64_t limit,
                            bool newest) -> Result<std::vector<store::LeaseEvent>> {
      auto event = [](int64_t seq) {
        store::LeaseEvent e;
        e.seq = seq;
        return e;
      };
      MutexLock lock(&mu);
      std::vector<store::LeaseEvent> events;
      if (newest) {
        if (!journal.empty()) events.push_back(event(journal.back()));
      } else {
        for (int64_t seq : journal) {
          if (seq > after && static_cast<int64_t>(events.size()) < limit) events.push_back(event(seq));
        }
      }
      return events;
    };
    return sources;
  }
  void Journal(int64_t seq) {
    MutexLock lock(&mu);
    journal.push_back(seq);
  }
};

TEST(StreamFeedTest, OneEncodingPerSampleSharedByEveryReader) {
  FakeAgent agent;
  StreamFeed feed(agent.Sources());
  auto a = feed.Latest();
  auto b = feed.Latest();
  EXPECT_EQ(a, b);
  EXPECT_EQ(agent.status_asks.load(), 1);
  EXPECT_NE(a->text.find("event: status\nid: 1\ndata: {\"sequence\":1}\n\n"), std::string::npos);
  EXPECT_NE(a->text.find("event: leases\n"), std::string::npos);
  agent.sequence = 2;
  auto c = feed.Latest();
  EXPECT_NE(c, a);
  EXPECT_EQ(c->sequence, 2);
  EXPECT_EQ(agent.status_asks.load(), 2);
}

TEST(StreamFeedTest, AnEventIsAppendedAsDumpWritesItsData) {
  json data = {{"name", "r\u00e9sum\u00e9 \"q\" \\ \n\t\x01"},
               {"ratio", 0.25},
               {"list", {1, -2, nullptr, true}},
               {"empty", json::object()}};
  std::string out = "before\n";
  StreamFeed::AppendEvent(&out, "status", data, 7);
  EXPECT_EQ(out, "before\nevent: status\nid: 7\ndata: " + data.dump() + "\n\n");
  EXPECT_EQ(StreamFeed::Event("leases", data), "event: leases\ndata: " + data.dump() + "\n\n");
  EXPECT_EQ(json::parse(out.substr(out.find("data: ") + 6)), data);
}

TEST(StreamFeedTest, TheStatusTextSourceIsWrittenInPlaceOfTheAskedStatus) {
  FakeAgent agent;
  StreamFeed::Sources sources = agent.Sources();
  bool has_status = true;
  sources.status_text = [&](std::string* out) {
    if (!has_status) return false;
    *out += R"({"gpus":[],"sequence":)" + std::to_string(agent.sequence.load()) + "}";
    return true;
  };
  StreamFeed feed(std::move(sources));
  auto batch = feed.Latest();
  EXPECT_EQ(batch->text.find("event: status\nid: 1\ndata: {\"gpus\":[],\"sequence\":1}\n\n"), 0u);
  EXPECT_NE(batch->text.find("event: leases\n"), std::string::npos);
  EXPECT_EQ(agent.status_asks.load(), 0);
  // None to write: no status event, the rest as before.
  has_status = false;
  agent.sequence = 2;
  batch = feed.Latest();
  EXPECT_EQ(batch->text.find("event: status"), std::string::npos);
  EXPECT_EQ(batch->text.find("event: leases\n"), 0u);
}

TEST(StreamFeedTest, WhileAStreamIsOpenPublishBuildsTheBatchSoTheStreamsOnlyRead) {
  FakeAgent agent;
  StreamFeed feed(agent.Sources());
  feed.Publish();  // No stream: nothing is built.
  EXPECT_EQ(agent.status_asks.load(), 0);
  std::shared_ptr<void> place = feed.Open(2);
  ASSERT_NE(place, nullptr);
  EXPECT_EQ(feed.open_streams(), 1);
  agent.sequence = 2;
  feed.Publish();
  EXPECT_EQ(agent.status_asks.load(), 1);
  // A stream's thread finds the batch built.
  std::shared_ptr<const StreamBatch> got;
  std::thread reader([&] { got = feed.WaitNewer(1, std::chrono::milliseconds(0)); });
  reader.join();
  ASSERT_NE(got, nullptr);
  EXPECT_EQ(got->sequence, 2);
  EXPECT_EQ(agent.status_asks.load(), 1);
  // Places: at most `max`; each given back when its last copy goes.
  std::shared_ptr<void> second = feed.Open(2);
  EXPECT_NE(second, nullptr);
  EXPECT_EQ(feed.Open(2), nullptr);
  EXPECT_EQ(feed.open_streams(), 2);
  std::shared_ptr<void> copy = place;
  place.reset();
  EXPECT_EQ(feed.open_streams(), 2);
  copy.reset();
  second.reset();
  EXPECT_EQ(feed.open_streams(), 0);
  agent.sequence = 3;
  feed.Publish();
  EXPECT_EQ(agent.status_asks.load(), 1);
}

TEST(StreamFeedTest, EventsAreThoseJournalledSinceThePreviousBatch) {
  FakeAgent agent;
  agent.Journal(7);
  StreamFeed feed(agent.Sources());
  auto first = feed.Latest();  // Learns where the journal ends; sends none.
  EXPECT_EQ(first->events_upto, 7);
  EXPECT_EQ(first->events_text, "");
  agent.Journal(8);
  agent.Journal(9);
  agent.sequence = 2;
  auto second = feed.Latest();
  EXPECT_EQ(second->events_after, 7);
  EXPECT_EQ(second->events_upto, 9);
  json sent = json::parse(second->events_text.substr(second->events_text.find("data: ") + 6));
  ASSERT_EQ(sent["events"].size(), 2u) << second->events_text;
  EXPECT_EQ(sent["events"][0]["seq"], 8);
  EXPECT_EQ(sent["events"][1]["seq"], 9);
  agent.sequence = 3;
  auto third = feed.Latest();
  EXPECT_EQ(third->events_after, 9);
  EXPECT_EQ(third->events_text, "");
}

TEST(StreamFeedTest, WaitNewerWakesOnNotifyAndTimesOutWithoutASample) {
  FakeAgent agent;
  StreamFeed feed(agent.Sources());
  // The batch of a sample the reader has not seen comes at once.
  auto now = feed.WaitNewer(0, std::chrono::milliseconds(0));
  ASSERT_NE(now, nullptr);
  EXPECT_EQ(now->sequence, 1);
  // No new sample: null after the timeout.
  EXPECT_EQ(feed.WaitNewer(1, std::chrono::milliseconds(20)), nullptr);
  // A sample and a Notify wake a waiter long before its timeout.
  std::thread sampler([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    agent.sequence = 2;
    feed.Notify();
  });
  auto next = feed.WaitNewer(1, std::chrono::minutes(10));
  sampler.join();
  ASSERT_NE(next, nullptr);
  EXPECT_EQ(next->sequence, 2);
}

}  // namespace
}  // namespace tarmac::web
