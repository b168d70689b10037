// SPDX-License-Identifier: Apache-2.0
#include "store/sqlite_db.h"

#include <fmt/format.h>
#include <sqlite3.h>

namespace tarmac::store {

Result<std::unique_ptr<Db>> Db::Open(const std::string& path, Mode mode) {
  sqlite3* db = nullptr;
  int flags = mode == Mode::kReadOnly ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  flags |= SQLITE_OPEN_NOMUTEX;
  int rc = sqlite3_open_v2(path.c_str(), &db, flags, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    sqlite3_close(db);
    if (rc == SQLITE_CANTOPEN) return Status::NotFound(fmt::format("store: {}: cannot open: {}", path, msg));
    return Status::IOError(fmt::format("store: {}: {}", path, msg));
  }
  sqlite3_extended_result_codes(db, 1);
  sqlite3_busy_timeout(db, 5000);
  return std::unique_ptr<Db>(new Db(db, path));
}

Db::~Db() { sqlite3_close_v2(db_); }

Status Db::Error(int rc, std::string_view what) const {
  std::string msg = fmt::format("store: {}: {}: {}", path_, what, sqlite3_errmsg(db_));
  switch (rc & 0xff) {
    case SQLITE_FULL:
      return Status::ResourceExhausted(msg);
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return Status::Corruption(msg);
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return Status::Unavailable(msg);
    default:
      return Status::IOError(msg);
  }
}

Status Db::Exec(std::string_view sql) {
  std::string text(sql);
  int rc = sqlite3_exec(db_, text.c_str(), nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) return Error(rc, "exec");
  return Status::OK();
}

Result<Stmt> Db::Prepare(std::string_view sql) {
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v3(db_, sql.data(), static_cast<int>(sql.size()), SQLITE_PREPARE_PERSISTENT, &stmt,
                              nullptr);
  if (rc != SQLITE_OK) return Error(rc, "prepare");
  return Stmt(this, stmt);
}

Result<Stmt*> Db::Cached(const std::string& sql) {
  auto it = cache_.find(sql);
  if (it == cache_.end()) {
    Result<Stmt> stmt = Prepare(sql);
    if (!stmt.ok()) return stmt.status();
    it = cache_.emplace(sql, std::make_unique<Stmt>(std::move(stmt).value())).first;
  }
  it->second->Reset();
  return it->second.get();
}

Result<std::optional<int64_t>> Db::QueryInt(std::string_view sql) {
  Result<Stmt> stmt = Prepare(sql);
  if (!stmt.ok()) return stmt.status();
  Result<bool> row = stmt.value().Step();
  if (!row.ok()) return row.status();
  if (!row.value() || stmt.value().IsNull(0)) return std::optional<int64_t>();
  return std::optional<int64_t>(stmt.value().Int(0));
}

int64_t Db::last_insert_rowid() const { return sqlite3_last_insert_rowid(db_); }

void Db::ReleaseCache() { sqlite3_db_release_memory(db_); }

int64_t Db::CacheBytes() {
  int current = 0, highwater = 0;
  sqlite3_db_status(db_, SQLITE_DBSTATUS_CACHE_USED, &current, &highwater, 0);
  return current;
}

Stmt::Stmt(Stmt&& other) noexcept : db_(other.db_), stmt_(other.stmt_) { other.stmt_ = nullptr; }

Stmt& Stmt::operator=(Stmt&& other) noexcept {
  if (this != &other) {
    sqlite3_finalize(stmt_);
    db_ = other.db_;
    stmt_ = other.stmt_;
    other.stmt_ = nullptr;
  }
  return *this;
}

Stmt::~Stmt() { sqlite3_finalize(stmt_); }

Stmt& Stmt::Bind(int i, int64_t v) {
  sqlite3_bind_int64(stmt_, i, v);
  return *this;
}
Stmt& Stmt::Bind(int i, double v) {
  sqlite3_bind_double(stmt_, i, v);
  return *this;
}
Stmt& Stmt::Bind(int i, std::string_view text) {
  sqlite3_bind_text(stmt_, i, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
  return *this;
}
Stmt& Stmt::BindBlob(int i, std::string_view bytes) {
  sqlite3_bind_blob(stmt_, i, bytes.data(), static_cast<int>(bytes.size()), SQLITE_TRANSIENT);
  return *this;
}
Stmt& Stmt::BindNull(int i) {
  sqlite3_bind_null(stmt_, i);
  return *this;
}

Result<bool> Stmt::Step() {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  Status s = db_->Error(rc, "step");
  sqlite3_reset(stmt_);
  return s;
}

Status Stmt::Run() {
  Status s = ForEachRow([](const Stmt&) {});
  if (s.ok()) Reset();
  return s;
}

Status Stmt::ForEachRow(const std::function<void(const Stmt&)>& row) {
  for (;;) {
    Result<bool> more = Step();
    if (!more.ok()) return more.status();
    if (!more.value()) return Status::OK();
    row(*this);
  }
}

void Stmt::Reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

int64_t Stmt::Int(int col) const { return sqlite3_column_int64(stmt_, col); }
double Stmt::Double(int col) const { return sqlite3_column_double(stmt_, col); }
bool Stmt::IsNull(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
std::string Stmt::Text(int col) const {
  const unsigned char* p = sqlite3_column_text(stmt_, col);
  return p == nullptr ? std::string() : std::string(reinterpret_cast<const char*>(p));
}
std::string_view Stmt::Blob(int col) const {
  const void* p = sqlite3_column_blob(stmt_, col);
  int n = sqlite3_column_bytes(stmt_, col);
  return p == nullptr ? std::string_view()
                      : std::string_view(static_cast<const char*>(p), static_cast<size_t>(n));
}

Transaction::Transaction(Db* db) : db_(db) {
  begin_ = db_->Exec("BEGIN IMMEDIATE");
  is_open_ = begin_.ok();
}

Transaction::~Transaction() {
  if (is_open_) db_->Exec("ROLLBACK").IgnoreError();
}

Status Transaction::Commit() {
  if (!is_open_) return begin_;
  Status s = db_->Exec("COMMIT");
  if (s.ok()) is_open_ = false;
  return s;
}

}  // namespace tarmac::store
