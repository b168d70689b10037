// SPDX-License-Identifier: Apache-2.0
//
// A batch's results file as any bytes: opening it repairs a torn tail or
// refuses the file, never crashes; once open, the file holds whole lines
// only and an append is found again.
#include <fcntl.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "backfill/result_log.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = "/tmp/tarmac-result-log-fuzz-" + std::to_string(getpid()) + ".jsonl";
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) return 0;
  if (::write(fd, data, size) != static_cast<ssize_t>(size)) {
    ::close(fd);
    return 0;
  }
  ::close(fd);
  {
    auto log = tarmac::backfill::ResultLog::Open(path);
    if (log.ok()) {
      // A refused append is fine only for an id already there.
      tarmac::Status s = log.value()->Append({{"custom_id", "fuzz-appended-id"}});
      if (!s.ok() && !log.value()->IsDone("fuzz-appended-id")) __builtin_trap();
      auto again = tarmac::backfill::ResultLog::Open(path);
      if (!again.ok() || !again.value()->IsDone("fuzz-appended-id") || again.value()->repaired_bytes() != 0) {
        __builtin_trap();
      }
    }
  }
  ::unlink(path.c_str());
  return 0;
}
