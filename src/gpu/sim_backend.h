// SPDX-License-Identifier: Apache-2.0
//
// SimBackend reads the simulated world (src/sim) directly. It reports exactly
// what NvmlBackend reports over the fake libnvidia-ml for the same world, so
// tests can compare the two field by field. Used for demos, tests and
// development without GPUs (`--backend sim`).
//
// Thread safety: as GpuBackend (one thread at a time).
#pragma once

#include <memory>

#include "common/clock.h"
#include "gpu/gpu_backend.h"
#include "sim/world.h"

namespace tarmac::gpu {

class SimBackend final : public GpuBackend {
 public:
  SimBackend(sim::WorldOptions options, Clock* clock);

  std::string_view name() const override { return "sim"; }
  Result<std::vector<node::GpuInfo>> Open() override;
  const node::SystemInfo& system_info() const override { return system_info_; }
  Result<node::GpuSample> Sample(int index, unsigned tiers) override;
  std::optional<double> RecentUtilization(int index, std::chrono::seconds window) override;
  Result<std::vector<node::GpuEvent>> WaitEvents(std::chrono::milliseconds timeout) override;

 private:
  // The tiers' readings of GPU `index` from the world's state `g`; GPM's
  // engine activity since the GPU's previous fast sample.
  void ReadFast(int index, const sim::GpuSpec& spec, const sim::GpuState& g, node::GpuSample* s);
  void ReadGpm(int index, const sim::GpuSpec& spec, node::GpuSample* s);
  void ReadSlow(const sim::GpuSpec& spec, const sim::GpuState& g, node::GpuSample* s);
  sim::WorldOptions options_;
  Clock* clock_;
  std::unique_ptr<sim::World> world_;
  node::SystemInfo system_info_;
  std::optional<std::chrono::system_clock::time_point> events_seen_until_;
  // Per GPU: when its previous fast sample was taken (GPM intervals). Each
  // element is touched only by that GPU's Sample calls.
  std::vector<std::optional<std::chrono::system_clock::time_point>> previous_fast_sample_;
};

}  // namespace tarmac::gpu
