// SPDX-License-Identifier: Apache-2.0
//
// The doctor's two measurements, run only when asked for (--storage PATH,
// --network HOST) and never with --quick: read throughput of a folder's
// file system, measured by tarmac itself (a test file of a bounded size,
// written, then read sequentially and at random with direct I/O), and
// network throughput to an iperf3 server (through the iperf3 program).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "common/result.h"

namespace tarmac::doctor {

struct StorageResult {
  std::string path;
  int64_t bytes = 0;
  bool is_direct = true;  // false: the file system refused O_DIRECT; the page cache was dropped instead.
  double sequential_read_mb_per_s = 0;
  double random_read_iops = 0;  // 4 KiB reads.
  double write_mb_per_s = 0;
};

// Writes a file of `bytes` (rounded to MiB) in `dir`, reads it back, and
// removes it. kInvalidArgument for a folder that is not one; kResourceExhausted
// when it does not fit; kIOError otherwise, each naming the path.
Result<StorageResult> MeasureStorage(const std::string& dir, int64_t bytes,
                                     std::chrono::milliseconds random_budget);

struct NetworkResult {
  std::string server;  // "host" or "host:port"
  double receive_gbit_per_s = 0;
  double send_gbit_per_s = 0;
  int64_t retransmits = 0;
};

// Runs `iperf3 -c HOST [-p PORT] -J -t SECONDS` against `server`
// ("host" or "host:port"). kNotFound when iperf3 is not installed;
// kUnavailable when the server does not answer (iperf3's own error).
Result<NetworkResult> MeasureNetwork(const std::string& server, int seconds);

// Reads iperf3's JSON report (a parser of its output; fuzzed).
Result<NetworkResult> ParseIperfJson(const std::string& text);

}  // namespace tarmac::doctor
