// SPDX-License-Identifier: Apache-2.0
#include "metrics/mig_render.h"

#include "metrics/pod_labels.h"
#include "node/gpu_marks.h"
#include "node/metric_families.h"

namespace tarmac::metrics {
namespace {

std::optional<double> Mib(const std::optional<int64_t>& bytes) {
  if (!bytes) return std::nullopt;
  return static_cast<double>(*bytes) / 1048576;
}

Labels NativeMigLabels(const node::GpuView& g, const node::MigInstance& m, const std::string& host) {
  return {{"hostname", host},
          {"gpu", std::to_string(g.info.index)},
          {"uuid", g.info.uuid},
          {"mig_uuid", m.uuid},
          {"gpu_instance_id", std::to_string(m.gpu_instance_id)},
          {"profile", m.profile}};
}

}  // namespace

std::optional<double> DcgmMigValue(std::string_view family, const node::MigInstance& m) {
  if (family == "DCGM_FI_DEV_FB_USED") return Mib(m.memory_used_bytes);
  if (family == "DCGM_FI_DEV_FB_FREE") {
    if (!m.memory_total_bytes || !m.memory_used_bytes) return std::nullopt;
    return Mib(*m.memory_total_bytes - *m.memory_used_bytes);
  }
  if (family == "DCGM_FI_PROF_GR_ENGINE_ACTIVE") return m.graphics_engine_active_ratio;
  if (family == "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE") return m.tensor_active_ratio;
  if (family == "DCGM_FI_PROF_DRAM_ACTIVE") return m.dram_active_ratio;
  return std::nullopt;
}

Labels DcgmMigLabels(Labels l, const node::GpuView& g, const node::MigInstance& m, bool with_pod_uid) {
  l.emplace_back("GPU_I_PROFILE", m.profile);
  l.emplace_back("GPU_I_ID", std::to_string(m.gpu_instance_id));
  if (const node::KubernetesNames* pod = MigInstancePod(g, m))
    AddPodLabels(*pod, g, m.gpu_instance_id, with_pod_uid, &l);
  return l;
}

const std::vector<FamilyDoc>& MigNativeFamilies() {
  static const std::vector<FamilyDoc> kFamilies = {
      {node::family::kMigInstanceInfo, "gauge",
       "A MIG instance (its MIG UUID, GPU instance id and profile); always 1."},
      {node::family::kMigMemoryUsedBytes, "gauge", "Memory used in a MIG instance."},
      {node::family::kMigMemoryTotalBytes, "gauge", "Memory of a MIG instance."},
      {node::family::kMigEngineActiveRatio, "gauge",
       "Time a MIG instance's graphics/compute engine was active since the last sample (0-1, GPM)."},
      {node::family::kMigProcesses, "gauge", "Processes running in a MIG instance."},
      {node::family::kMigIdleHoldingProcesses, "gauge",
       "Processes holding memory in a MIG instance whose engine showed no activity."},
  };
  return kFamilies;
}

void CollectMigNative(const node::NodeView& node_view, const std::string& host, Exposition* out) {
  const std::vector<FamilyDoc>& docs = MigNativeFamilies();
  struct Row {
    const node::GpuView* g;
    const node::MigInstance* m;
    Labels labels;
  };
  std::vector<Row> rows;
  for (const node::GpuView& g : node_view.gpus) {
    if (g.sample.health != node::GpuHealth::kOk) continue;
    for (const node::MigInstance& m : g.sample.mig_instances)
      rows.push_back({&g, &m, NativeMigLabels(g, m, host)});
  }
  for (size_t f = 0; f < docs.size(); ++f) {
    out->Family(docs[f].name, docs[f].type, docs[f].help);
    for (const Row& r : rows) {
      std::optional<double> v;
      switch (f) {
        case 0:
          v = 1;
          break;
        case 1:
          if (r.m->memory_used_bytes) v = static_cast<double>(*r.m->memory_used_bytes);
          break;
        case 2:
          if (r.m->memory_total_bytes) v = static_cast<double>(*r.m->memory_total_bytes);
          break;
        case 3:
          v = r.m->graphics_engine_active_ratio;
          break;
        case 4:
        case 5: {
          int n = 0;
          for (const node::ProcessView& p : r.g->processes) {
            if (p.process.gpu_instance_id != r.m->gpu_instance_id) continue;
            n += f == 4 || node::IsIdleHolding(p, *r.g) ? 1 : 0;
          }
          v = n;
          break;
        }
        default:
          break;
      }
      if (v) out->Sample(docs[f].name, r.labels, *v);
    }
  }
}

}  // namespace tarmac::metrics
