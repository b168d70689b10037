// SPDX-License-Identifier: Apache-2.0
#include "store/tick_record.h"

#include <cmath>

#include "node/gpu_marks.h"
#include "store/codec.h"

namespace tarmac::store {
namespace {

constexpr int64_t kMib = int64_t{1} << 20;
constexpr uint64_t kMaxCount = 100000;
// A row's first integer: the GPU count in the first format (no backfill
// column), else a marker of the format: the backfill column; then the
// charges after the processes (the current one).
constexpr uint64_t kFormatWithBackfill = kMaxCount + 2;
constexpr uint64_t kFormatWithCharges = kMaxCount + 3;
constexpr uint64_t kChargeCodes = 6;  // held_by * 3 + state

std::optional<int64_t> Percent(std::optional<double> ratio) {
  if (!ratio) return std::nullopt;
  return std::llround(*ratio * 100.0);
}

std::optional<int64_t> Mib(std::optional<int64_t> bytes) {
  if (!bytes) return std::nullopt;
  return (*bytes + kMib / 2) / kMib;
}

template <size_t N>
void PutValues(const std::array<std::optional<int64_t>, N>& values, std::string* out) {
  for (const std::optional<int64_t>& v : values) PutVarint(v ? ZigZag(*v) + 1 : 0, out);
}

// Reads the first `count` of `values` (the rest stay empty).
template <size_t N>
bool ReadValues(VarintReader* r, size_t count, std::array<std::optional<int64_t>, N>* values) {
  for (size_t i = 0; i < count && i < N; ++i) {
    std::optional<int64_t>& v = (*values)[i];
    uint64_t x = 0;
    if (!r->Next(&x)) return false;
    v = x == 0 ? std::nullopt : std::optional<int64_t>(UnZigZag(x - 1));
  }
  return true;
}

int64_t BackfillValue(const node::GpuView& gpu) {
  if (!gpu.lease || !gpu.lease->is_backfill()) return 0;
  return gpu.lease->is_revoking ? 2 : 1;
}

}  // namespace

GpuValues GpuValuesOf(const node::GpuView& gpu) {
  GpuValues v;
  const node::GpuSample& s = gpu.sample;
  if (s.health != node::GpuHealth::kOk) {
    v[kBackfill] = BackfillValue(gpu);  // Lease time counts whether or not the GPU was read.
    return v;
  }
  v[kUtilizationPercent] = Percent(s.utilization_gpu_ratio);
  v[kMemoryUtilizationPercent] = Percent(s.utilization_memory_ratio);
  v[kMemoryUsedMib] = Mib(s.memory_used_bytes);
  if (s.power_milliwatts) v[kPowerDeciwatts] = (*s.power_milliwatts + 50) / 100;
  if (s.temperature_celsius) v[kTemperatureCelsius] = std::llround(*s.temperature_celsius);
  if (s.sm_clock_hertz) v[kSmClockMegahertz] = *s.sm_clock_hertz / 1000000;
  if (s.clock_event_reasons) v[kClockEventReasons] = static_cast<int64_t>(*s.clock_event_reasons);
  v[kHeldIdle] = node::MarkGpu(gpu).idle_holding_pids.empty() ? 0 : 1;
  v[kBackfill] = BackfillValue(gpu);
  return v;
}

GpuValues MigValuesOf(const node::GpuView& gpu, const node::MigInstance& instance) {
  GpuValues v;
  v[kUtilizationPercent] = Percent(instance.graphics_engine_active_ratio);
  v[kMemoryUsedMib] = Mib(instance.memory_used_bytes);
  bool is_held_idle = false;
  for (const node::ProcessView& p : gpu.processes) {
    is_held_idle |= p.process.gpu_instance_id == instance.gpu_instance_id && node::IsIdleHolding(p, gpu);
  }
  v[kHeldIdle] = is_held_idle ? 1 : 0;
  auto lease = gpu.mig_leases.find(instance.uuid);
  v[kBackfill] = lease != gpu.mig_leases.end() && lease->second.is_backfill() ? 1 : 0;
  return v;
}

ProcessValues ProcessValuesOf(const node::ProcessView& process, const node::GpuView& gpu) {
  ProcessValues v;
  v[kProcessHeldIdle] = node::IsIdleHolding(process, gpu) ? 1 : 0;
  if (process.process.sm_utilization_ratio)
    v[kProcessSmPercent] = Percent(process.process.sm_utilization_ratio);
  v[kProcessMemoryMib] = Mib(process.process.used_memory_bytes);
  return v;
}

std::string EncodeTick(const TickRecord& tick) {
  std::string out;
  PutVarint(kFormatWithCharges, &out);
  PutVarint(tick.gpus.size(), &out);
  for (const GpuTick& g : tick.gpus) {
    PutVarint(static_cast<uint64_t>(g.gpu_id), &out);
    PutValues(g.values, &out);
  }
  PutVarint(tick.processes.size(), &out);
  for (const ProcessTick& p : tick.processes) {
    PutVarint(static_cast<uint64_t>(p.session_id), &out);
    PutValues(p.values, &out);
  }
  PutVarint(tick.charges.size(), &out);
  for (const ChargeTick& c : tick.charges) {
    PutVarint(static_cast<uint64_t>(c.gpu_id), &out);
    PutVarint(static_cast<uint64_t>(c.user_id), &out);
    PutVarint(static_cast<uint64_t>(c.held_by) * 3 + static_cast<uint64_t>(c.state), &out);
    PutVarint(static_cast<uint64_t>(c.share_permille), &out);
  }
  return out;
}

Result<TickRecord> DecodeTick(int64_t t, std::string_view bytes) {
  auto corrupt = [](const char* what) { return Status::Corruption("store: journal row", what); };
  VarintReader r(bytes);
  TickRecord tick;
  tick.t = t;
  uint64_t n = 0;
  if (!r.Next(&n)) return corrupt("bad GPU count");
  size_t gpu_columns = kGpuColumnCount - 1;  // The first format.
  const bool has_charges = n == kFormatWithCharges;
  if (n == kFormatWithBackfill || has_charges) {
    gpu_columns = kGpuColumnCount;
    if (!r.Next(&n)) return corrupt("bad GPU count");
  }
  if (n > kMaxCount) return corrupt("bad GPU count");
  for (uint64_t i = 0; i < n; ++i) {
    GpuTick g;
    uint64_t id = 0;
    if (!r.Next(&id) || id > INT64_MAX || !ReadValues(&r, gpu_columns, &g.values))
      return corrupt("truncated GPU");
    g.gpu_id = static_cast<int64_t>(id);
    tick.gpus.push_back(g);
  }
  if (!r.Next(&n) || n > kMaxCount) return corrupt("bad process count");
  for (uint64_t i = 0; i < n; ++i) {
    ProcessTick p;
    uint64_t id = 0;
    if (!r.Next(&id) || id > INT64_MAX || !ReadValues(&r, p.values.size(), &p.values)) {
      return corrupt("truncated process");
    }
    p.session_id = static_cast<int64_t>(id);
    tick.processes.push_back(p);
  }
  if (has_charges) {
    if (!r.Next(&n) || n > kMaxCount) return corrupt("bad charge count");
    for (uint64_t i = 0; i < n; ++i) {
      uint64_t gpu = 0, user = 0, code = 0, share = 0;
      if (!r.Next(&gpu) || !r.Next(&user) || !r.Next(&code) || !r.Next(&share))
        return corrupt("truncated charge");
      if (gpu > INT64_MAX || user > INT64_MAX || code >= kChargeCodes || share > 1000)
        return corrupt("bad charge");
      tick.charges.push_back(ChargeTick{
          static_cast<int64_t>(gpu), static_cast<int64_t>(user), static_cast<node::ChargeHolder>(code / 3),
          static_cast<node::ChargeState>(code % 3), static_cast<int64_t>(share)});
    }
  }
  if (!r.AtEnd()) return corrupt("trailing bytes");
  return tick;
}

}  // namespace tarmac::store
