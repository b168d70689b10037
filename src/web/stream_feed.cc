// SPDX-License-Identifier: Apache-2.0
#include "web/stream_feed.h"

#include <fmt/format.h>

#include <iterator>

#include "common/json_text.h"

namespace tarmac::web {

using nlohmann::json;

void StreamFeed::AppendEvent(std::string* out, const char* name, const json& data, int64_t id) {
  AppendEventOf(out, name, id, [&](std::string* text) {
    AppendJson(text, data);
    return true;
  });
}

void StreamFeed::AppendEventOf(std::string* out, const char* name, int64_t id,
                               const std::function<bool(std::string*)>& append_data) {
  size_t start = out->size();
  fmt::format_to(std::back_inserter(*out), "event: {}\n", name);
  if (id > 0) fmt::format_to(std::back_inserter(*out), "id: {}\n", id);
  *out += "data: ";
  if (append_data(out)) {
    *out += "\n\n";
  } else {
    out->resize(start);
  }
}

std::string StreamFeed::Event(const char* name, const json& data, int64_t id) {
  std::string out;
  AppendEvent(&out, name, data, id);
  return out;
}

void StreamFeed::Notify() {
  {
    MutexLock lock(&wait_mu_);
    ++notified_;
  }
  sampled_.notify_all();
}

void StreamFeed::Publish() {
  if (open_streams() > 0) Latest();
  Notify();
}

int StreamFeed::open_streams() const {
  MutexLock lock(&places_->mu);
  return places_->open;
}

std::shared_ptr<void> StreamFeed::Open(int max, const std::string& client, int max_per_client) {
  std::shared_ptr<Places> places = places_;
  {
    MutexLock lock(&places->mu);
    if (places->open >= max) return nullptr;
    int& mine = places->by_client[client];
    if (max_per_client > 0 && mine >= max_per_client) return nullptr;
    ++mine;
    ++places->open;
  }
  return std::shared_ptr<void>(places.get(), [places, client](void*) {
    MutexLock lock(&places->mu);
    --places->open;
    if (--places->by_client[client] <= 0) places->by_client.erase(client);
  });
}

std::shared_ptr<const StreamBatch> StreamFeed::WaitNewer(int64_t sequence,
                                                         std::chrono::milliseconds timeout) {
  std::shared_ptr<const StreamBatch> batch = Latest();
  if (batch->sequence != sequence) return batch;
  {
    MutexLock lock(&wait_mu_);
    int64_t seen = notified_;
    // A condition variable's timeout is real time (common/clock.h).
    lock.WaitFor(sampled_, timeout, [&]() REQUIRES(wait_mu_) { return notified_ != seen; });
  }
  batch = Latest();
  return batch->sequence != sequence ? batch : nullptr;
}

std::shared_ptr<const StreamBatch> StreamFeed::Latest() {
  int64_t sequence = sources_.sequence();
  MutexLock lock(&mu_);
  if (latest_ != nullptr && latest_->sequence == sequence) return latest_;
  auto batch = std::make_shared<StreamBatch>();
  batch->sequence = sequence;
  // Room for about what the last batch took, so the text is one block.
  if (latest_ != nullptr) batch->text.reserve(latest_->text.size() + latest_->text.size() / 8);
  if (sources_.status_text) {
    // The status written one GPU at a time (a GPU's tree at once, not the
    // whole node's: with 64 GPUs 0.8 MiB of small blocks a second).
    AppendEventOf(&batch->text, "status", sequence, sources_.status_text);
  } else if (Result<json> status = sources_.status(); status.ok()) {
    AppendEvent(&batch->text, "status", status.value(), sequence);
  }
  if (Result<json> leases = sources_.leases(); leases.ok())
    AppendEvent(&batch->text, "leases", leases.value());
  // The events since the previous batch; the first batch only learns
  // where the journal ends.
  int64_t after = latest_ != nullptr ? latest_->events_upto : -1;
  if (after < 0) {
    Result<std::vector<store::LeaseEvent>> newest = sources_.events(0, 1, true);
    if (newest.ok())
      batch->events_after = batch->events_upto = newest.value().empty() ? 0 : newest.value().back().seq;
  } else {
    batch->events_after = batch->events_upto = after;
    Result<std::vector<store::LeaseEvent>> events = sources_.events(after, 1000, false);
    if (events.ok() && !events.value().empty()) {
      batch->events_upto = events.value().back().seq;
      json list = json::array();
      for (const store::LeaseEvent& e : events.value()) list.push_back(store::LeaseEventToJson(e));
      batch->events_text = Event("events", json{{"events", std::move(list)}});
    }
  }
  latest_ = std::move(batch);
  return latest_;
}

}  // namespace tarmac::web
