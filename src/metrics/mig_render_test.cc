// SPDX-License-Identifier: Apache-2.0
//
// MIG instances on /metrics: dcgm-exporter's per-instance series with
// GPU_I_PROFILE and GPU_I_ID beside the parent's gpu and UUID (and the
// instance's own pod), tarmac's tarmac_mig_* families, and nothing per
// instance that NVML does not give per instance.
#include "metrics/mig_render.h"

#include <gtest/gtest.h>

#include "metrics/render.h"
#include "testutil/mig_views.h"

namespace tarmac::metrics {
namespace {

node::Snapshot SplitGpu() {
  node::Snapshot s;
  s.node_view.hostname = "node-1";
  s.node_view.system.driver_version = "580.65.06";
  node::GpuView g;
  g.info.index = 0;
  g.info.uuid = "GPU-0";
  g.info.name = "NVIDIA H100 80GB HBM3";
  g.info.pci_bus_id = "00000000:18:00.0";
  g.info.is_mig_enabled = true;
  g.sample.memory_used_bytes = int64_t{12} << 30;
  g.sample.has_mig_instances = true;
  g.sample.mig_instances = {testing::MigView(1, "3g.40gb", 0.75, 12), testing::MigView(2, "1g.10gb", 0.0)};
  // Two pods, one per instance: the GPU carries no pod labels, each instance its own.
  for (int gi : {1, 2}) {
    node::ProcessView p = testing::InMig(100 + gi, gi);
    p.details.kubernetes = {"pod-" + std::to_string(gi), "ml", "main"};
    g.processes.push_back(p);
  }
  s.node_view.gpus.push_back(g);
  return s;
}

TEST(MigRenderTest, InstancesGetDcgmSeriesWithGpuInstanceLabelsAndTheirOwnPod) {
  node::SamplerStats stats;
  std::string text = RenderMetrics(SplitGpu(), stats, {}, {});
  const std::string gpu_labels =
      "gpu=\"0\",UUID=\"GPU-0\",pci_bus_id=\"00000000:18:00.0\",device=\"nvidia0\",modelName=\"NVIDIA H100 "
      "80GB "
      "HBM3\",Hostname=\"node-1\",DCGM_FI_DRIVER_VERSION=\"580.65.06\"";
  EXPECT_NE(text.find("DCGM_FI_DEV_FB_USED{" + gpu_labels +
                      ",GPU_I_PROFILE=\"3g.40gb\",GPU_I_ID=\"1\",pod=\"pod-1\",namespace=\"ml\",container="
                      "\"main\"} 12288\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("DCGM_FI_DEV_FB_FREE{" + gpu_labels +
                      ",GPU_I_PROFILE=\"1g.10gb\",GPU_I_ID=\"2\",pod=\"pod-2\","
                      "namespace=\"ml\",container=\"main\"} 10240\n"),
            std::string::npos)
      << text;
  EXPECT_NE(
      text.find("DCGM_FI_PROF_GR_ENGINE_ACTIVE{" + gpu_labels + ",GPU_I_PROFILE=\"3g.40gb\",GPU_I_ID=\"1\""),
      std::string::npos);
  // The GPU's own series: no pod (two pods share it), no GPU_I labels.
  EXPECT_NE(text.find("DCGM_FI_DEV_FB_USED{" + gpu_labels + "} 12288\n"), std::string::npos) << text;
  // Utilization is not given under MIG: absent for the GPU and per instance.
  EXPECT_EQ(text.find("DCGM_FI_DEV_GPU_UTIL{"), std::string::npos);
  // tarmac's own, by MIG UUID.
  EXPECT_NE(
      text.find("tarmac_mig_instance_info{hostname=\"node-1\",gpu=\"0\",uuid=\"GPU-0\",mig_uuid=\"MIG-2\","
                "gpu_instance_id=\"2\",profile=\"1g.10gb\"} 1\n"),
      std::string::npos)
      << text;
  EXPECT_NE(
      text.find(
          "tarmac_mig_engine_active_ratio{hostname=\"node-1\",gpu=\"0\",uuid=\"GPU-0\",mig_uuid=\"MIG-1\","
          "gpu_instance_id=\"1\",profile=\"3g.40gb\"} 0.75\n"),
      std::string::npos);
  EXPECT_NE(text.find("tarmac_mig_processes{hostname=\"node-1\",gpu=\"0\",uuid=\"GPU-0\",mig_uuid=\"MIG-2\","
                      "gpu_instance_id=\"2\",profile=\"1g.10gb\"} 1\n"),
            std::string::npos);
  // Instance 2's process holds 1 GiB while its engine shows nothing: an idle holder.
  EXPECT_NE(
      text.find(
          "tarmac_mig_idle_holding_processes{hostname=\"node-1\",gpu=\"0\",uuid=\"GPU-0\",mig_uuid=\"MIG-2\","
          "gpu_instance_id=\"2\",profile=\"1g.10gb\"} 1\n"),
      std::string::npos);
}

TEST(MigRenderTest, AKubeletAllocationNamesTheInstancesPod) {
  node::Snapshot s = SplitGpu();
  s.node_view.gpus[0].processes.clear();
  s.node_view.gpus[0].mig_allocated_to["MIG-2"] = {"infer-0", "serve", "server"};
  std::string text = RenderMetrics(s, node::SamplerStats(), {}, {});
  EXPECT_NE(text.find("GPU_I_PROFILE=\"1g.10gb\",GPU_I_ID=\"2\",pod=\"infer-0\",namespace=\"serve\","
                      "container=\"server\"}"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("GPU_I_ID=\"1\",pod="), std::string::npos);
}

}  // namespace
}  // namespace tarmac::metrics
