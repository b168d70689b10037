// SPDX-License-Identifier: Apache-2.0
#include "fleet/sample_fields.h"

#include <array>

namespace tarmac::fleet {
namespace {

using S = GpuSample;

constexpr std::array kFields = {
    // Fast tier.
    SampleField{"utilization_gpu_ratio", "ratio", Tier::kFast, &S::utilization_gpu_ratio,
                {{{"utilization.gpu"}}, "Share of the last sample period a kernel was running"}},
    SampleField{"utilization_memory_ratio", "ratio", Tier::kFast, &S::utilization_memory_ratio,
                {{{"utilization.memory"}}, "Share of the last sample period memory was read or written"}},
    SampleField{"memory_total_bytes", "bytes", Tier::kFast, &S::memory_total_bytes},
    SampleField{"memory_used_bytes", "bytes", Tier::kFast, &S::memory_used_bytes,
                {{{"memory.used"}}, "Memory allocated by active contexts"}},
    SampleField{"memory_reserved_bytes", "bytes", Tier::kFast, &S::memory_reserved_bytes,
                {{{"memory.reserved"}}, "Memory reserved by the driver and firmware"}},
    SampleField{"memory_free_bytes", "bytes", Tier::kFast, &S::memory_free_bytes,
                {{{"memory.free"}}, "Free memory"}},
    SampleField{"power_milliwatts", "milliwatts", Tier::kFast, &S::power_milliwatts,
                {{{"power.draw"}}, "Power draw of the board"}},
    SampleField{"power_limit_milliwatts", "milliwatts", Tier::kFast, &S::power_limit_milliwatts,
                {{{"enforced.power.limit", "power.limit"}}, "Power limit enforced after all limiters"}},
    SampleField{"energy_millijoules", "millijoules", Tier::kFast, &S::energy_millijoules},
    SampleField{"temperature_celsius", "celsius", Tier::kFast, &S::temperature_celsius,
                {{{"temperature.gpu"}}, "Core GPU temperature in degrees C"}},
    SampleField{"sm_clock_hertz", "hertz", Tier::kFast, &S::sm_clock_hertz,
                {{{"clocks.current.sm", "clocks.sm", "clocks.current.graphics", "clocks.gr"}}, "Current SM (graphics) clock"}},
    SampleField{"memory_clock_hertz", "hertz", Tier::kFast, &S::memory_clock_hertz,
                {{{"clocks.current.memory", "clocks.mem"}}, "Current memory clock"}},
    SampleField{"clock_event_reasons_mask", "NVML bit set", Tier::kFast, &S::clock_event_reasons,
                {{{"clocks_event_reasons.active", "clocks_throttle_reasons.active"}}, "Bit mask of active clock event reasons"}},
    SampleField{"performance_state", "P-state (0..15)", Tier::kFast, &S::performance_state,
                {{{"pstate"}}, "Performance state, P0 (max) to P12 (min)"}},
    SampleField{"encoder_utilization_ratio", "ratio", Tier::kFast, &S::encoder_utilization_ratio,
                {{{"utilization.encoder"}}, "Share of the last sample period the video encoder was busy"}},
    SampleField{"decoder_utilization_ratio", "ratio", Tier::kFast, &S::decoder_utilization_ratio,
                {{{"utilization.decoder"}}, "Share of the last sample period the video decoder was busy"}},
    SampleField{"graphics_engine_active_ratio", "ratio", Tier::kFast, &S::graphics_engine_active_ratio},
    SampleField{"tensor_active_ratio", "ratio", Tier::kFast, &S::tensor_active_ratio},
    SampleField{"dram_active_ratio", "ratio", Tier::kFast, &S::dram_active_ratio},
    // Slow tier.
    SampleField{"memory_temperature_celsius", "celsius", Tier::kSlow, &S::memory_temperature_celsius,
                {{{"temperature.memory"}}, "HBM memory temperature in degrees C"}},
    SampleField{"fan_speed_ratio", "ratio", Tier::kSlow, &S::fan_speed_ratio,
                {{{"fan.speed"}}, "Fan speed as a percentage of its maximum"}},
    SampleField{"pcie_generation", "generation", Tier::kSlow, &S::pcie_generation,
                {{{"pcie.link.gen.current", "pcie.link.gen.gpucurrent"}}, "Current PCIe link generation"}},
    SampleField{"pcie_width", "lanes", Tier::kSlow, &S::pcie_width,
                {{{"pcie.link.width.current"}}, "Current PCIe link width"}},
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
