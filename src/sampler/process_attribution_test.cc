// SPDX-License-Identifier: Apache-2.0
#include "sampler/process_attribution.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>

#include "testutil/testutil.h"

namespace tarmac::sampler {
namespace {

TEST(ProcessAttributionTest, DescribesThisProcess) {
  ProcessAttributor attributor;
  const node::ProcessDetails& d = attributor.Lookup(getpid());
  EXPECT_TRUE(d.exists);
  EXPECT_EQ(d.uid, static_cast<int64_t>(geteuid()));
  EXPECT_EQ(d.parent_pid, getppid());
  EXPECT_NE(d.command.find("tarmac_tests"), std::string::npos);
  EXPECT_GT(d.start_ticks, 0);
  EXPECT_FALSE(d.user.empty());
}

TEST(ProcessAttributionTest, MissingProcessIsMarked) {
  ProcessAttributor attributor;
  const node::ProcessDetails& d = attributor.Lookup(999999999);
  EXPECT_FALSE(d.exists);
  EXPECT_EQ(d.user, "?");
}

// A fake /proc: names with spaces and parentheses, and PID reuse.
TEST(ProcessAttributionTest, ParsesOddNamesAndNoticesPidReuse) {
  testing::TempDir root;
  mkdir((root.path() + "/42").c_str(), 0755);
  auto write_stat = [&](const std::string& name, int64_t start) {
    std::ofstream(root.path() + "/42/stat")
        << "42 (" << name << ") S 7 42 42 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 " << start << " 0 0\n";
  };
  write_stat("my (odd) proc", 1000);
  std::ofstream(root.path() + "/42/cmdline") << std::string("python\0train.py\0--lr\0", 22);
  std::ofstream(root.path() + "/42/cgroup") << "0::/system.slice/slurmstepd.scope/job_99/step_0\n";
  ProcessAttributor attributor(root.path());
  const node::ProcessDetails& first = attributor.Lookup(42);
  EXPECT_TRUE(first.exists);
  EXPECT_EQ(first.name, "my (odd) proc");
  EXPECT_EQ(first.parent_pid, 7);
  EXPECT_EQ(first.start_ticks, 1000);
  EXPECT_EQ(first.command, "python train.py --lr");
  EXPECT_EQ(first.cgroup.slurm_job_id, "99");
}

// A process in a Kubernetes pod: the container id from the cgroup path, the
// names from the runtime's bundle.
TEST(ProcessAttributionTest, NamesThePodOfAContainerizedProcess) {
  testing::TempDir root;
  testing::TempDir bundles;
  std::string id(64, 'e');
  mkdir((root.path() + "/77").c_str(), 0755);
  std::ofstream(root.path() + "/77/stat")
      << "77 (python) S 1 77 77 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 500 0 0\n";
  std::ofstream(root.path() + "/77/cgroup")
      << "0::/kubepods.slice/kubepods-burstable.slice/"
         "kubepods-burstable-pod1b2c3d4e_0000_1111_2222_333344445555.slice/"
         "cri-containerd-"
      << id << ".scope\n";
  mkdir((bundles.path() + "/" + id).c_str(), 0755);
  bundles.Write(id + "/config.json", R"({"annotations":{"io.kubernetes.cri.sandbox-name":"trainer-0",
    "io.kubernetes.cri.sandbox-namespace":"ml","io.kubernetes.cri.container-name":"main"}})");
  ProcessAttributor attributor(root.path());
  attributor.SetRuntimeStateDirs({bundles.path()});
  const node::ProcessDetails& d = attributor.Lookup(77);
  EXPECT_EQ(d.cgroup.container_id, id);
  EXPECT_EQ(d.cgroup.pod_uid, "1b2c3d4e-0000-1111-2222-333344445555");
  EXPECT_EQ(d.kubernetes.pod, "trainer-0");
  EXPECT_EQ(d.kubernetes.pod_namespace, "ml");
  EXPECT_EQ(d.kubernetes.container, "main");
}

// A process that exits is noticed even though its details were cached: the
// kept /proc/<pid>/stat descriptor stops reading once the process is gone.
TEST(ProcessAttributionTest, ExitedProcessIsNotAnsweredFromTheCache) {
  pid_t child = fork();
  if (child == 0) {
    pause();
    _exit(0);
  }
  ProcessAttributor attributor;
  EXPECT_TRUE(attributor.Lookup(child).exists);
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  EXPECT_FALSE(attributor.Lookup(child).exists);
}

// The same over the per-tick check: one poll over every kept pidfd.
TEST(ProcessAttributionTest, BeginTickDropsProcessesThatExitedAndKeepsTheRest) {
  pid_t child = fork();
  if (child == 0) {
    pause();
    _exit(0);
  }
  ProcessAttributor attributor("/proc", /*use_pidfds=*/true);
  ASSERT_TRUE(attributor.Lookup(child).exists);
  ASSERT_TRUE(attributor.Lookup(getpid()).exists);
  attributor.BeginTick();
  EXPECT_TRUE(attributor.Lookup(child).exists);
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  attributor.BeginTick();
  EXPECT_FALSE(attributor.Lookup(child).exists);
  EXPECT_TRUE(attributor.Lookup(getpid()).exists);
}

// Over a test /proc (no pidfds), the kept stat descriptor is the check.
TEST(ProcessAttributionTest, FakeProcEntryGoneIsNoticedAtTheNextTick) {
  testing::TempDir root;
  mkdir((root.path() + "/43").c_str(), 0755);
  std::ofstream(root.path() + "/43/stat") << "43 (x) S 1 43 43 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5 0 0\n";
  ProcessAttributor attributor(root.path());
  ASSERT_TRUE(attributor.Lookup(43).exists);
  attributor.BeginTick();
  EXPECT_TRUE(attributor.Lookup(43).exists);
  std::ofstream(root.path() + "/43/stat", std::ios::trunc)
      .close();  // Reads as empty, as a dead process's does.
  attributor.BeginTick();
  EXPECT_FALSE(attributor.Lookup(43).exists);
}

TEST(ProcessAttributionTest, RetainForgetsProcessesNoLongerOnAGpu) {
  ProcessAttributor attributor;
  EXPECT_TRUE(attributor.Lookup(getpid()).exists);
  attributor.Retain({});
  EXPECT_TRUE(attributor.Lookup(getpid()).exists);  // Read afresh.
}

}  // namespace
}  // namespace tarmac::sampler
