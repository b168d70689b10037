// SPDX-License-Identifier: Apache-2.0
//
// What the web console's event streams send after each sample, made once
// per sample and shared by every stream (docs/web.md "The stream"): the
// `status` and `leases` events as one text, and the lease events journalled
// since the previous batch. Twenty open pages cost one encoding per sample,
// not twenty.
//
// Thread safety: any thread; one caller builds a new batch while the others
// wait for it. Streams sleep in WaitNewer until the agent's Publish after a
// sample (20 open pages: 20 wake-ups a sample, not a poll each). While a
// stream is open, Publish builds the batch on the agent's sampling thread,
// so the streams' threads only write it: when whichever stream woke first
// built it, each of twenty threads in turn allocated the batch's thousands
// of small blocks and glibc kept a cache of them per thread (the figure:
// bench/README.md).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "common/mutex.h"
#include "common/result.h"
#include "store/lease_event_json.h"

namespace tarmac::web {

struct StreamBatch {
  int64_t sequence = 0;  // The sample's.
  std::string text;      // "event: status ..." and "event: leases ...".
  // Lease events with seq in (events_after, events_upto], as an `events`
  // event ("" when none). events_after is -1 when the agent keeps no lease
  // state.
  int64_t events_after = -1;
  int64_t events_upto = -1;
  std::string events_text;
};

class StreamFeed {
 public:
  struct Sources {
    std::function<int64_t()> sequence;  // The latest sample's sequence.
    // The `status` result as the web shows it (command lines left out).
    std::function<Result<nlohmann::json>()> status;
    // Appends the `status` result's JSON text as the web shows it, the same
    // text as status() dumped; false (nothing appended) when there is none.
    // Unset: status() is used.
    std::function<bool(std::string* out)> status_text;
    // {"leases": [...], "queue": [...]} as the web shows them.
    std::function<Result<nlohmann::json>()> leases;
    // Lease journal events with seq > `after`, at most `limit` (with
    // `newest`, the newest `limit`), oldest first; kUnavailable when the
    // agent keeps no lease state.
    std::function<Result<std::vector<store::LeaseEvent>>(int64_t after, int64_t limit, bool newest)> events;
  };
  explicit StreamFeed(Sources sources) : sources_(std::move(sources)) {}

  // The batch of the latest sample (built now when it is newer than the
  // last one built).
  std::shared_ptr<const StreamBatch> Latest() EXCLUDES(mu_);
  // The latest batch once its sample is newer than `sequence`, or null
  // after `timeout` (or when Wake is called) without one.
  std::shared_ptr<const StreamBatch> WaitNewer(int64_t sequence, std::chrono::milliseconds timeout)
      EXCLUDES(mu_, wait_mu_);
  // A new sample was taken (the agent calls it after each): waiting streams
  // wake. Cheap; never builds.
  void Notify() EXCLUDES(wait_mu_);
  // A new sample was taken: its batch is built now, on the caller's thread,
  // when a stream is open (Open), then the streams wake (Notify).
  void Publish() EXCLUDES(mu_, wait_mu_);
  // A stream's place while it is open (the last copy's end gives it back),
  // or null when `max` are open already, or `max_per_client` of `client`'s
  // (0: no such cap), so one client cannot take every place.
  std::shared_ptr<void> Open(int max, const std::string& client = "", int max_per_client = 0);
  int open_streams() const;

  // One server-sent event: "event: NAME\n[id: ID\n]data: JSON\n\n".
  static std::string Event(const char* name, const nlohmann::json& data, int64_t id = 0);
  // The same, appended to `out`.
  static void AppendEvent(std::string* out, const char* name, const nlohmann::json& data, int64_t id = 0);
  // The same with the data's JSON text appended by `append_data`; when it
  // returns false the event is left out (`out` as it was).
  static void AppendEventOf(std::string* out, const char* name, int64_t id,
                            const std::function<bool(std::string*)>& append_data);

 private:
  Sources sources_;
  Mutex mu_;  // Held while a batch is built.
  std::shared_ptr<const StreamBatch> latest_ GUARDED_BY(mu_);
  Mutex wait_mu_;
  std::condition_variable_any sampled_;
  int64_t notified_ GUARDED_BY(wait_mu_) = 0;  // Notify calls so far.
  // Streams open, in all and by client; shared with their places, which
  // may outlive the feed.
  struct Places {
    mutable Mutex mu;
    int open GUARDED_BY(mu) = 0;
    std::map<std::string, int> by_client GUARDED_BY(mu);
  };
  std::shared_ptr<Places> places_ = std::make_shared<Places>();
};

}  // namespace tarmac::web
