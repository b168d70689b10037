// SPDX-License-Identifier: Apache-2.0
//
// One health verdict per GPU, from the evidence a reading carries (docs/
// health.md): what allocation obeys (sched/node_slots.h: no grant on a GPU
// to drain), what `pick` skips, what status shows. The rules and their
// sources:
//
//  - drain: the GPU cannot be read (lost, fallen off the bus, hung, any
//    other error); uncorrected ECC errors since the last reset (volatile);
//    row remapping pending (a reset is needed) or failed (replace it);
//    pages pending retirement (older generations); an Xid that NVIDIA's
//    Kubernetes device plugin marks unhealthy (every Xid but the
//    application errors 13, 31, 43, 45, 68; nvidia/xid_catalog.h).
//  - degraded: hardware slowdown (HW_SLOWDOWN, HW_THERMAL_SLOWDOWN,
//    HW_POWER_BRAKE_SLOWDOWN), a PCIe link below its width, an NVLink down.
//  - ok: none of those.
//
// Pure; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "node/node_view.h"

namespace tarmac::node {

enum class Verdict { kOk, kDegraded, kDrain };
// "ok", "degraded", "drain".
const char* VerdictName(Verdict verdict);

struct HealthVerdict {
  Verdict verdict = Verdict::kOk;
  std::vector<std::string> reasons;  // The evidence, one phrase each ("uncorrected ECC errors: 2").
  bool has_xids = false;             // Critical Xids are among the drain evidence.
};

HealthVerdict JudgeGpu(const GpuView& gpu);

}  // namespace tarmac::node
