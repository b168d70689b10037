// SPDX-License-Identifier: Apache-2.0
#include "backfill/memory_freed.h"

#include <fmt/format.h>

namespace tarmac::backfill {

Status WaitForMemoryFreed(const client::AgentClient& agent, Clock* clock, const std::string& uuid,
                          int64_t memory_before, std::chrono::system_clock::time_point since,
                          std::chrono::steady_clock::time_point until) {
  using std::chrono::milliseconds;
  // What the agent reads through NVML, in a reading taken after the engine
  // was told to stop (`since`: a reading from then on shows its memory
  // until it is gone, so one that shows it free is not stale): the memory
  // back where it was at the grant (within 256 MiB: the driver's own)
  // before the GPU is let go. The reading at the grant is sound: the lease
  // before on this GPU let it go only once such a reading showed it free.
  constexpr int64_t kSlack = int64_t{256} << 20;
  for (;;) {
    Result<node::NodeView> view = agent.FetchStatus();
    // No agent listens (its socket is gone): no lease is left to hand back.
    if (!view.ok() && view.status().code() == StatusCode::kFailedPrecondition) return Status::OK();
    if (view.ok() && view.value().taken_at >= since) {
      for (const node::GpuView& g : view.value().gpus) {
        if (g.info.uuid != uuid || !g.sample.memory_used_bytes) continue;
        if (*g.sample.memory_used_bytes <= memory_before + kSlack) return Status::OK();
      }
    }
    if (clock->SteadyNow() >= until)
      return Status::DeadlineExceeded(
          fmt::format("GPU {}: memory still in use after the engine stopped", uuid));
    // The agent reads the GPU as soon as the engine's processes are gone:
    // looked at every millisecond at first (a real job may wait on this
    // GPU), every 5 ms once the memory takes longer.
    bool is_early = clock->WallNow() < since + milliseconds(100);
    clock->SleepUntil(clock->SteadyNow() + milliseconds(is_early ? 1 : 5), {});
  }
}

}  // namespace tarmac::backfill
