// SPDX-License-Identifier: Apache-2.0
//
// What the store keeps of one tick: per GPU the eight raw columns, per GPU
// process its SM use and memory, in integer units. Built from a NodeView
// (pure), and packed into one journal row per tick (EncodeTick/DecodeTick;
// DecodeTick is a parser of stored bytes with a fuzz target). Rows written
// before the backfill column or the charges existed still decode, with
// them empty.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "node/gpu_charge.h"
#include "node/node_view.h"

namespace tarmac::store {

// The raw GPU columns, in stored order.
enum GpuColumn : size_t {
  kUtilizationPercent = 0,
  kMemoryUtilizationPercent,
  kMemoryUsedMib,
  kPowerDeciwatts,
  kTemperatureCelsius,
  kSmClockMegahertz,
  kClockEventReasons,  // NVML bit set
  kHeldIdle,           // 1 when a process holds memory at 0 % SM on the GPU
  kBackfill,           // 1: a backfill lease holds the GPU; 2: one being preempted
  kGpuColumnCount,
};

// The raw process columns.
enum ProcessColumn : size_t {
  kProcessSmPercent = 0,
  kProcessMemoryMib,
  kProcessHeldIdle,  // 1 when holding memory at 0 % SM (node::IsIdleHolding)
  kProcessColumnCount,
};

using GpuValues = std::array<std::optional<int64_t>, kGpuColumnCount>;
using ProcessValues = std::array<std::optional<int64_t>, kProcessColumnCount>;

struct GpuTick {
  int64_t gpu_id = 0;
  GpuValues values;
};

struct ProcessTick {
  int64_t session_id = 0;
  ProcessValues values;
};

// One user's charge for a GPU's time in a tick (node/gpu_charge.h): the
// share, in thousandths, the tick's time of `gpu_id` counts for `user_id`
// (table users) held by a lease or processes, in the GPU's state.
struct ChargeTick {
  int64_t gpu_id = 0;
  int64_t user_id = 0;
  node::ChargeHolder held_by = node::ChargeHolder::kLease;
  node::ChargeState state = node::ChargeState::kBusy;
  int64_t share_permille = 0;  // 0..1000
  bool operator==(const ChargeTick&) const = default;
};

struct TickRecord {
  int64_t t = 0;  // Unix seconds.
  std::vector<GpuTick> gpus;
  std::vector<ProcessTick> processes;
  std::vector<ChargeTick> charges;  // Empty in rows written before charges were kept.
};

// The columns of one GPU view (all empty when the GPU is not readable).
GpuValues GpuValuesOf(const node::GpuView& gpu);
// The columns of one MIG instance of `gpu`, a device of its own in the
// store: utilization is its engine's activity (GPM), memory its own.
GpuValues MigValuesOf(const node::GpuView& gpu, const node::MigInstance& instance);
ProcessValues ProcessValuesOf(const node::ProcessView& process, const node::GpuView& gpu);

std::string EncodeTick(const TickRecord& tick);
Result<TickRecord> DecodeTick(int64_t t, std::string_view bytes);

}  // namespace tarmac::store
