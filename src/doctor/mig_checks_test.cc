// SPDX-License-Identifier: Apache-2.0
//
// The doctor on MIG: instances empty for long (from the history), a MIG
// mode change pending a reset, and CUDA_VISIBLE_DEVICES naming an instance.
#include <gtest/gtest.h>

#include "doctor/checks.h"
#include "doctor/playbook.h"

namespace tarmac::doctor {
namespace {

node::GpuView SplitGpu() {
  node::GpuView g;
  g.info.index = 0;
  g.info.uuid = "GPU-0";
  g.info.name = "NVIDIA H100 80GB HBM3";
  g.info.is_mig_enabled = true;
  g.info.is_mig_pending = false;
  g.sample.has_mig_instances = true;
  for (int gi : {1, 2, 3}) {
    node::MigInstance m;
    m.uuid = "MIG-" + std::to_string(gi);
    m.gpu_instance_id = gi;
    m.profile = gi == 1 ? "3g.40gb" : "1g.10gb";
    g.sample.mig_instances.push_back(m);
  }
  node::ProcessView p;
  p.process.pid = 100;
  p.process.gpu_instance_id = 2;
  p.process.used_memory_bytes = int64_t{2} << 30;
  p.details.exists = true;
  p.details.user = "alice";
  g.processes.push_back(p);
  return g;
}

std::vector<Finding> FindingsOf(const DoctorInputs& in, const std::string& check) {
  return RunPlaybook(in, Selection{{check}, {}}).findings;
}

TEST(MigChecksTest, AnInstanceEmptyForADayIsFoundWithWhatToDo) {
  DoctorInputs in;
  in.node_view.gpus.push_back(SplitGpu());
  in.mig_empty_seconds = {{"MIG-1", 3 * 86400}, {"MIG-2", 5 * 86400}, {"MIG-3", 3600}};
  std::vector<Finding> found = FindingsOf(in, "mig_empty");
  // MIG-2 runs a process now; MIG-3 has been empty an hour only.
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].severity, Severity::kWarning);
  EXPECT_EQ(found[0].gpu, 0);
  EXPECT_EQ(found[0].summary, "gpu 0: MIG instance 3g.40gb (GPU instance 1) has run nothing for 3.0 days");
  EXPECT_NE(found[0].action.find("tarmac run --mig 3g.40gb"), std::string::npos) << found[0].action;
  // Without history nothing is judged, and the check says why it skipped.
  in.mig_empty_seconds.clear();
  DoctorResult r = RunPlaybook(in, Selection{{"mig_empty"}, {}});
  EXPECT_TRUE(r.findings.empty());
  ASSERT_EQ(r.skipped.size(), 1u);
  EXPECT_EQ(r.skipped[0].check, "mig_empty");
}

TEST(MigChecksTest, AModeChangePendingAResetIsFound) {
  DoctorInputs in;
  in.node_view.gpus.push_back(SplitGpu());
  EXPECT_TRUE(FindingsOf(in, "mig").empty());
  in.node_view.gpus[0].info.is_mig_pending = true;
  std::vector<Finding> found = FindingsOf(in, "mig");
  ASSERT_EQ(found.size(), 1u);
  EXPECT_NE(found[0].summary.find("MIG mode is on until the GPU is reset"), std::string::npos)
      << found[0].summary;
}

TEST(MigChecksTest, AProcessInTheInstanceItsCudaVisibleDevicesNamesIsWhereItBelongs) {
  DoctorInputs in;
  in.node_view.gpus.push_back(SplitGpu());
  ProcessFacts facts;
  facts.cuda_visible_devices = "MIG-2";
  facts.is_environment_readable = true;
  in.processes[100] = facts;
  EXPECT_TRUE(FindingsOf(in, "allocation").empty());
  in.processes[100].cuda_visible_devices = "MIG-3";  // Another instance of the same GPU.
  std::vector<Finding> found = FindingsOf(in, "allocation");
  ASSERT_EQ(found.size(), 1u);
  EXPECT_NE(found[0].summary.find("outside its CUDA_VISIBLE_DEVICES"), std::string::npos) << found[0].summary;
}

// Processes in two instances of one GPU share nothing; two in one instance do.
TEST(MigChecksTest, SharingIsPerInstance) {
  DoctorInputs in;
  in.node_view.gpus.push_back(SplitGpu());
  node::ProcessView other = in.node_view.gpus[0].processes[0];
  other.process.pid = 101;
  other.process.gpu_instance_id = 3;
  in.node_view.gpus[0].processes.push_back(other);
  EXPECT_TRUE(FindingsOf(in, "sharing").empty());
  in.node_view.gpus[0].processes[1].process.gpu_instance_id = 2;
  std::vector<Finding> found = FindingsOf(in, "sharing");
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].summary, "gpu 0 MIG 1g.10gb (GPU instance 2) is shared by 2 processes");
}

}  // namespace
}  // namespace tarmac::doctor
