// SPDX-License-Identifier: Apache-2.0
//
// MIG layouts changed while the world runs, as a root caller of the fake
// libnvidia-ml changes them (nvmlDeviceCreateGpuInstance,
// nvmlGpuInstanceDestroy): one line per change in the world directory's
// `mig-layouts` journal, which every process of the world (the agent's
// NVML, tarmac-simload, another NVML client) reads into mig_reconfigure
// faults, so that all see the same layout from the same instant.
//
// A line: "<timeline ms> <gpu> <instances>", the instances "-" (none) or
// "<profile>:<gpu instance id>:<generation>[:<memory start>]" joined by ",".
// The start (of 8 memory slices) is there for an instance made at a
// placement. An instance
// keeps its id and UUID across later changes, as on a real GPU. Pure but
// for the journal file; thread-safe.
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "common/status.h"
#include "sim/scenario.h"

namespace tarmac::sim {

// Appends GPU `gpu`'s whole new layout at timeline time `at` (one write,
// O_APPEND: concurrent writers never interleave a line).
Status AppendMigLayout(const std::string& dir, std::chrono::milliseconds at, int gpu,
                       const std::vector<MigInstanceSpec>& layout);

// The journal's changes as mig_reconfigure faults on `scenario`'s GPUs, in
// order; none when there is no journal. kInvalidArgument names the line of
// a malformed one.
Result<std::vector<Fault>> ReadMigLayouts(const std::string& dir, const Scenario& scenario);

// The same from the journal's `text`, `name` in messages.
Result<std::vector<Fault>> ParseMigLayouts(std::string_view text, const std::string& name,
                                           const Scenario& scenario);

// Its size in bytes (0 when absent): a change is a longer journal.
int64_t MigJournalSize(const std::string& dir);

}  // namespace tarmac::sim
