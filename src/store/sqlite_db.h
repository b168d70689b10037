// SPDX-License-Identifier: Apache-2.0
//
// A thin RAII layer over the SQLite C API: a connection (Db) and prepared
// statements (Stmt) whose failures come back as Status, naming the database
// file and SQLite's own message. Nothing more: SQL stays visible at the
// call sites.
//
// Codes: SQLITE_FULL (disk full, file too large) -> kResourceExhausted;
// SQLITE_CORRUPT / SQLITE_NOTADB -> kCorruption; SQLITE_BUSY -> kUnavailable;
// anything else -> kIOError.
//
// Thread safety: a Db and its statements belong to one thread at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"

struct sqlite3;
struct sqlite3_stmt;

namespace tarmac::store {

class Stmt;

class Db {
 public:
  enum class Mode { kReadOnly, kReadWriteCreate };

  // Opens `path`. Does not read it yet: a file that is not a database is
  // found by the first statement (kCorruption).
  static Result<std::unique_ptr<Db>> Open(const std::string& path, Mode mode);
  ~Db();
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  // Runs one or more statements that return no rows.
  Status Exec(std::string_view sql);
  Result<Stmt> Prepare(std::string_view sql);
  // A statement prepared once per connection and kept, reset and ready.
  Result<Stmt*> Cached(const std::string& sql);
  // The value of the first column of the first row of `sql`, when any.
  Result<std::optional<int64_t>> QueryInt(std::string_view sql);

  int64_t last_insert_rowid() const;
  // Frees the pages this connection keeps cached between statements (SQLite
  // keeps every page it has read, up to cache_size, 2 MiB by default). A
  // connection that lives as long as the agent calls it after each write, so
  // that its memory does not follow the file's size.
  void ReleaseCache();
  // Heap bytes the connection's page cache holds now.
  int64_t CacheBytes();
  const std::string& path() const { return path_; }
  sqlite3* handle() { return db_; }

  // Status for SQLite result `rc` on this connection.
  Status Error(int rc, std::string_view what) const;

 private:
  Db(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  sqlite3* db_;
  std::string path_;
  std::map<std::string, std::unique_ptr<Stmt>> cache_;
};

class Stmt {
 public:
  Stmt(Stmt&& other) noexcept;
  Stmt& operator=(Stmt&& other) noexcept;
  ~Stmt();

  // Parameters are numbered from 1, as in SQLite.
  Stmt& Bind(int i, int64_t v);
  Stmt& Bind(int i, double v);
  Stmt& Bind(int i, std::string_view text);
  Stmt& BindBlob(int i, std::string_view bytes);
  Stmt& BindNull(int i);
  Stmt& Bind(int i, std::optional<int64_t> v) { return v ? Bind(i, *v) : BindNull(i); }

  // One step: true with a row, false when done.
  Result<bool> Step();
  // Steps to the end (statements without rows), then resets.
  Status Run();
  // Steps through every row, calling `row` for each; the first error.
  Status ForEachRow(const std::function<void(const Stmt&)>& row);
  void Reset();

  int64_t Int(int col) const;
  double Double(int col) const;
  bool IsNull(int col) const;
  std::string Text(int col) const;
  std::string_view Blob(int col) const;

 private:
  friend class Db;
  Stmt(Db* db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}
  Db* db_;
  sqlite3_stmt* stmt_;
};

// BEGIN IMMEDIATE ... COMMIT, rolled back unless Commit() is called.
class Transaction {
 public:
  explicit Transaction(Db* db);
  ~Transaction();
  const Status& begin_status() const { return begin_; }
  Status Commit();

 private:
  Db* db_;
  Status begin_;
  bool is_open_ = false;
};

}  // namespace tarmac::store
