// SPDX-License-Identifier: Apache-2.0
//
// The series of MIG instances. dcgm-exporter's families that exist per
// instance (framebuffer used and free, the profiling ratios) get one series
// per instance with its GPU's labels plus GPU_I_PROFILE and GPU_I_ID, and the
// instance's own pod, so MIG panels and rules written for dcgm-exporter work;
// tarmac's own tarmac_mig_* families carry the instance's MIG UUID. Pure;
// thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "metrics/exposition.h"
#include "metrics/render.h"
#include "node/node_view.h"

namespace tarmac::metrics {

// The instance's value for dcgm-exporter family `family`; empty for a
// family NVML does not give per instance (or a reading it lacks).
std::optional<double> DcgmMigValue(std::string_view family, const node::MigInstance& instance);

// `gpu_labels` (a GPU's dcgm-exporter labels without pod labels) with the
// instance's GPU_I_PROFILE, GPU_I_ID and pod labels (pod_uid too when
// `with_pod_uid`: AddPodLabels).
Labels DcgmMigLabels(Labels gpu_labels, const node::GpuView& gpu, const node::MigInstance& instance,
                     bool with_pod_uid);

// tarmac's per-instance families (documented in NativeFamilies()).
const std::vector<FamilyDoc>& MigNativeFamilies();
void CollectMigNative(const node::NodeView& node_view, const std::string& host, Exposition* out);

}  // namespace tarmac::metrics
