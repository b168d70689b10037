// SPDX-License-Identifier: Apache-2.0
//
// The name of every metric family tarmac exports (docs/metrics.md), spelled
// once: the exporter (src/metrics, node/sample_fields.h) writes them and
// `tarmac fleet` (src/fleet) reads them back from Prometheus by the same
// constants. scripts/check-deps fails on any of these names spelled
// elsewhere in src/. Constant data.
#pragma once

#include <array>

namespace tarmac::node::family {

inline constexpr const char* kBackfillBatches = "tarmac_backfill_batches";
inline constexpr const char* kBackfillCompletionTokensTotal = "tarmac_backfill_completion_tokens_total";
inline constexpr const char* kBackfillGpuSecondsTotal = "tarmac_backfill_gpu_seconds_total";
inline constexpr const char* kBackfillPreemptionsTotal = "tarmac_backfill_preemptions_total";
inline constexpr const char* kBackfillRequestsTotal = "tarmac_backfill_requests_total";
inline constexpr const char* kBuildInfo = "tarmac_build_info";
inline constexpr const char* kDoctorFinding = "tarmac_doctor_finding";
inline constexpr const char* kDriverUp = "tarmac_driver_up";
inline constexpr const char* kGpuDramActiveRatio = "tarmac_gpu_dram_active_ratio";
inline constexpr const char* kGpuEccErrorsTotal = "tarmac_gpu_ecc_errors_total";
inline constexpr const char* kGpuEnergyJoulesTotal = "tarmac_gpu_energy_joules_total";
inline constexpr const char* kGpuGraphicsEngineActiveRatio = "tarmac_gpu_graphics_engine_active_ratio";
inline constexpr const char* kGpuHealth = "tarmac_gpu_health";
inline constexpr const char* kGpuHeldIdle = "tarmac_gpu_held_idle";
inline constexpr const char* kGpuHeldIdleForSeconds = "tarmac_gpu_held_idle_for_seconds";
inline constexpr const char* kGpuHeldIdleSecondsTotal = "tarmac_gpu_held_idle_seconds_total";
inline constexpr const char* kGpuIdle = "tarmac_gpu_idle";
inline constexpr const char* kGpuIdleCostTotal = "tarmac_gpu_idle_cost_total";
inline constexpr const char* kGpuIdleForCost = "tarmac_gpu_idle_for_cost";
inline constexpr const char* kGpuIdleForSeconds = "tarmac_gpu_idle_for_seconds";
inline constexpr const char* kGpuIdleSecondsTotal = "tarmac_gpu_idle_seconds_total";
inline constexpr const char* kGpuInfo = "tarmac_gpu_info";
inline constexpr const char* kGpuJobSecondsTotal = "tarmac_gpu_job_seconds_total";
inline constexpr const char* kGpuLease = "tarmac_gpu_lease";
inline constexpr const char* kGpuLoan = "tarmac_gpu_loan";
inline constexpr const char* kGpuLeaseSecondsTotal = "tarmac_gpu_lease_seconds_total";
inline constexpr const char* kGpuLost = "tarmac_gpu_lost";
inline constexpr const char* kGpuMemoryClockHertz = "tarmac_gpu_memory_clock_hertz";
inline constexpr const char* kGpuMemoryFreeBytes = "tarmac_gpu_memory_free_bytes";
inline constexpr const char* kGpuMemoryTotalBytes = "tarmac_gpu_memory_total_bytes";
inline constexpr const char* kGpuMemoryUsedBytes = "tarmac_gpu_memory_used_bytes";
inline constexpr const char* kGpuMemoryUtilizationRatio = "tarmac_gpu_memory_utilization_ratio";
inline constexpr const char* kGpuPcieLinkGeneration = "tarmac_gpu_pcie_link_generation";
inline constexpr const char* kGpuPcieLinkGenerationMax = "tarmac_gpu_pcie_link_generation_max";
inline constexpr const char* kGpuPcieLinkWidth = "tarmac_gpu_pcie_link_width";
inline constexpr const char* kGpuPcieLinkWidthMax = "tarmac_gpu_pcie_link_width_max";
inline constexpr const char* kGpuPodAllocated = "tarmac_gpu_pod_allocated";
inline constexpr const char* kGpuPowerLimitWatts = "tarmac_gpu_power_limit_watts";
inline constexpr const char* kGpuPowerWatts = "tarmac_gpu_power_watts";
inline constexpr const char* kGpuRemappedRowsFailed = "tarmac_gpu_remapped_rows_failed";
inline constexpr const char* kGpuRemappedRowsPending = "tarmac_gpu_remapped_rows_pending";
inline constexpr const char* kGpuRemappedRowsTotal = "tarmac_gpu_remapped_rows_total";
inline constexpr const char* kGpuSmClockHertz = "tarmac_gpu_sm_clock_hertz";
inline constexpr const char* kGpuStateSecondsTotal = "tarmac_gpu_state_seconds_total";
inline constexpr const char* kGpuTemperatureCelsius = "tarmac_gpu_temperature_celsius";
inline constexpr const char* kGpuTensorActiveRatio = "tarmac_gpu_tensor_active_ratio";
inline constexpr const char* kGpuThrottleSecondsTotal = "tarmac_gpu_throttle_seconds_total";
inline constexpr const char* kGpuThrottled = "tarmac_gpu_throttled";
inline constexpr const char* kGpuUnresponsive = "tarmac_gpu_unresponsive";
inline constexpr const char* kGpuUp = "tarmac_gpu_up";
inline constexpr const char* kGpuUserCostTotal = "tarmac_gpu_user_cost_total";
inline constexpr const char* kGpuUserSecondsTotal = "tarmac_gpu_user_seconds_total";
inline constexpr const char* kGpuUtilizationRatio = "tarmac_gpu_utilization_ratio";
inline constexpr const char* kGpuXidErrorsTotal = "tarmac_gpu_xid_errors_total";
inline constexpr const char* kKubePluginRegistered = "tarmac_kube_plugin_registered";
inline constexpr const char* kKubePodLeases = "tarmac_kube_pod_leases";
inline constexpr const char* kKubePodResourcesUp = "tarmac_kube_pod_resources_up";
inline constexpr const char* kLastSampleTimestampSeconds = "tarmac_last_sample_timestamp_seconds";
inline constexpr const char* kLeaseQueueLength = "tarmac_lease_queue_length";
inline constexpr const char* kLeases = "tarmac_leases";
inline constexpr const char* kMigEngineActiveRatio = "tarmac_mig_engine_active_ratio";
inline constexpr const char* kMigIdleHoldingProcesses = "tarmac_mig_idle_holding_processes";
inline constexpr const char* kMigInstanceInfo = "tarmac_mig_instance_info";
inline constexpr const char* kMigMemoryTotalBytes = "tarmac_mig_memory_total_bytes";
inline constexpr const char* kMigMemoryUsedBytes = "tarmac_mig_memory_used_bytes";
inline constexpr const char* kMigProcesses = "tarmac_mig_processes";
inline constexpr const char* kNodeGpus = "tarmac_node_gpus";
// tarmac_node_gpus's `which` label: the GPUs each of its series counts, in
// this order (all of them; the idle, held-idle and lost marks; the degraded
// and drain verdicts).
inline constexpr std::array<const char*, 6> kNodeGpusWhich = {"all",  "idle",     "held_idle",
                                                              "lost", "degraded", "drain"};
inline constexpr const char* kNodeGpusLeased = "tarmac_node_gpus_leased";
inline constexpr const char* kNodeIdleHolders = "tarmac_node_idle_holders";
inline constexpr const char* kNodeUtilizationRatio = "tarmac_node_utilization_ratio";
inline constexpr const char* kNvmlErrorsTotal = "tarmac_nvml_errors_total";
inline constexpr const char* kProcessGpuMemoryBytes = "tarmac_process_gpu_memory_bytes";
inline constexpr const char* kProcessSeriesDropped = "tarmac_process_series_dropped";
inline constexpr const char* kProcessSmUtilizationRatio = "tarmac_process_sm_utilization_ratio";
inline constexpr const char* kSampleDurationSeconds = "tarmac_sample_duration_seconds";
inline constexpr const char* kSamplerTicksTotal = "tarmac_sampler_ticks_total";
inline constexpr const char* kScrapeDurationSeconds = "tarmac_scrape_duration_seconds";

}  // namespace tarmac::node::family
