// SPDX-License-Identifier: Apache-2.0
//
// The lease state file (<state_dir>/leases.db, SQLite): leases, queued
// requests, fair-share accounts and the next id, so that they survive an
// agent restart (even kill -9), and the lease event log: every grant,
// release, expiry, warning, signal and refusal with who asked and why.
//
// Records are JSON bodies keyed by (kind, id); one Apply() is one
// transaction, so a crash leaves either all of a change or none of it.
// WAL with synchronous=NORMAL: a committed change survives the agent being
// killed; the last changes before a power loss may not.
//
// Thread safety: one thread at a time (the agent serializes calls).
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/fs.h"
#include "common/result.h"
#include "store/lease_event_json.h"
#include "store/sqlite_db.h"

namespace tarmac::store {

// One change to the saved state: put (body set) or erase (body null).
struct StateChange {
  std::string kind;  // "lease", "queue", "share", "meta", "drain".
  int64_t id = 0;
  nlohmann::json body;
};

class LeaseState {
 public:
  // Opens or creates `path`. kCorruption for a file that is not a lease
  // state database; kIOError when it cannot be opened.
  static Result<std::unique_ptr<LeaseState>> Open(const std::string& path);

  // Every record of `kind`, by id.
  Result<std::vector<std::pair<int64_t, nlohmann::json>>> Load(const std::string& kind);

  // Applies `changes` and appends `events` in one transaction; fills each
  // event's seq.
  Status Apply(const std::vector<StateChange>& changes, std::vector<LeaseEvent>* events);

  // Events with seq > `after_seq`, oldest first, at most `limit`: the
  // oldest of them, or with `is_newest` the newest.
  Result<std::vector<LeaseEvent>> Events(int64_t after_seq, int64_t limit, bool is_newest = false);

  const std::string& path() const { return path_; }

  // Whether the file at path() is still the one opened: kNotFound when it
  // (or its folder) was deleted, kFailedPrecondition when another file took
  // its place.
  Status CheckFile() const;
  // Closes and opens path() again (creating it when missing): a store that
  // was read-only or deleted writes again once it can.
  Status Reopen();

 private:
  LeaseState(std::unique_ptr<Db> db, std::string path) : db_(std::move(db)), path_(std::move(path)) {}
  static Result<std::unique_ptr<Db>> OpenDb(const std::string& path);
  void NoteIdentity();
  std::unique_ptr<Db> db_;
  std::string path_;
  FileId file_;  // The file open at path_.
};

}  // namespace tarmac::store
