// SPDX-License-Identifier: Apache-2.0
//
// MakeBackend picks and constructs the GPU backend named on the command line
// or in the config. No registration magic: one explicit switch.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "common/clock.h"
#include "common/environment.h"
#include "common/log.h"
#include "common/result.h"
#include "gpu/gpu_backend.h"
#include "sim/world.h"

namespace tarmac::gpu {

enum class BackendKind { kAuto, kNvml, kSim };

// Parses "auto", "nvml", "sim".
bool ParseBackendKind(std::string_view text, BackendKind* kind);
// "auto", "nvml" or "sim".
const char* BackendKindName(BackendKind kind);

struct BackendOptions {
  BackendKind kind = BackendKind::kAuto;
  std::string nvml_library;  // --nvml-library; empty: env or defaults.
  sim::WorldOptions sim;     // --scenario, --sim-dir.

  bool operator==(const BackendOptions&) const = default;
};

// Constructs and opens the backend. kAuto means NVML when the library loads
// (a missing library is then reported with every file tried, never a silent
// switch to simulation). Returns the opened backend and its GPUs.
struct OpenedBackend {
  std::unique_ptr<GpuBackend> backend;
  std::vector<node::GpuInfo> gpus;
};
Result<OpenedBackend> OpenBackend(const BackendOptions& options, Clock* clock, Logger* logger);

// What can never open, said before trying: the sim backend without a
// scenario (kInvalidArgument, naming --scenario and TARMAC_SIM_SCENARIO).
// A missing driver is not this: it may load later.
Status CheckBackendOptions(const BackendOptions& options);

// The environment a simulated world's programs need to see the same world
// as this backend (TARMAC_SIM_SCENARIO, an absolute path, and
// TARMAC_SIM_DIR, resolved as the world resolves it, so a child running as
// another user does not fall back to its own default folder). Empty unless
// `options` is the sim backend with a scenario. What the agent hands to the
// programs it starts (batch runners, and through them engines).
EnvironmentChanges WorldEnvironment(const BackendOptions& options);

}  // namespace tarmac::gpu
