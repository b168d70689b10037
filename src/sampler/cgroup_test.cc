// SPDX-License-Identifier: Apache-2.0
#include "sampler/cgroup.h"

#include <gtest/gtest.h>

namespace tarmac::sampler {
namespace {

const std::string kId = "3f1a5c0e9b2d4e6f8a7b9c0d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8d9e0f";

TEST(CgroupTest, DockerOnCgroupV2) {
  node::CgroupIdentity id = ParseCgroup("0::/system.slice/docker-" + kId + ".scope\n");
  EXPECT_EQ(id.container_id, kId);
  EXPECT_EQ(id.systemd_unit, "");
  EXPECT_EQ(id.pod_uid, "");
}

TEST(CgroupTest, KubernetesPodWithContainerd) {
  node::CgroupIdentity id = ParseCgroup(
      "0::/kubepods.slice/kubepods-burstable.slice/"
      "kubepods-burstable-pod1a2b3c4d_5e6f_7a8b_9c0d_1e2f3a4b5c6d.slice/cri-containerd-" +
      kId + ".scope\n");
  EXPECT_EQ(id.pod_uid, "1a2b3c4d-5e6f-7a8b-9c0d-1e2f3a4b5c6d");
  EXPECT_EQ(id.container_id, kId);
}

TEST(CgroupTest, KubernetesOnCgroupV1) {
  node::CgroupIdentity id = ParseCgroup(
      "12:memory:/kubepods/besteffort/pod1a2b3c4d-5e6f-7a8b-9c0d-1e2f3a4b5c6d/" + kId +
      "\n11:cpu,cpuacct:/kubepods/besteffort/pod1a2b3c4d-5e6f-7a8b-9c0d-1e2f3a4b5c6d/" + kId + "\n");
  EXPECT_EQ(id.pod_uid, "1a2b3c4d-5e6f-7a8b-9c0d-1e2f3a4b5c6d");
  EXPECT_EQ(id.container_id, kId);
}

TEST(CgroupTest, SystemdUnitsAndSlurmJobs) {
  EXPECT_EQ(ParseCgroup("0::/system.slice/train-llm.service\n").systemd_unit, "train-llm.service");
  EXPECT_EQ(ParseCgroup("0::/user.slice/user-1000.slice/user@1000.service/app.slice/jupyter.service\n")
                .systemd_unit,
            "jupyter.service");
  EXPECT_EQ(ParseCgroup("0::/user.slice/user-1000.slice/session-3.scope\n").systemd_unit, "session-3.scope");
  node::CgroupIdentity slurm = ParseCgroup("0::/system.slice/slurmstepd.scope/job_4242/step_0/user/task_0\n");
  EXPECT_EQ(slurm.slurm_job_id, "4242");
  node::CgroupIdentity v1 = ParseCgroup("4:devices:/slurm/uid_1000/job_17/step_batch\n");
  EXPECT_EQ(v1.slurm_job_id, "17");
}

TEST(CgroupTest, NothingToFindIsEmpty) {
  node::CgroupIdentity id = ParseCgroup("0::/\n");
  EXPECT_TRUE(id.container_id.empty() && id.pod_uid.empty() && id.systemd_unit.empty() &&
              id.slurm_job_id.empty());
  EXPECT_TRUE(ParseCgroup("garbage without colons").container_id.empty());
  EXPECT_TRUE(ParseCgroup("0::/pod-not-a-uid/docker-abc.scope").container_id.empty());
}

}  // namespace
}  // namespace tarmac::sampler
