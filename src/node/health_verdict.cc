// SPDX-License-Identifier: Apache-2.0
#include "node/health_verdict.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "common/enum_names.h"
#include "node/gpu_marks.h"
#include "nvidia/clock_event_reasons.h"
#include "nvidia/xid_catalog.h"

namespace tarmac::node {
namespace {

constexpr std::pair<Verdict, const char*> kVerdictNames[] = {
    {Verdict::kOk, "ok"}, {Verdict::kDegraded, "degraded"}, {Verdict::kDrain, "drain"}};

// The evidence that a GPU should be drained.
void DrainEvidence(const GpuView& gpu, HealthVerdict* verdict) {
  std::vector<std::string>* out = &verdict->reasons;
  const GpuSample& s = gpu.sample;
  if (gpu.drained) out->push_back(fmt::format("drained by {}: {}", gpu.drained->by, gpu.drained->reason));
  if (s.health != GpuHealth::kOk) {
    out->push_back(
        fmt::format("unreadable ({}{})", GpuHealthName(s.health), s.error.empty() ? "" : ": " + s.error));
  }
  if (s.ecc.volatile_uncorrected.value_or(0) > 0)
    out->push_back(
        fmt::format("uncorrected ECC errors since the last reset: {}", *s.ecc.volatile_uncorrected));
  if (s.remapped_rows && s.remapped_rows->has_failure) out->push_back("row remapping failed");
  if (s.remapped_rows && s.remapped_rows->is_pending) out->push_back("row remapping pending a reset");
  if (s.retired_pages && s.retired_pages->is_pending) out->push_back("pages pending retirement");
  std::vector<int64_t> critical;
  for (const auto& [xid, count] : gpu.xid_count_by_code) {
    if (count > 0 && !nvidia::IsApplicationXid(xid)) critical.push_back(xid);
  }
  if (critical.empty() && gpu.xid_count > 0 && gpu.last_xid && !nvidia::IsApplicationXid(gpu.last_xid->xid))
    critical.push_back(gpu.last_xid->xid);
  if (!critical.empty()) out->push_back(fmt::format("Xid {}", fmt::join(critical, ", ")));
  std::vector<int64_t> earlier;
  for (const auto& [xid, count] : gpu.earlier_xid_count_by_code) {
    if (count > 0 && !nvidia::IsApplicationXid(xid) &&
        std::find(critical.begin(), critical.end(), xid) == critical.end())
      earlier.push_back(xid);
  }
  if (!earlier.empty())
    out->push_back(fmt::format("Xid {} (logged before the agent restarted)", fmt::join(earlier, ", ")));
  verdict->has_xids = !critical.empty() || !earlier.empty();
}

// The evidence that it works, but below its best.
void DegradedEvidence(const GpuView& gpu, std::vector<std::string>* out) {
  const GpuSample& s = gpu.sample;
  constexpr uint64_t kHardwareSlowdown =
      nvidia::kReasonHwSlowdown | nvidia::kReasonHwThermalSlowdown | nvidia::kReasonHwPowerBrakeSlowdown;
  if (s.clock_event_reasons && (*s.clock_event_reasons & kHardwareSlowdown) != 0) {
    std::vector<std::string> names =
        nvidia::DecodeClockEventReasons(*s.clock_event_reasons & kHardwareSlowdown);
    out->push_back(fmt::format("hardware slowdown ({})", fmt::join(names, ", ")));
  }
  if (MarkGpu(gpu).is_pcie_degraded)
    out->push_back(
        fmt::format("PCIe x{} of x{}", s.pcie_width.value_or(0), gpu.info.pcie_width_max.value_or(0)));
  if (std::find(s.nvlink_active.begin(), s.nvlink_active.end(), false) != s.nvlink_active.end())
    out->push_back("an NVLink down");
}

}  // namespace

const char* VerdictName(Verdict verdict) { return EnumName(kVerdictNames, verdict); }

HealthVerdict JudgeGpu(const GpuView& gpu) {
  HealthVerdict v;
  DrainEvidence(gpu, &v);
  if (!v.reasons.empty()) {
    v.verdict = Verdict::kDrain;
    return v;
  }
  DegradedEvidence(gpu, &v.reasons);
  if (!v.reasons.empty()) v.verdict = Verdict::kDegraded;
  return v;
}

}  // namespace tarmac::node
