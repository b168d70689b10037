// SPDX-License-Identifier: Apache-2.0
//
// A batch's results file: append-only JSONL, one line per finished request,
// each naming its custom_id (OpenAI's Batch output format). What makes a
// preempted or killed batch lose no finished result and repeat none:
//
// - Open reads the file, cuts off a torn last line (no newline, or not
//   JSON: a writer killed mid-line), and learns which custom_ids are done.
// - Append writes one whole line with a single write() and fdatasync()
//   before it returns, and refuses a custom_id already in the file
//   (kFailedPrecondition), so no id is ever written twice. A write that fails
//   (a full disk) is cut back off the file and returned as an error
//   naming the file: the file holds whole lines only.
//
// Thread safety: one ResultLog per file, one thread at a time.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "common/fs.h"
#include "common/result.h"
#include "common/status.h"

namespace tarmac::backfill {

class ResultLog {
 public:
  // Opens (creating it when missing, with `mode`: the batch's input's
  // permission bits, so results are no more readable than the prompts) the
  // file at `path`. kInvalidArgument when it is not a regular file (a FIFO
  // or a device is never opened for writing).
  static Result<std::unique_ptr<ResultLog>> Open(const std::string& path, int mode = 0600);
  ~ResultLog();
  ResultLog(const ResultLog&) = delete;
  ResultLog& operator=(const ResultLog&) = delete;

  // Appends `line` (an object with a string "custom_id") durably.
  Status Append(const nlohmann::json& line);

  bool IsDone(const std::string& custom_id) const { return done_.count(custom_id) > 0; }
  size_t size() const { return done_.size(); }
  // Bytes cut off a torn last line at Open (0 when the file was whole).
  size_t repaired_bytes() const { return repaired_bytes_; }
  // Which file this is (device and inode): two spellings, a link or a hard
  // link of one file give the same id.
  FileId file_id() const { return file_id_; }

 private:
  ResultLog(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}

  std::string path_;
  int fd_ = -1;
  off_t size_ = 0;  // Bytes of whole lines.
  std::set<std::string> done_;
  size_t repaired_bytes_ = 0;
  FileId file_id_;
};

}  // namespace tarmac::backfill
