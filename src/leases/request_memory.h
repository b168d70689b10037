// SPDX-License-Identifier: Apache-2.0
//
// What the lease service remembers of requests after they leave the book:
// the id each (uid, request key) was given, so that a client's retry is
// answered with what its first try made, and why each recent lease or
// request ended, so that lease.get and lease.release can say. Both are
// bounded (the oldest forgotten first). A value: the service copies it to
// take a change back whole (LeaseCore::Checkpoint, lease_core.h).
//
// Thread safety: none of its own; the lease service's lock guards it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>

namespace tarmac::leases {

class RequestMemory {
 public:
  // Recently ended leases and requests remembered.
  static constexpr size_t kMaxEnded = 4096;
  // Why a lease or request ended: the event's kind ("expired", "released",
  // ...; empty for a request that never became a lease) and its words.
  struct Ended {
    std::string kind;
    std::string why;
  };

  // The id the request with `key` from `uid` was given; nothing for an
  // empty key (no retries to recognize).
  void RememberKey(int64_t uid, const std::string& key, int64_t id);
  std::optional<int64_t> FindKey(int64_t uid, const std::string& key) const;
  void RememberEnded(int64_t id, std::string why, std::string kind = "");
  // Why `id` ended; null when it did not, or was forgotten.
  const Ended* FindEnded(int64_t id) const;

 private:
  std::map<std::pair<int64_t, std::string>, int64_t> keys_;  // (uid, request key) -> id.
  std::map<int64_t, Ended> ended_;
};

}  // namespace tarmac::leases
