// SPDX-License-Identifier: Apache-2.0
#include "store/lease_state.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/fs.h"

namespace tarmac::store {

using nlohmann::json;

Result<std::unique_ptr<LeaseState>> LeaseState::Open(const std::string& path) {
  Result<std::unique_ptr<Db>> db = OpenDb(path);
  if (!db.ok()) return db.status();
  std::unique_ptr<LeaseState> state(new LeaseState(std::move(db).value(), path));
  state->NoteIdentity();
  return state;
}

namespace {

// Leases' tokens are in the file: only the agent may read it and its
// write-ahead log (docs/protocol.md: a token goes to its lease's owner and
// admins). SQLite creates the log and the shared memory with the file's
// own mode, so the file is made (or, from an earlier version, set) 0600
// first, and logs left 0644 by one are set too. The state folder is the
// agent's own; links are not followed.
Status KeepPrivate(const std::string& path) {
  for (const std::string& p : {path, path + "-wal", path + "-shm"}) {
    int flags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | (p == path ? O_CREAT : 0);
    int fd = ::open(p.c_str(), flags, 0600);
    if (fd < 0) {
      if (errno == ENOENT) continue;
      return Status::IOError(fmt::format("lease state {}: {}", p, std::strerror(errno)));
    }
    int changed = ::fchmod(fd, 0600);
    int saved_errno = errno;
    ::close(fd);
    if (changed != 0)
      return Status::IOError(fmt::format("lease state {}: chmod: {}", p, std::strerror(saved_errno)));
  }
  return Status::OK();
}

}  // namespace

Result<std::unique_ptr<Db>> LeaseState::OpenDb(const std::string& path) {
  if (Status s = KeepPrivate(path); !s.ok()) return s;
  Result<std::unique_ptr<Db>> db = Db::Open(path, Db::Mode::kReadWriteCreate);
  if (!db.ok()) return db.status();
  Status s = db.value()->Exec(
      "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA busy_timeout=2000;"
      "CREATE TABLE IF NOT EXISTS lease_state(kind TEXT NOT NULL, id INTEGER NOT NULL, body TEXT NOT NULL,"
      " PRIMARY KEY(kind, id)) WITHOUT ROWID;"
      "CREATE TABLE IF NOT EXISTS lease_events(seq INTEGER PRIMARY KEY AUTOINCREMENT, at_unix REAL NOT NULL,"
      " kind TEXT NOT NULL, lease_id INTEGER NOT NULL, uid INTEGER NOT NULL, user TEXT NOT NULL,"
      " actor_uid INTEGER NOT NULL, actor TEXT NOT NULL, gpus TEXT NOT NULL, detail TEXT NOT NULL);");
  if (!s.ok()) return s.WithContext(fmt::format("lease state {}", path));
  return db;
}

void LeaseState::NoteIdentity() { file_ = FileIdOf(path_).value_or(FileId{}); }

Status LeaseState::CheckFile() const {
  std::optional<FileId> now = FileIdOf(path_);
  if (!now) return Status::NotFound(fmt::format("lease state {} was deleted under the agent", path_));
  if (*now != file_) {
    return Status::FailedPrecondition(
        fmt::format("lease state {} was replaced by another file under the agent", path_));
  }
  return Status::OK();
}

Status LeaseState::Reopen() {
  db_.reset();
  Result<std::unique_ptr<Db>> db = OpenDb(path_);
  if (!db.ok()) return db.status();
  db_ = std::move(db).value();
  NoteIdentity();
  return Status::OK();
}

Result<std::vector<std::pair<int64_t, json>>> LeaseState::Load(const std::string& kind) {
  if (db_ == nullptr) return Status::Unavailable(fmt::format("lease state {} is not open", path_));
  Result<Stmt> st = db_->Prepare("SELECT id, body FROM lease_state WHERE kind = ?1 ORDER BY id");
  if (!st.ok()) return st.status();
  st.value().Bind(1, kind);
  std::vector<std::pair<int64_t, json>> rows;
  for (;;) {
    Result<bool> row = st.value().Step();
    if (!row.ok()) return row.status();
    if (!row.value()) break;
    json body = json::parse(st.value().Text(1), nullptr, false);
    if (body.is_discarded()) {
      return Status::Corruption(
          fmt::format("{}: {} {}: the saved record is not JSON", db_->path(), kind, st.value().Int(0)));
    }
    rows.emplace_back(st.value().Int(0), std::move(body));
  }
  return rows;
}

Status LeaseState::Apply(const std::vector<StateChange>& changes, std::vector<LeaseEvent>* events) {
  if (changes.empty() && (events == nullptr || events->empty())) return Status::OK();
  if (db_ == nullptr) return Status::Unavailable(fmt::format("lease state {} is not open", path_));
  Transaction tx(db_.get());
  if (!tx.begin_status().ok()) return tx.begin_status();
  for (const StateChange& c : changes) {
    Result<Stmt*> st =
        c.body.is_null()
            ? db_->Cached("DELETE FROM lease_state WHERE kind = ?1 AND id = ?2")
            : db_->Cached("INSERT OR REPLACE INTO lease_state(kind, id, body) VALUES (?1, ?2, ?3)");
    if (!st.ok()) return st.status();
    st.value()->Bind(1, c.kind).Bind(2, c.id);
    if (!c.body.is_null()) st.value()->Bind(3, c.body.dump(-1, ' ', false, json::error_handler_t::replace));
    if (Status s = st.value()->Run(); !s.ok()) return s;
  }
  if (events != nullptr) {
    for (LeaseEvent& e : *events) {
      Result<Stmt*> st = db_->Cached(
          "INSERT INTO lease_events(at_unix, kind, lease_id, uid, user, actor_uid, actor, gpus, detail)"
          " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)");
      if (!st.ok()) return st.status();
      std::string gpus = json(e.gpus).dump();
      st.value()->Bind(1, e.at_unix).Bind(2, e.kind).Bind(3, e.lease_id).Bind(4, e.uid).Bind(5, e.user);
      st.value()->Bind(6, e.actor_uid).Bind(7, e.actor).Bind(8, gpus).Bind(9, e.detail);
      if (Status s = st.value()->Run(); !s.ok()) return s;
      e.seq = db_->last_insert_rowid();
    }
  }
  return tx.Commit();
}

Result<std::vector<LeaseEvent>> LeaseState::Events(int64_t after_seq, int64_t limit, bool is_newest) {
  if (db_ == nullptr) return Status::Unavailable(fmt::format("lease state {} is not open", path_));
  Result<Stmt> st = db_->Prepare(
      is_newest
          ? "SELECT * FROM (SELECT seq, at_unix, kind, lease_id, uid, user, actor_uid, actor, gpus, detail"
            " FROM lease_events WHERE seq > ?1 ORDER BY seq DESC LIMIT ?2) ORDER BY seq"
          : "SELECT seq, at_unix, kind, lease_id, uid, user, actor_uid, actor, gpus, detail FROM lease_events"
            " WHERE seq > ?1 ORDER BY seq LIMIT ?2");
  if (!st.ok()) return st.status();
  st.value().Bind(1, after_seq).Bind(2, limit);
  std::vector<LeaseEvent> out;
  for (;;) {
    Result<bool> row = st.value().Step();
    if (!row.ok()) return row.status();
    if (!row.value()) break;
    const Stmt& r = st.value();
    LeaseEvent e;
    e.seq = r.Int(0);
    e.at_unix = r.Double(1);
    e.kind = r.Text(2);
    e.lease_id = r.Int(3);
    e.uid = r.Int(4);
    e.user = r.Text(5);
    e.actor_uid = r.Int(6);
    e.actor = r.Text(7);
    json gpus = json::parse(r.Text(8), nullptr, false);
    if (gpus.is_array()) {
      for (const json& g : gpus) {
        if (g.is_number_integer()) e.gpus.push_back(g.get<int>());
      }
    }
    e.detail = r.Text(9);
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace tarmac::store
