// SPDX-License-Identifier: Apache-2.0
#include "fleet/sample_fields.h"

#include <array>

namespace tarmac::fleet {
namespace {

using S = GpuSample;

constexpr std::array kFields = {
    // Fast tier.
    SampleField{"utilization_gpu_ratio", "ratio", Tier::kFast, &S::utilization_gpu_ratio},
    SampleField{"utilization_memory_ratio", "ratio", Tier::kFast, &S::utilization_memory_ratio},
    SampleField{"memory_total_bytes", "bytes", Tier::kFast, &S::memory_total_bytes},
    SampleField{"memory_used_bytes", "bytes", Tier::kFast, &S::memory_used_bytes},
    SampleField{"memory_reserved_bytes", "bytes", Tier::kFast, &S::memory_reserved_bytes},
    SampleField{"memory_free_bytes", "bytes", Tier::kFast, &S::memory_free_bytes},
    SampleField{"power_milliwatts", "milliwatts", Tier::kFast, &S::power_milliwatts},
    SampleField{"power_limit_milliwatts", "milliwatts", Tier::kFast, &S::power_limit_milliwatts},
    SampleField{"energy_millijoules", "millijoules", Tier::kFast, &S::energy_millijoules},
    SampleField{"temperature_celsius", "celsius", Tier::kFast, &S::temperature_celsius},
    SampleField{"sm_clock_hertz", "hertz", Tier::kFast, &S::sm_clock_hertz},
    SampleField{"memory_clock_hertz", "hertz", Tier::kFast, &S::memory_clock_hertz},
    SampleField{"clock_event_reasons_mask", "NVML bit set", Tier::kFast, &S::clock_event_reasons},
    SampleField{"performance_state", "P-state (0..15)", Tier::kFast, &S::performance_state},
    SampleField{"encoder_utilization_ratio", "ratio", Tier::kFast, &S::encoder_utilization_ratio},
    SampleField{"decoder_utilization_ratio", "ratio", Tier::kFast, &S::decoder_utilization_ratio},
    SampleField{"graphics_engine_active_ratio", "ratio", Tier::kFast, &S::graphics_engine_active_ratio},
    SampleField{"tensor_active_ratio", "ratio", Tier::kFast, &S::tensor_active_ratio},
    SampleField{"dram_active_ratio", "ratio", Tier::kFast, &S::dram_active_ratio},
    // Slow tier.
    SampleField{"memory_temperature_celsius", "celsius", Tier::kSlow, &S::memory_temperature_celsius},
    SampleField{"fan_speed_ratio", "ratio", Tier::kSlow, &S::fan_speed_ratio},
    SampleField{"pcie_generation", "generation", Tier::kSlow, &S::pcie_generation},
    SampleField{"pcie_width", "lanes", Tier::kSlow, &S::pcie_width},
    SampleField{"pcie_tx_bytes", "bytes", Tier::kSlow, &S::pcie_tx_bytes},
    SampleField{"pcie_rx_bytes", "bytes", Tier::kSlow, &S::pcie_rx_bytes},
    SampleField{"pcie_replays", "count", Tier::kSlow, &S::pcie_replays},
    SampleField{"nvlink_crc_errors", "count", Tier::kSlow, &S::nvlink_crc_errors},
    SampleField{"nvlink_replay_errors", "count", Tier::kSlow, &S::nvlink_replay_errors},
    SampleField{"nvlink_recovery_errors", "count", Tier::kSlow, &S::nvlink_recovery_errors},
    SampleField{"nvlink_bytes", "bytes", Tier::kSlow, &S::nvlink_bytes},
    SampleField{"vgpu_licensed", "bool", Tier::kSlow, &S::is_vgpu_licensed},
};

}  // namespace

std::span<const SampleField> SampleFields() { return kFields; }

void CarrySlowTier(const GpuSample& from, GpuSample* to) {
  for (const SampleField& f : kFields) {
    if (f.tier != Tier::kSlow) continue;
    std::visit([&](auto member) { to->*member = from.*member; }, f.member);
  }
  to->ecc = from.ecc;
  to->remapped_rows = from.remapped_rows;
  to->nvlink_active = from.nvlink_active;
  to->retired_pages = from.retired_pages;
}

}  // namespace tarmac::fleet
