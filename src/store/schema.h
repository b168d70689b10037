// SPDX-License-Identifier: Apache-2.0
//
// The history database: its schema (docs/store.md), the migrations that
// bring an older file up to date, and opening it safely.
//
// The schema version is SQLite's `user_version`. A file from a newer tarmac
// is refused, never downgraded; a file that is not a database, or fails
// `PRAGMA quick_check`, is kCorruption (the agent moves it aside).
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "common/result.h"
#include "store/sqlite_db.h"

namespace tarmac::store {

inline constexpr int64_t kSchemaVersion = 5;

// Opens (creating if absent) and migrates the store at `path` for the
// agent's writer: WAL, synchronous=NORMAL (a killed process loses nothing
// committed; a power cut at most the last commits), incremental vacuum.
Result<std::unique_ptr<Db>> OpenForWriting(const std::string& path);

// PRAGMA quick_check: kCorruption naming the file and what was found.
Status CheckIntegrity(Db* db);

// Opens the store for the read commands. kNotFound when there is none.
Result<std::unique_ptr<Db>> OpenForReading(const std::string& path);

// Renames a corrupt `path` (and its -wal and -shm files) to
// "<path>.corrupt-<unix seconds>"; returns the new name.
Result<std::string> MoveAside(const std::string& path, std::chrono::system_clock::time_point now);

}  // namespace tarmac::store
