// SPDX-License-Identifier: Apache-2.0
//
// Folding a minute of ticks: the packed raw blocks per GPU and per process
// session, and their rollups. Each sample stands for the time until the
// next one (at most `max_gap_seconds`; the last of the minute until the
// minute ends, with the same cap), so idle and held-idle seconds are
// time-weighted. A tick with no GPU and no process is a stop (a clean
// stop's mark, StoreWriter::Stop; or a node that had none): no sample
// stands for time after it, which nobody saw. Pure: no I/O, nothing
// shared.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <tuple>
#include <vector>

#include "store/codec.h"
#include "store/tick_record.h"

namespace tarmac::store {

struct GpuMinuteRollup {
  int64_t covered_seconds = 0;
  std::optional<int64_t> utilization_min_permille;
  std::optional<int64_t> utilization_mean_permille;
  std::optional<int64_t> utilization_max_permille;
  int64_t utilization_sum_permille_seconds = 0;
  std::optional<int64_t> memory_used_mean_mib;
  std::optional<int64_t> memory_used_max_mib;
  std::optional<int64_t> power_mean_deciwatts;
  int64_t power_sum_deciwatt_seconds = 0;
  std::optional<int64_t> temperature_max_celsius;
  int64_t energy_joules = 0;
  int64_t idle_seconds = 0;     // Read, and under the idle threshold.
  int64_t unknown_seconds = 0;  // Not read (lost, hung, unreadable): neither busy nor idle.
  int64_t held_idle_seconds = 0;
  int64_t backfill_seconds = 0;  // A backfill lease held the GPU (idle time put to work).
  int64_t throttle_thermal_seconds = 0;
  int64_t throttle_power_seconds = 0;
  int64_t throttle_other_seconds = 0;
};

struct ProcessMinuteRollup {
  int64_t seen_seconds = 0;
  int64_t busy_seconds = 0;
  int64_t held_idle_seconds = 0;
  int64_t memory_mib_seconds = 0;
  int64_t held_idle_memory_mib_seconds = 0;
  int64_t memory_max_mib = 0;
  int64_t last_seen = 0;
};

// A user's charge for one GPU's time (node/gpu_charge.h): gpu_id, user_id,
// held by, state.
using ChargeKey = std::tuple<int64_t, int64_t, node::ChargeHolder, node::ChargeState>;

struct FoldedMinute {
  int64_t minute = 0;
  // Milliseconds of GPU time charged (a share of each sample's time, the
  // same time its GPU's sample stands for).
  std::map<ChargeKey, int64_t> charge_milliseconds;
  std::map<int64_t, Block> gpu_blocks;  // By gpu_id.
  std::map<int64_t, GpuMinuteRollup> gpu_rollups;
  std::map<int64_t, Block> process_blocks;  // By session_id.
  std::map<int64_t, ProcessMinuteRollup> process_rollups;
};

// Folds a minute's ticks as they are read, one at a time: the minute's
// decoded ticks are never all held at once (they were the agent's largest
// moment each minute; bench/README.md "The soak").
class MinuteFolder {
 public:
  explicit MinuteFolder(int64_t minute) { folded_.minute = minute; }
  // REQUIRES: tick.t / 60 == minute, t increasing from one call to the next.
  void Add(const TickRecord& tick);
  int64_t last_t() const { return last_t_; }  // The last tick added's.
  // The blocks and their rollups; the folder is spent.
  FoldedMinute Finish(int64_t max_gap_seconds) &&;

 private:
  FoldedMinute folded_;
  std::vector<std::pair<int64_t, ChargeTick>> charges_;  // With their tick's time.
  std::vector<int64_t> stops_;                           // The stops' times, in order.
  int64_t last_t_ = -1;
};

// Rollup of one GPU's block (exposed for tests).
// `stops`: the stops' times, in order.
GpuMinuteRollup RollUpGpu(int64_t minute, const Block& block, int64_t max_gap_seconds,
                          const std::vector<int64_t>& stops = {});

}  // namespace tarmac::store
