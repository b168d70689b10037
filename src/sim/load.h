// SPDX-License-Identifier: Apache-2.0
//
// A Load is what one tarmac-simload process puts on the simulated GPUs: which
// GPUs, how much memory on each, and a utilization pattern. LoadRegistry
// stores loads as small JSON files in the world's directory, one per process,
// so the sim backend, the fake libnvidia-ml and simload agree without any
// shared memory or daemon.
//
// A load is active while its process lives: the registry checks the PID and
// the process start time in /proc (PID reuse), and a zombie counts as dead,
// as the CUDA driver frees a context when the process exits. A dead load
// keeps its file so the energy it used stays counted; it ended at the file's
// last heartbeat (mtime). A program starting on the world (ListLive) sets
// the files of the dead loads it finds aside in loads/ended (a rename keeps
// the mtime), so that it and the next ones read the loads that may live,
// not every load the world ever had: a CUDA context does not take longer
// to create for every process that ever ran on the machine. Only the
// folder's owner sets aside, relative to the folder's descriptor, never
// through a link; List() (the agent's NVML, as root) only reads.
//
// Thread safety: LoadRegistry is immutable after construction; List() may be
// called from many threads.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"

namespace tarmac::sim {

enum class LoadPattern { kSteady, kBursty, kIdle };

const char* LoadPatternName(LoadPattern pattern);
bool ParseLoadPattern(std::string_view text, LoadPattern* pattern);

struct Load {
  int64_t pid = 0;
  int64_t start_ticks = 0;  // /proc/<pid>/stat field 22.
  std::vector<int> gpus;    // Physical GPU indices.
  // The MIG instances it runs on (their UUIDs), on the GPUs of `gpus` in
  // MIG mode; on such a GPU a load uses only these.
  std::vector<std::string> mig_uuids;
  int64_t memory_bytes = 0;      // Per GPU (per instance under MIG).
  double utilization_ratio = 0;  // 0..1, the pattern's peak.
  double tensor_ratio = 0;       // 0..1: share of its busy time in tensor pipes.
  LoadPattern pattern = LoadPattern::kSteady;
  std::chrono::system_clock::time_point started_at;
  // Set when the process is gone: the time of its last heartbeat.
  std::optional<std::chrono::system_clock::time_point> ended_at;
  std::string command;  // For messages only.
};

// Encodes a load as one JSON object (ended_at only when a live process
// ended it: LoadRegistry::End).
std::string EncodeLoad(const Load& load);

// Decodes EncodeLoad's output. kCorruption naming `source` when malformed.
Result<Load> DecodeLoad(std::string_view text, std::string_view source);

// Start time of `pid` in clock ticks since boot, from /proc/<pid>/stat, or
// empty when the process does not exist or is a zombie.
std::optional<int64_t> ProcessStartTicks(int64_t pid);

class LoadRegistry {
 public:
  // `dir` is the world directory; loads live in dir/loads.
  explicit LoadRegistry(std::string dir);

  // Writes the file for `load` (atomically: temp file, then rename). Returns
  // the path written. A process that loads more than once names each load
  // with its own `serial`.
  Result<std::string> Register(const Load& load, int serial = 0) const;

  // Marks the load at `path` alive now (touches its mtime).
  Status Heartbeat(const std::string& path) const;

  // Ends `load` (registered at `path`) while its process lives on: a
  // program that frees its GPU memory without exiting (an inference server
  // unloading its model). The file keeps the load, ended now.
  Status End(const std::string& path, Load load, std::chrono::system_clock::time_point now) const;

  // Every load ever registered in this world: active ones with ended_at
  // empty, dead ones with ended_at set. Unreadable files are skipped.
  std::vector<Load> List() const;

  // The loads whose processes live and have not ended them: what memory a
  // program starting now finds taken, read without the loads set aside as
  // dead; sets aside those it finds dead (when the folder is this
  // process's own).
  std::vector<Load> ListLive() const;

  // The loads folder's change time in nanoseconds (0 when it cannot be
  // read): it changes when a load is registered or ended (each a rename
  // into it), not at a heartbeat.
  int64_t ChangedNanos() const;

 private:
  Status WriteLoad(const std::string& path, const Load& load) const;
  // The loads of `dir` by file name; the names of those whose process is
  // gone into `dead` (when not null).
  std::vector<std::pair<std::string, Load>> ListFolder(const std::string& dir,
                                                       std::vector<std::string>* dead) const;
  // Moves loads `names` into loads/ended: only when this process owns the
  // folder and its ended/ (mkdirat, openat with O_NOFOLLOW | O_DIRECTORY,
  // renameat: no path is resolved through a link).
  void SetAside(const std::vector<std::string>& names) const;
  static constexpr const char* kEndedFolder = "ended";
  std::string loads_dir_;
  std::string ended_dir_;
};

}  // namespace tarmac::sim
