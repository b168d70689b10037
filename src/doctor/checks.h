// SPDX-License-Identifier: Apache-2.0
//
// The doctor's checks: each a pure function of DoctorInputs that adds its
// findings (only what is worth saying: a check that finds nothing passed)
// and the parts it could not judge. Thresholds are in docs/doctor.md.
#pragma once

#include <string>
#include <vector>

#include "doctor/finding.h"
#include "doctor/inputs.h"

namespace tarmac::doctor {

struct CheckOutput {
  std::vector<Finding> findings;
  std::vector<Skipped> skipped;
  bool is_not_asked = false;  // A measurement not asked for: neither passed nor skipped.
};

using CheckFn = void (*)(const DoctorInputs& in, CheckOutput* out);

// Question 1: the GPUs (gpu_checks.cc).
void CheckDriver(const DoctorInputs& in, CheckOutput* out);
void CheckVisibility(const DoctorInputs& in, CheckOutput* out);
void CheckThrottle(const DoctorInputs& in, CheckOutput* out);
void CheckEcc(const DoctorInputs& in, CheckOutput* out);
void CheckXid(const DoctorInputs& in, CheckOutput* out);
void CheckPersistence(const DoctorInputs& in, CheckOutput* out);
void CheckSharing(const DoctorInputs& in, CheckOutput* out);
void CheckHeldIdle(const DoctorInputs& in, CheckOutput* out);

// Question 2: the data pipeline (pipeline_checks.cc).
void CheckCpu(const DoctorInputs& in, CheckOutput* out);
// A data-starved GPU, one finding per GPU from either sign: bursts of work
// separated by idle gaps in its recent utilization readings (at least
// kStarvedMinSpanSeconds of them), or a process on it that kept
// kCpuBoundRatio of a CPU busy (of its cgroup's CPU limit, when under one)
// over the window while the GPU was under kCpuBoundGpuRatio utilized.
inline constexpr double kStarvedMinSpanSeconds = 45;
inline constexpr double kCpuBoundRatio = 0.9;
inline constexpr double kCpuBoundGpuRatio = 0.5;
// /proc counts CPU time in USER_HZ ticks, 100 a second on every Linux ABI.
inline constexpr double kTicksPerSecond = 100;
void CheckStarved(const DoctorInputs& in, CheckOutput* out);
void CheckMemory(const DoctorInputs& in, CheckOutput* out);
void CheckStorage(const DoctorInputs& in, CheckOutput* out);
void CheckNetwork(const DoctorInputs& in, CheckOutput* out);

// Question 3: the interconnect (link_checks.cc).
void CheckPcie(const DoctorInputs& in, CheckOutput* out);
void CheckNvlink(const DoctorInputs& in, CheckOutput* out);
void CheckNuma(const DoctorInputs& in, CheckOutput* out);
void CheckTopology(const DoctorInputs& in, CheckOutput* out);

// Question 4: the scheduler (scheduler_checks.cc).
void CheckAllocation(const DoctorInputs& in, CheckOutput* out);
void CheckCpuLimits(const DoctorInputs& in, CheckOutput* out);
void CheckMig(const DoctorInputs& in, CheckOutput* out);
// MIG instances no process has run in for kMigEmptyWarnSeconds or more.
inline constexpr int64_t kMigEmptyWarnSeconds = 24 * 3600;
void CheckMigEmpty(const DoctorInputs& in, CheckOutput* out);
void CheckContainers(const DoctorInputs& in, CheckOutput* out);

// How the GPUs reach each other, in one line: the groups NVLink joins,
// the GPUs with no NVLink peer, and the GPUs on each NUMA node with its
// CPUs ("NVLink joins GPU 0-7; GPU 0-3 on NUMA node 0 (CPUs 0-55)").
std::string TopologySummary(const node::NodeView& node_view);

}  // namespace tarmac::doctor
