// SPDX-License-Identifier: Apache-2.0
#include "fleet/sample_fields.h"

#include <array>

namespace tarmac::fleet {
namespace {

using S = GpuSample;

constexpr std::array kFields = {
    // Fast tier.
    SampleField{"utilization_gpu_ratio", "ratio", Tier::kFast, &S::utilization_gpu_ratio,
                {{{"utilization.gpu"}}, "Share of the last sample period a kernel was running"},
                {"tarmac_gpu_utilization_ratio", "gauge", "GPU utilization over the driver's last sample period (0-1)."},
                {"DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %).", 100.0}},
    SampleField{"utilization_memory_ratio", "ratio", Tier::kFast, &S::utilization_memory_ratio,
                {{{"utilization.memory"}}, "Share of the last sample period memory was read or written"},
                {"tarmac_gpu_memory_utilization_ratio", "gauge", "Memory controller utilization (0-1)."},
                {"DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %).", 100.0}},
    SampleField{"memory_total_bytes", "bytes", Tier::kFast, &S::memory_total_bytes},
    SampleField{"memory_used_bytes", "bytes", Tier::kFast, &S::memory_used_bytes,
                {{{"memory.used"}}, "Memory allocated by active contexts"},
                {"tarmac_gpu_memory_used_bytes", "gauge", "GPU memory in use, excluding the driver's reserve."},
                {"DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB).", 1.0 / 1048576}},
    SampleField{"memory_reserved_bytes", "bytes", Tier::kFast, &S::memory_reserved_bytes,
                {{{"memory.reserved"}}, "Memory reserved by the driver and firmware"},
                {},
                {"DCGM_FI_DEV_FB_RESERVED", "gauge", "Framebuffer memory reserved (in MiB).", 1.0 / 1048576}},
    SampleField{"memory_free_bytes", "bytes", Tier::kFast, &S::memory_free_bytes,
                {{{"memory.free"}}, "Free memory"},
                {"tarmac_gpu_memory_free_bytes", "gauge", "GPU memory free."},
                {"DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB).", 1.0 / 1048576}},
    SampleField{"power_milliwatts", "milliwatts", Tier::kFast, &S::power_milliwatts,
                {{{"power.draw"}}, "Power draw of the board"},
                {"tarmac_gpu_power_watts", "gauge", "Power draw.", 1e-3},
                {"DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W).", 1e-3}},
    SampleField{"power_limit_milliwatts", "milliwatts", Tier::kFast, &S::power_limit_milliwatts,
                {{{"enforced.power.limit", "power.limit"}}, "Power limit enforced after all limiters"},
                {"tarmac_gpu_power_limit_watts", "gauge", "Enforced power limit.", 1e-3}},
    SampleField{"energy_millijoules", "millijoules", Tier::kFast, &S::energy_millijoules,
                {},
                {"tarmac_gpu_energy_joules_total", "counter", "Energy used since the driver loaded.", 1e-3},
                {"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter", "Total energy consumption since boot (in mJ)."}},
    SampleField{"temperature_celsius", "celsius", Tier::kFast, &S::temperature_celsius,
                {{{"temperature.gpu"}}, "Core GPU temperature in degrees C"},
                {"tarmac_gpu_temperature_celsius", "gauge", "GPU temperature."},
                {"DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C)."}},
    SampleField{"sm_clock_hertz", "hertz", Tier::kFast, &S::sm_clock_hertz,
                {{{"clocks.current.sm", "clocks.sm", "clocks.current.graphics", "clocks.gr"}}, "Current SM (graphics) clock"},
                {"tarmac_gpu_sm_clock_hertz", "gauge", "SM clock."},
                {"DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz).", 1e-6}},
    SampleField{"memory_clock_hertz", "hertz", Tier::kFast, &S::memory_clock_hertz,
                {{{"clocks.current.memory", "clocks.mem"}}, "Current memory clock"},
                {"tarmac_gpu_memory_clock_hertz", "gauge", "Memory clock."},
                {"DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz).", 1e-6}},
    SampleField{"clock_event_reasons_mask", "NVML bit set", Tier::kFast, &S::clock_event_reasons,
                {{{"clocks_event_reasons.active", "clocks_throttle_reasons.active"}}, "Bit mask of active clock event reasons"}},
    SampleField{"performance_state", "P-state (0..15)", Tier::kFast, &S::performance_state,
                {{{"pstate"}}, "Performance state, P0 (max) to P12 (min)"}},
    SampleField{"encoder_utilization_ratio", "ratio", Tier::kFast, &S::encoder_utilization_ratio,
                {{{"utilization.encoder"}}, "Share of the last sample period the video encoder was busy"},
                {},
                {"DCGM_FI_DEV_ENC_UTIL", "gauge", "Encoder utilization (in %).", 100.0}},
    SampleField{"decoder_utilization_ratio", "ratio", Tier::kFast, &S::decoder_utilization_ratio,
                {{{"utilization.decoder"}}, "Share of the last sample period the video decoder was busy"},
                {},
                {"DCGM_FI_DEV_DEC_UTIL", "gauge", "Decoder utilization (in %).", 100.0}},
    SampleField{"graphics_engine_active_ratio", "ratio", Tier::kFast, &S::graphics_engine_active_ratio,
                {},
                {"tarmac_gpu_graphics_engine_active_ratio", "gauge", "Time the graphics/compute engine was active since the last sample (0-1, GPM)."},
                {"DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge", "Ratio of time the graphics engine is active."}},
    SampleField{"tensor_active_ratio", "ratio", Tier::kFast, &S::tensor_active_ratio,
                {},
                {"tarmac_gpu_tensor_active_ratio", "gauge", "Cycles the tensor (HMMA) pipes were active since the last sample (0-1, GPM)."},
                {"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge", "Ratio of cycles the tensor (HMMA) pipe is active."}},
    SampleField{"dram_active_ratio", "ratio", Tier::kFast, &S::dram_active_ratio,
                {},
                {"tarmac_gpu_dram_active_ratio", "gauge", "Cycles the memory interface was busy since the last sample (0-1, GPM)."},
                {"DCGM_FI_PROF_DRAM_ACTIVE", "gauge", "Ratio of cycles the device memory interface is active sending or receiving data."}},
    // Slow tier.
    SampleField{"memory_temperature_celsius", "celsius", Tier::kSlow, &S::memory_temperature_celsius,
                {{{"temperature.memory"}}, "HBM memory temperature in degrees C"},
                {},
                {"DCGM_FI_DEV_MEMORY_TEMP", "gauge", "Memory temperature (in C)."}},
    SampleField{"fan_speed_ratio", "ratio", Tier::kSlow, &S::fan_speed_ratio,
                {{{"fan.speed"}}, "Fan speed as a percentage of its maximum"}},
    SampleField{"pcie_generation", "generation", Tier::kSlow, &S::pcie_generation,
                {{{"pcie.link.gen.current", "pcie.link.gen.gpucurrent"}}, "Current PCIe link generation"},
                {"tarmac_gpu_pcie_link_generation", "gauge", "PCIe generation, now."}},
    SampleField{"pcie_width", "lanes", Tier::kSlow, &S::pcie_width,
                {{{"pcie.link.width.current"}}, "Current PCIe link width"},
                {"tarmac_gpu_pcie_link_width", "gauge", "PCIe link width in lanes, now."}},
    SampleField{"pcie_tx_bytes", "bytes", Tier::kSlow, &S::pcie_tx_bytes},
    SampleField{"pcie_rx_bytes", "bytes", Tier::kSlow, &S::pcie_rx_bytes},
    SampleField{"pcie_replays", "count", Tier::kSlow, &S::pcie_replays,
                {},
                {},
                {"DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "Total number of PCIe retries."}},
    SampleField{"nvlink_crc_errors", "count", Tier::kSlow, &S::nvlink_crc_errors},
    SampleField{"nvlink_replay_errors", "count", Tier::kSlow, &S::nvlink_replay_errors},
    SampleField{"nvlink_recovery_errors", "count", Tier::kSlow, &S::nvlink_recovery_errors},
    SampleField{"nvlink_bytes", "bytes", Tier::kSlow, &S::nvlink_bytes,
                {},
                {},
                {"DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "counter", "Total number of NVLink bandwidth counters for all lanes."}},
    SampleField{"vgpu_licensed", "bool", Tier::kSlow, &S::is_vgpu_licensed,
                {},
                {},
                {"DCGM_FI_DEV_VGPU_LICENSE_STATUS", "gauge", "vGPU License status"}},
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
  to->slow_taken_at = from.slow_taken_at;
}

}  // namespace tarmac::fleet
