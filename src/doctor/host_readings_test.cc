// SPDX-License-Identifier: Apache-2.0
#include "doctor/host_readings.h"

#include <gtest/gtest.h>

#include "doctor/throughput.h"
#include "testutil/testutil.h"

namespace tarmac::doctor {
namespace {

TEST(HostReadingsTest, CpuTimesOverAWindowGiveBusyStealIowaitAndTheHottestCore) {
  std::vector<CpuTimes> before = ParseCpuTimes(
      "cpu  100 0 100 800 0 0 0 0 0 0\ncpu0 50 0 50 400 0 0 0 0\ncpu1 50 0 50 400 0 0 0 0\nintr 123\n");
  // Over the window: cpu0 fully busy, cpu1 idle with iowait; 10 % steal overall.
  std::vector<CpuTimes> after = ParseCpuTimes(
      "cpu  200 0 100 900 60 0 0 40 0 0\ncpu0 150 0 50 400 0 0 0 0\ncpu1 50 0 50 500 60 0 0 40\n");
  ASSERT_EQ(before.size(), 3u);
  std::optional<CpuWindow> w = CompareCpuTimes(before, after);
  ASSERT_TRUE(w);
  EXPECT_EQ(w->cpu_count, 2);
  EXPECT_NEAR(w->busy_ratio, 100.0 / 300, 1e-9);
  EXPECT_NEAR(w->iowait_ratio, 60.0 / 300, 1e-9);
  EXPECT_NEAR(w->steal_ratio, 40.0 / 300, 1e-9);
  EXPECT_EQ(w->hottest_cpu, 0);
  EXPECT_NEAR(w->hottest_busy_ratio, 1.0, 1e-9);
  EXPECT_EQ(w->saturated_cpus, 1);
  // No time passed, or nothing in common: no window.
  EXPECT_FALSE(CompareCpuTimes(before, before));
  EXPECT_FALSE(CompareCpuTimes(before, ParseCpuTimes("intr 1\n")));
}

TEST(HostReadingsTest, MalformedCpuLinesAreLeftOut) {
  EXPECT_TRUE(ParseCpuTimes("cpu x 1 2 3\ncpuZ 1 2 3 4\ncpu0 1 2\n").empty());
  EXPECT_EQ(ParseCpuTimes("cpu 1 2 3 4\n").size(), 1u);  // Old kernels: four fields.
}

TEST(HostReadingsTest, MemInfoFields) {
  MemInfo m = ParseMemInfo(
      "MemTotal:       65536000 kB\nMemFree: 1000 kB\nMemAvailable:    3276800 kB\nSwapTotal: 8000000 kB\n"
      "SwapFree: 2000000 kB\nHugePages_Total:      16\nHugePages_Free:        0\nHugepagesize:       2048 "
      "kB\n"
      "Broken line\nMemTotalx: -1 kB\n");
  EXPECT_EQ(m.total_kib, 65536000);
  EXPECT_EQ(m.available_kib, 3276800);
  EXPECT_EQ(m.swap_total_kib, 8000000);
  EXPECT_EQ(m.swap_free_kib, 2000000);
  EXPECT_EQ(m.hugepages_total, 16);
  EXPECT_EQ(m.hugepages_free, 0);
  EXPECT_EQ(m.hugepage_size_kib, 2048);
}

TEST(HostReadingsTest, XidLinesFromKmsgAndDmesg) {
  std::vector<KernelXid> x = ParseKernelXids(
      "6,1001,1234567890,-;NVRM: Xid (PCI:0000:18:00): 79, pid=1234, name=python, GPU has fallen off the "
      "bus.\n"
      "[  812.123456] NVRM: Xid (PCI:0000:2A:00): 48, pid='<unknown>', name=<unknown>, An uncorrectable "
      "double bit "
      "error\n"
      "4,1002,1234567999,-;nvidia-modeset: something else\n"
      "NVRM: Xid (PCI:0000:3b:00): 13, Graphics SM Warp Exception on (GPC 0, TPC 1)\n"
      "NVRM: Xid (PCI:0000:3b:00) oops\n");
  ASSERT_EQ(x.size(), 3u);
  EXPECT_EQ(x[0].pci, "0000:18:00");
  EXPECT_EQ(x[0].xid, 79);
  EXPECT_NEAR(*x[0].seconds_since_boot, 1234.56789, 1e-6);
  EXPECT_EQ(x[0].line.rfind("NVRM: Xid", 0), 0u);
  EXPECT_EQ(x[1].pci, "0000:2a:00");
  EXPECT_EQ(x[1].xid, 48);
  EXPECT_NEAR(*x[1].seconds_since_boot, 812.123456, 1e-6);
  EXPECT_EQ(x[2].xid, 13);
  EXPECT_FALSE(x[2].seconds_since_boot);
}

TEST(HostReadingsTest, PciAddressesOfNvmlSysfsAndTheKernelLogCompare) {
  EXPECT_EQ(NormalizePciAddress("00000000:18:00.0"), "0000:18:00.0");
  EXPECT_EQ(NormalizePciAddress("0000:1A:00.0"), "0000:1a:00.0");
  EXPECT_EQ(NormalizePciAddress("00000000:18:00.0", false), "0000:18:00");
  EXPECT_EQ(NormalizePciAddress("0000:18:00", false), "0000:18:00");
}

TEST(HostReadingsTest, PciGpusProcessFactsAndContainersFromAPlantedRoot) {
  testing::TempDir dir;
  auto plant = [&](const std::string& path, const std::string& text) { dir.Write(path.substr(1), text); };
  plant("/sys/bus/pci/devices/0000:18:00.0/vendor", "0x10de\n");
  plant("/sys/bus/pci/devices/0000:18:00.0/class", "0x030200\n");
  plant("/sys/bus/pci/devices/0000:18:00.0/numa_node", "1\n");
  plant("/sys/bus/pci/devices/0000:18:00.0/current_link_speed", "16.0 GT/s PCIe\n");
  plant("/sys/bus/pci/devices/0000:18:00.0/max_link_speed", "32.0 GT/s PCIe\n");
  plant("/sys/bus/pci/devices/0000:18:00.0/current_link_width", "8\n");
  plant("/sys/bus/pci/devices/0000:18:00.0/max_link_width", "16\n");
  plant("/sys/bus/pci/devices/0000:18:00.1/vendor", "0x10de\n");  // The GPU's audio function.
  plant("/sys/bus/pci/devices/0000:18:00.1/class", "0x040300\n");
  plant("/sys/bus/pci/devices/0000:00:1f.0/vendor", "0x8086\n");
  plant("/sys/bus/pci/devices/0000:00:1f.0/class", "0x060100\n");
  plant("/proc/42/status", "Name:\tpython\nCpus_allowed_list:\t32-63\n");
  // cgroup v2: a pod limited to 1.5 CPUs, inside a slice limited to 4.
  plant("/proc/42/cgroup", "0::/kubepods.slice/pod-a/ctr\n");
  plant("/sys/fs/cgroup/cgroup.controllers", "cpu memory\n");
  plant("/sys/fs/cgroup/kubepods.slice/cpu.max", "400000 100000\n");
  plant("/sys/fs/cgroup/kubepods.slice/pod-a/cpu.max", "150000 100000\n");
  plant("/sys/fs/cgroup/kubepods.slice/pod-a/ctr/cpu.max", "max 100000\n");
  // cgroup v1: a job limited by its CFS quota.
  plant("/proc/43/cgroup", "5:cpu,cpuacct:/slurm/uid_0/job_7\n4:memory:/slurm/uid_0/job_7\n");
  plant("/proc/42/environ", std::string("HOME=/root\0CUDA_VISIBLE_DEVICES=GPU-abc,1\0X=1", 45));
  plant("/usr/bin/docker", "");
  plant("/usr/bin/nvidia-ctk", "");
  plant("/etc/cdi/nvidia.yaml", "kind: nvidia.com/gpu\n");
  HostFiles host(dir.path());
  std::vector<PciGpu> gpus = ScanPciGpus(host);
  ASSERT_EQ(gpus.size(), 1u);
  EXPECT_EQ(gpus[0].address, "0000:18:00.0");
  EXPECT_EQ(gpus[0].driver, "");  // No driver link.
  EXPECT_EQ(gpus[0].numa_node, 1);
  EXPECT_EQ(gpus[0].link_speed_gts, 16.0);
  EXPECT_EQ(gpus[0].max_link_speed_gts, 32.0);
  EXPECT_EQ(gpus[0].link_width, 8);
  EXPECT_EQ(gpus[0].max_link_width, 16);
  ProcessFacts p = ReadProcessFacts(host, 42);
  EXPECT_EQ(p.cpus_allowed, "32-63");
  EXPECT_TRUE(p.is_environment_readable);
  EXPECT_EQ(p.cuda_visible_devices, "GPU-abc,1");
  EXPECT_EQ(p.cgroup, "/kubepods.slice/pod-a/ctr");
  EXPECT_EQ(p.cpu_limit, 1.5);
  ProcessFacts missing = ReadProcessFacts(host, 43);
  EXPECT_FALSE(missing.is_environment_readable);
  EXPECT_FALSE(missing.cpus_allowed);
  EXPECT_FALSE(missing.cpu_limit);  // cgroup v2 here: the v1 line is not its hierarchy.
  testing::TempDir v1;
  v1.Write("proc/43/cgroup", "5:cpu,cpuacct:/slurm/uid_0/job_7\n4:memory:/slurm/uid_0/job_7\n");
  v1.Write("sys/fs/cgroup/cpu,cpuacct/slurm/uid_0/job_7/cpu.cfs_quota_us", "200000\n");
  v1.Write("sys/fs/cgroup/cpu,cpuacct/slurm/uid_0/job_7/cpu.cfs_period_us", "100000\n");
  v1.Write("sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "-1\n");
  v1.Write("sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us", "100000\n");
  v1.Write("proc/44/cgroup", "7:devices:/slurm/uid_0/job_8\n");
  v1.Write("sys/fs/cgroup/devices/slurm/uid_0/job_8/devices.list", "c 195:0 rwm\nc 195:255 rwm\n");
  ProcessFacts job = ReadProcessFacts(HostFiles(v1.path()), 43);
  EXPECT_EQ(job.cgroup, "/slurm/uid_0/job_7");
  EXPECT_EQ(job.cpu_limit, 2.0);
  EXPECT_FALSE(job.device_rules);
  ProcessFacts devices = ReadProcessFacts(HostFiles(v1.path()), 44);
  ASSERT_TRUE(devices.device_rules);
  EXPECT_EQ(*devices.device_rules, (std::vector<std::string>{"c 195:0 rwm", "c 195:255 rwm"}));
  ContainerFacts c = ReadContainerFacts(host);
  EXPECT_EQ(c.runtimes, std::vector<std::string>{"docker"});
  EXPECT_TRUE(c.has_nvidia_toolkit);
  EXPECT_EQ(c.configured_for, std::vector<std::string>{"cdi"});
}

TEST(HostReadingsTest, AKernelLogFileIsReadToItsEndAndAMissingOneSaysSo) {
  testing::TempDir dir;
  dir.Write("dev/kmsg", "6,1,100,-;NVRM: Xid (PCI:0000:18:00): 79, GPU has fallen off the bus.\n");
  Result<std::string> log = HostFiles(dir.path()).KernelLog();
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  EXPECT_EQ(ParseKernelXids(log.value()).size(), 1u);
  testing::TempDir empty;
  EXPECT_EQ(HostFiles(empty.path()).KernelLog().status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace tarmac::doctor

namespace tarmac::doctor {
namespace {

TEST(ThroughputTest, IperfReportsErrorsAndGarbage) {
  Result<NetworkResult> ok =
      ParseIperfJson(R"({"start":{},"end":{"sum_sent":{"bits_per_second":9.4e9,"retransmits":12},)"
                     R"("sum_received":{"bits_per_second":9.3e9}}})");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_NEAR(ok.value().receive_gbit_per_s, 9.3, 1e-9);
  EXPECT_NEAR(ok.value().send_gbit_per_s, 9.4, 1e-9);
  EXPECT_EQ(ok.value().retransmits, 12);
  Result<NetworkResult> refused =
      ParseIperfJson(R"({"start":{},"end":{},"error":"unable to connect to server"})");
  EXPECT_EQ(refused.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(refused.status().message().find("unable to connect"), std::string::npos);
  EXPECT_EQ(ParseIperfJson("not json").status().code(), StatusCode::kCorruption);
  EXPECT_EQ(ParseIperfJson(R"({"end":{"sum_sent":{"bits_per_second":-1}}})").status().code(),
            StatusCode::kCorruption);
}

TEST(ThroughputTest, AStorageMeasurementReadsBackItsFileAndLeavesNothing) {
  testing::TempDir dir;
  Result<StorageResult> r = MeasureStorage(dir.path(), 4 << 20, std::chrono::milliseconds(50));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r.value().bytes, 4 << 20);
  EXPECT_GT(r.value().sequential_read_mb_per_s, 0);
  EXPECT_GT(r.value().random_read_iops, 0);
  EXPECT_TRUE(HostFiles(dir.path()).List("/").empty());  // The test file is gone.
  EXPECT_EQ(MeasureStorage(dir.path() + "/missing", 4 << 20, std::chrono::milliseconds(50)).status().code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tarmac::doctor
