// SPDX-License-Identifier: Apache-2.0
//
// Every check on planted faults (and on a healthy machine: nothing above
// info), and the playbook's selection, verdicts and exit codes.
#include "doctor/checks.h"

#include <gtest/gtest.h>

#include <cmath>

#include "doctor/playbook.h"
#include "nvidia/clock_event_reasons.h"
#include "nvidia/xid_catalog.h"

namespace tarmac::doctor {
namespace {

node::GpuView Gpu(int i) {
  node::GpuView g;
  g.info.index = i;
  g.info.uuid = "GPU-0000000" + std::to_string(i) + "-aaaa";
  g.info.name = "NVIDIA H100 80GB HBM3";
  g.info.pci_bus_id = "00000000:1" + std::to_string(i) + ":00.0";
  g.info.pcie_generation_max = 5;
  g.info.pcie_width_max = 16;
  g.info.numa_node = 0;
  g.info.cpu_affinity = "0-31";
  g.info.is_persistence_mode_enabled = true;
  g.info.power_limit_default_milliwatts = 700000;
  g.info.temperature_slowdown_celsius = 87;
  g.sample.index = i;
  g.sample.utilization_gpu_ratio = 0.9;
  g.sample.memory_total_bytes = int64_t{80} << 30;
  g.sample.memory_used_bytes = int64_t{40} << 30;
  g.sample.power_limit_milliwatts = 700000;
  g.sample.temperature_celsius = 60;
  g.sample.pcie_generation = 5;
  g.sample.pcie_width = 16;
  g.sample.clock_event_reasons = 0;
  g.sample.ecc.volatile_uncorrected = 0;
  g.sample.remapped_rows = node::RemappedRows{};
  g.sample.nvlink_active.assign(18, true);  // An H100 SXM's 18 links.
  return g;
}

node::ProcessView Process(int64_t pid, const std::string& user) {
  node::ProcessView p;
  p.process.pid = pid;
  p.process.used_memory_bytes = int64_t{20} << 30;
  p.process.sm_utilization_ratio = 0.9;
  p.details.pid = pid;
  p.details.exists = true;
  p.details.user = user;
  p.details.uid = 1000;
  p.details.name = "python";
  p.details.command = "python train.py";
  return p;
}

// Readings one per second over `seconds`: the simulator's bursty job (peak
// 80 % for 40 % of each 20 s, 4 % between), a steady job (60 % with a
// 2 % wobble), an idle GPU.
node::UtilizationSeries Readings(const char* shape, int seconds, double phase = 0) {
  node::UtilizationSeries s;
  for (int t = 0; t < seconds; ++t) {
    double position = std::fmod(t / 20.0 + phase, 1.0);
    double v = std::string(shape) == "bursty"   ? (position < 0.4 ? 0.8 : 0.04)
               : std::string(shape) == "steady" ? 0.6 * (1 + 0.02 * std::sin(t / 7.0))
                                                : 0;
    s.values.push_back(v);
  }
  s.span_seconds = seconds;
  return s;
}

// A healthy two-GPU machine with one job per GPU.
DoctorInputs Healthy() {
  DoctorInputs in;
  in.hostname = "node1";
  in.through_agent = true;
  in.is_root = true;
  in.node_view.system.driver_version = "580.65.06";
  in.node_view.system.nvml_version = "13.580.65.06";
  for (int i = 0; i < 2; ++i) {
    node::GpuView g = Gpu(i);
    g.processes.push_back(Process(100 + i, "alice"));
    in.node_view.gpus.push_back(g);
    in.processes[100 + i] =
        ProcessFacts{"0-31", g.info.uuid, true, 8.0, "/job_" + std::to_string(i), std::nullopt, std::nullopt};
    in.throttle[i] = ThrottleWindow{3600, 0, 600, 0, "the last hour"};
    in.utilization_series[i] = Readings("steady", 600, i * 0.3);
  }
  in.pci_gpus = std::vector<PciGpu>{};
  for (int i = 0; i < 2; ++i) {
    PciGpu p;
    p.address = "0000:1" + std::to_string(i) + ":00.0";
    p.driver = "nvidia";
    in.pci_gpus->push_back(p);
  }
  in.cpu = CpuWindow{64, 0.4, 0.01, 0.0, 3, 0.7, 0};
  in.memory = MemInfo{int64_t{512} << 20, int64_t{300} << 20, int64_t{8} << 20, int64_t{8} << 20, 0, 0, 2048};
  in.containers = ContainerFacts{{"docker"}, true, {"docker"}};
  return in;
}

// The findings of `check` in a playbook run over `in`.
std::vector<Finding> Of(const DoctorInputs& in, const std::string& check) {
  std::vector<Finding> out;
  for (const Finding& f : RunPlaybook(in, Selection{{check}, {}}).findings) out.push_back(f);
  return out;
}

Severity WorstOf(const std::vector<Finding>& findings) {
  Severity w = Severity::kOk;
  for (const Finding& f : findings) w = std::max(w, f.severity);
  return w;
}

TEST(DoctorChecksTest, AHealthyMachineHasNothingAboveInfo) {
  DoctorResult r = RunPlaybook(Healthy(), Selection{});
  EXPECT_LE(r.worst, Severity::kInfo);
  for (const Finding& f : r.findings) EXPECT_LE(f.severity, Severity::kInfo) << f.check << ": " << f.summary;
  EXPECT_EQ(ExitCodeOf(r.worst), 0);
  EXPECT_EQ(r.verdicts.size(), 4u);
  EXPECT_TRUE(r.skipped.empty()) << r.skipped[0].check << ": " << r.skipped[0].why;
}

TEST(DoctorChecksTest, TheDriverMissingAndAVersionMismatch) {
  DoctorInputs in = Healthy();
  in.gpu_error = "NVML: driver not loaded";
  EXPECT_EQ(WorstOf(Of(in, "driver")), Severity::kCritical);
  in = Healthy();
  in.node_view.system.nvml_version = "12.535.54.03";
  std::vector<Finding> f = Of(in, "driver");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kWarning);
}

TEST(DoctorChecksTest, AGpuOnTheBusButNotInNvmlAndALostOne) {
  DoctorInputs in = Healthy();
  PciGpu hidden;
  hidden.address = "0000:9a:00.0";
  in.pci_gpus->push_back(hidden);
  PciGpu vm;
  vm.address = "0000:9b:00.0";
  vm.driver = "vfio-pci";
  in.pci_gpus->push_back(vm);
  in.node_view.gpus[1].sample.health = node::GpuHealth::kLost;
  std::vector<Finding> f = Of(in, "visibility");
  ASSERT_EQ(f.size(), 3u);
  EXPECT_EQ(f[0].severity, Severity::kCritical);
  EXPECT_EQ(f[0].gpu, 1);  // Worst first; the lost GPU came first.
  EXPECT_NE(f[1].summary.find("0000:9a:00.0 is on the PCI bus but not visible"), std::string::npos)
      << f[1].summary;
  EXPECT_NE(f[1].evidence.find("driver \"none\""), std::string::npos) << f[1].evidence;
  EXPECT_EQ(f[2].severity, Severity::kInfo);  // Passed to a VM.
}

TEST(DoctorChecksTest, ThrottlingByItsReasonAndMargins) {
  DoctorInputs in = Healthy();
  in.throttle[0] = ThrottleWindow{3600, 3600 * 0.34, 0, 0, "the last hour"};
  in.throttle[1] = ThrottleWindow{3600, 0, 0, 60, "the last hour"};
  in.node_view.gpus[1].sample.temperature_celsius = 85;
  in.node_view.gpus[1].sample.power_limit_milliwatts = 400000;
  std::vector<Finding> f = Of(in, "throttle");
  ASSERT_EQ(f.size(), 4u);
  EXPECT_EQ(f[0].severity, Severity::kCritical);  // HW slowdown on gpu 1.
  EXPECT_EQ(f[0].gpu, 1);
  EXPECT_NE(f[1].summary.find("gpu 0 thermally throttled 34 % of the last hour"), std::string::npos)
      << f[1].summary;
  EXPECT_NE(f[2].summary.find("within 5 °C"), std::string::npos) << f[2].summary;
  EXPECT_NE(f[3].evidence.find("limit 400 W, default 700 W"), std::string::npos) << f[3].evidence;
  EXPECT_NE(f[1].evidence.find("thermal slowdown for 20m 24s of 1h 00m"), std::string::npos) << f[1].evidence;
  // A short window (the doctor's own few readings) says its span, never "0 s of 0 s".
  in.throttle.clear();
  in.throttle[0] = ThrottleWindow{0.8, 0.8, 0, 0, "the readings just taken"};
  f = Of(in, "throttle");
  ASSERT_FALSE(f.empty());
  EXPECT_NE(f[0].evidence.find("thermal slowdown for 800ms of 800ms"), std::string::npos) << f[0].evidence;
  // Hot and already throttled: one cause, one finding (its evidence says
  // the temperature), not also "near its slowdown".
  in.node_view.gpus[0].sample.temperature_celsius = 89;
  f = Of(in, "throttle");
  int about_gpu0 = 0;
  for (const Finding& x : f) about_gpu0 += x.gpu == 0 ? 1 : 0;
  EXPECT_EQ(about_gpu0, 1);
  EXPECT_NE(f[0].evidence.find("now 89 °C"), std::string::npos) << f[0].evidence;
}

TEST(DoctorChecksTest, EccErrorsAndRowRemapping) {
  DoctorInputs in = Healthy();
  in.node_view.gpus[0].sample.ecc.volatile_uncorrected = 2;
  in.node_view.gpus[1].sample.remapped_rows->is_pending = true;
  std::vector<Finding> f = Of(in, "ecc");
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].severity, Severity::kCritical);
  EXPECT_EQ(f[0].gpu, 0);
  EXPECT_EQ(f[1].severity, Severity::kWarning);
  EXPECT_NE(f[1].action.find("nvidia-smi -r -i 1"), std::string::npos);
}

TEST(DoctorChecksTest, XidsOfTheKernelLogByGpuWithTheirMeaning) {
  DoctorInputs in = Healthy();
  in.kernel_xids = {{"0000:11:00", 79, 100.0, "NVRM: Xid (PCI:0000:11:00): 79, GPU has fallen off the bus."},
                    {"0000:10:00", 13, 50.0, "NVRM: Xid (PCI:0000:10:00): 13, Graphics Exception"},
                    {"0000:10:00", 13, 60.0, "NVRM: Xid (PCI:0000:10:00): 13, Graphics Exception again"},
                    {"0000:77:00", 48, 70.0, "NVRM: Xid (PCI:0000:77:00): 48, DBE"}};
  std::vector<Finding> f = Of(in, "xid");
  ASSERT_EQ(f.size(), 3u);
  EXPECT_EQ(f[0].severity, Severity::kCritical);
  EXPECT_EQ(f[0].gpu, 1);
  EXPECT_NE(f[0].summary.find("Xid 79 (GPU has fallen off the bus)"), std::string::npos) << f[0].summary;
  EXPECT_NE(f[1].summary.find("PCI 0000:77:00: Xid 48"), std::string::npos) << f[1].summary;
  EXPECT_NE(f[2].summary.find("gpu 0: Xid 13 (graphics engine exception), 2 times"), std::string::npos)
      << f[2].summary;
  EXPECT_NE(f[2].evidence.find("again"), std::string::npos);  // The last line as evidence.
}

TEST(DoctorChecksTest, XidsOlderThanADayAreHistoryNotFindings) {
  DoctorInputs in = Healthy();
  in.uptime_seconds = 10 * 86400;
  in.kernel_xids = {{"0000:11:00", 79, 2 * 86400.0, "NVRM: Xid (PCI:0000:11:00): 79, long ago"},
                    {"0000:10:00", 48, 10 * 86400.0 - 60, "NVRM: Xid (PCI:0000:10:00): 48, a minute ago"}};
  std::vector<Finding> f = Of(in, "xid");
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].severity, Severity::kCritical);
  EXPECT_EQ(f[0].gpu, 0);
  EXPECT_EQ(f[1].severity, Severity::kInfo);
  EXPECT_EQ(f[1].summary, "1 Xid line older than a day in the kernel log");
}

TEST(DoctorChecksTest, WithoutTheKernelLogTheAgentsXidCountsStandIn) {
  DoctorInputs in = Healthy();
  in.kernel_log_error = "the kernel log could not be read: /dev/kmsg: Permission denied";
  in.node_view.gpus[0].xid_count = 1;
  in.node_view.gpus[0].xid_count_by_code[94] = 1;
  DoctorResult r = RunPlaybook(in, Selection{{"xid"}, {}});
  ASSERT_EQ(r.findings.size(), 1u);
  EXPECT_NE(r.findings[0].summary.find("Xid 94 (contained ECC error)"), std::string::npos);
  ASSERT_EQ(r.skipped.size(), 1u);
  EXPECT_NE(r.skipped[0].why.find("Permission denied"), std::string::npos);
}

TEST(DoctorChecksTest, TheXidTableCoversTheCommonCodes) {
  for (int64_t xid : {13, 31, 43, 45, 48, 61, 62, 63, 64, 74, 79, 92, 94, 95, 119, 120}) {
    EXPECT_TRUE(nvidia::IsKnownXid(xid)) << xid;
    nvidia::XidMeaning m = nvidia::LookUpXid(xid);
    EXPECT_NE(std::string(m.meaning), "") << xid;
    EXPECT_NE(std::string(m.action), "") << xid;
  }
  EXPECT_FALSE(nvidia::IsKnownXid(12345));
  EXPECT_EQ(nvidia::LookUpXid(12345).gravity, nvidia::XidGravity::kWarning);
}

TEST(DoctorChecksTest, PersistenceSharingAndHeldIdleMemory) {
  DoctorInputs in = Healthy();
  in.node_view.gpus[1].info.is_persistence_mode_enabled = false;
  std::vector<Finding> p = Of(in, "persistence");
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].evidence, "gpus 1");
  in.node_view.gpus[0].processes.push_back(Process(200, "bob"));
  in.node_view.gpus[0].sample.memory_used_bytes = int64_t{78} << 30;
  std::vector<Finding> s = Of(in, "sharing");
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].severity, Severity::kWarning);
  in.node_view.gpus[1].processes[0].process.sm_utilization_ratio = 0.0;
  in.node_view.gpus[1].sample.utilization_gpu_ratio = 0.0;
  std::vector<Finding> h = Of(in, "held_idle");
  ASSERT_EQ(h.size(), 1u);
  EXPECT_EQ(h[0].gpu, 1);
  EXPECT_EQ(h[0].summary, "gpu 1: 1 process holds memory without computing");
}

TEST(DoctorChecksTest, TheCpuSaturatedAHotCoreStealAndIowait) {
  DoctorInputs in = Healthy();
  in.cpu = CpuWindow{64, 0.2, 0.15, 0.08, 5, 1.0, 1};
  std::vector<Finding> f = Of(in, "cpu");
  ASSERT_EQ(f.size(), 3u);
  EXPECT_NE(f[0].summary.find("CPU 5 is saturated while the others idle"), std::string::npos) << f[0].summary;
  EXPECT_NE(f[1].summary.find("stolen"), std::string::npos);
  EXPECT_NE(f[2].summary.find("wait on storage"), std::string::npos);
  in.cpu = CpuWindow{64, 0.97, 0, 0, 5, 1.0, 60};
  f = Of(in, "cpu");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].summary.find("saturated (97 % busy)"), std::string::npos) << f[0].summary;
  in.cpu.reset();
  DoctorResult r = RunPlaybook(in, Selection{{"cpu"}, {}});
  EXPECT_TRUE(r.findings.empty());
  ASSERT_EQ(r.skipped.size(), 1u);
  EXPECT_TRUE(r.passed.empty());
}

// The playbook's second question: a GPU that works in bursts with idle
// gaps is a data-starved job, with its evidence and the next step; steady
// and idle GPUs are not; too short a window says so instead.
TEST(DoctorChecksTest, ADataStarvedGpuIsFoundAndSteadyOnesAreNot) {
  DoctorInputs in = Healthy();
  in.through_agent = true;
  in.utilization_series = {{0, Readings("steady", 300)},
                           {1, Readings("bursty", 300, 0.3)},
                           {2, Readings("idle", 300)},
                           {3, Readings("steady", 300, 0.5)}};
  std::vector<Finding> f = Of(in, "starved");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].gpu, 1);
  EXPECT_EQ(f[0].summary, "gpu 1 works in bursts and waits between them: a data-starved job");
  EXPECT_NE(f[0].evidence.find("bursts to 80 % about every 20 s, busy 4"), std::string::npos)
      << f[0].evidence;
  EXPECT_NE(f[0].evidence.find("over the last 5m 00s (300 readings)"), std::string::npos) << f[0].evidence;
  EXPECT_NE(f[0].action.find("num_workers"), std::string::npos);
  // Less than the window it needs: skipped, saying why, no guess.
  in.utilization_series = {{1, Readings("bursty", 30)}};
  DoctorResult r = RunPlaybook(in, Selection{{"starved"}, {}});
  EXPECT_TRUE(r.findings.empty());
  ASSERT_EQ(r.skipped.size(), 1u);
  EXPECT_NE(r.skipped[0].why.find("span less than 45 s"), std::string::npos) << r.skipped[0].why;
}

// The other sign of a data-starved GPU: its process keeps a CPU busy
// while the GPU waits. One finding per GPU, whichever signs show; a busy
// GPU, a process under its CPU, or a process at its cgroup's limit below
// one CPU are judged as such.
TEST(DoctorChecksTest, AProcessWhoseCpuIsSaturatedWhileItsGpuWaitsIsAStarvedJob) {
  DoctorInputs in = Healthy();
  in.cpu->ticks = 200;  // 2 s.
  in.utilization_series[0] = Readings("steady", 300);
  for (double& v : in.utilization_series[0].values) v *= 0.5;  // About 30 %.
  in.processes[100].busy_cpus = 0.98;
  std::vector<Finding> f = Of(in, "starved");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].gpu, 0);
  EXPECT_EQ(f[0].summary, "gpu 0 waits on its process's CPU: a data-starved job");
  EXPECT_NE(f[0].evidence.find("pid 100 (alice, python) kept 0.98 CPUs busy over the last 2.0 s while gpu 0 "
                               "was 30 % utilized"),
            std::string::npos)
      << f[0].evidence;
  in.processes[100].busy_cpus = 0.5;
  EXPECT_TRUE(Of(in, "starved").empty());
  in.processes[100].cpu_limit = 0.5;  // All it may use.
  EXPECT_EQ(Of(in, "starved").size(), 1u);
  in.processes[100].busy_cpus = 0.98;
  in.processes[100].cpu_limit = 8.0;
  in.utilization_series[0] = Readings("steady", 300);  // 60 %: the GPU does not wait.
  EXPECT_TRUE(Of(in, "starved").empty());
  // Bursts and a saturated CPU on one GPU: one finding with both.
  in.utilization_series[0] = Readings("bursty", 300);
  f = Of(in, "starved");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].summary, "gpu 0 works in bursts and waits between them: a data-starved job");
  EXPECT_NE(f[0].evidence.find("; pid 100 (alice, python) kept 0.98 CPUs busy"), std::string::npos)
      << f[0].evidence;
}

// The NUMA check compares like with like: a GPU near CPUs this host does
// not have (a simulated GPU, another machine's reading) is skipped, saying
// so, not called far from this host's processes.
TEST(DoctorChecksTest, NumaIsJudgedOnlyAgainstCpusThisHostHas) {
  DoctorInputs in = Healthy();
  in.processes[100].cpus_allowed = "0-3";
  in.node_view.gpus[0].info.cpu_affinity = "56-111";
  in.cpu->cpu_count = 4;
  DoctorResult r = RunPlaybook(in, Selection{{"numa"}, {}});
  EXPECT_TRUE(r.findings.empty());
  ASSERT_EQ(r.skipped.size(), 1u);
  EXPECT_EQ(r.skipped[0].why,
            "gpu 0, 1 are near CPUs this host (4 CPUs) does not have: a simulated GPU, or another machine's "
            "reading");
  in.cpu->cpu_count = 112;  // The host has them: the process is far.
  EXPECT_EQ(Of(in, "numa").size(), 1u);
}

TEST(DoctorChecksTest, MemoryShortSwapInUseAndHugePagesGone) {
  DoctorInputs in = Healthy();
  in.memory = MemInfo{int64_t{512} << 20, int64_t{20} << 20, int64_t{8} << 20, int64_t{4} << 20, 16, 0, 2048};
  std::vector<Finding> f = Of(in, "memory");
  ASSERT_EQ(f.size(), 3u);
  EXPECT_EQ(f[0].severity, Severity::kCritical);  // 4 % available.
  EXPECT_NE(f[1].summary.find("50 % of swap"), std::string::npos) << f[1].summary;
  EXPECT_EQ(f[2].severity, Severity::kInfo);
}

TEST(DoctorChecksTest, PcieNarrowOrSlowUnderLoadButNotSlowAtIdle) {
  DoctorInputs in = Healthy();
  in.node_view.gpus[0].sample.pcie_width = 8;
  in.node_view.gpus[1].sample.pcie_generation = 4;
  std::vector<Finding> f = Of(in, "pcie");
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].severity, Severity::kCritical);
  EXPECT_NE(f[0].summary.find("x8 of x16"), std::string::npos);
  EXPECT_NE(f[1].summary.find("Gen4 of Gen5 under load"), std::string::npos);
  in.node_view.gpus[1].sample.utilization_gpu_ratio = 0.0;
  in.node_view.gpus[1].sample.pcie_generation = 1;  // Idle: power saving.
  EXPECT_EQ(Of(in, "pcie").size(), 1u);
  // Without NVML's readings, sysfs's.
  in = Healthy();
  in.node_view.gpus[0].sample.pcie_width.reset();
  (*in.pci_gpus)[0].link_width = 4;
  (*in.pci_gpus)[0].max_link_width = 16;
  f = Of(in, "pcie");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].summary.find("x4 of x16"), std::string::npos);
}

TEST(DoctorChecksTest, NvlinksDownNumaFarAndTheTopology) {
  DoctorInputs in = Healthy();
  in.node_view.gpus[1].sample.nvlink_active[1] = false;
  in.node_view.gpus[1].sample.nvlink_active[3] = false;
  std::vector<Finding> n = Of(in, "nvlink");
  ASSERT_EQ(n.size(), 1u);
  EXPECT_EQ(n[0].evidence, "links down: 1, 3");
  in.processes[100].cpus_allowed = "32-63";
  std::vector<Finding> numa = Of(in, "numa");
  ASSERT_EQ(numa.size(), 1u);
  EXPECT_NE(numa[0].summary.find("pid 100 on gpu 0"), std::string::npos);
  in.processes[100].cpus_allowed = "0-63";
  EXPECT_TRUE(Of(in, "numa").empty());
  in.node_view.gpus[0].info.nvlink_peer_bus_ids = {in.node_view.gpus[1].info.pci_bus_id};
  in.node_view.gpus[1].info.nvlink_peer_bus_ids = {in.node_view.gpus[0].info.pci_bus_id};
  // Defect: the evidence was nvidia-smi's multi-line matrix, which the
  // terminal filter printed as one line with "\n" in it.
  std::string m = TopologySummary(in.node_view);
  EXPECT_EQ(m.find('\n'), std::string::npos);
  EXPECT_NE(m.find("NVLink joins GPU 0, 1"), std::string::npos) << m;
  in.node_view.gpus[0].info.nvlink_peer_bus_ids.clear();
  in.node_view.gpus[1].info.nvlink_peer_bus_ids.clear();
  in.node_view.gpus[1].info.numa_node = 1;
  m = TopologySummary(in.node_view);
  EXPECT_NE(m.find("no NVLink peer: GPU 0, 1"), std::string::npos) << m;
  EXPECT_NE(m.find("GPU 0 on NUMA node 0 (CPUs 0-31); GPU 1 on NUMA node 1"), std::string::npos) << m;
}

TEST(DoctorChecksTest, LinkErrorCountersMigPendingAndPinnedClocks) {
  DoctorInputs in = Healthy();
  in.node_view.gpus[0].sample.nvlink_crc_errors = 12;
  in.node_view.gpus[0].sample.nvlink_replay_errors = 3;
  in.node_view.gpus[0].sample.nvlink_recovery_errors = 0;
  in.node_view.gpus[1].sample.nvlink_recovery_errors = 1;
  std::vector<Finding> n = Of(in, "nvlink");
  ASSERT_EQ(n.size(), 2u);
  EXPECT_EQ(n[0].severity, Severity::kCritical);  // A recovery: the link retrained.
  EXPECT_EQ(n[0].gpu, 1);
  EXPECT_EQ(n[1].summary, "gpu 0: NVLink errors (12 CRC, 3 replay, 0 recovery)");
  in.node_view.gpus[1].sample.pcie_replays = 99;
  EXPECT_TRUE(Of(in, "pcie").empty());
  in.node_view.gpus[1].sample.pcie_replays = 250;
  std::vector<Finding> p = Of(in, "pcie");
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].summary, "gpu 1's PCIe link resent 250 packets");
  in.node_view.gpus[0].info.is_mig_enabled = false;
  in.node_view.gpus[0].info.is_mig_pending = true;
  std::vector<Finding> m = Of(in, "mig");
  ASSERT_EQ(m.size(), 1u);
  EXPECT_NE(m[0].summary.find("MIG mode is off until the GPU is reset (a change to on is pending)"),
            std::string::npos);
  in.node_view.gpus[1].sample.clock_event_reasons = nvidia::kReasonApplicationsClocksSetting;
  std::vector<Finding> t = Of(in, "throttle");
  ASSERT_EQ(t.size(), 1u);
  EXPECT_NE(t[0].summary.find("pinned application clocks"), std::string::npos);
}

TEST(DoctorChecksTest, RetiredPagesMissingNvlinksAndDeviceRulesThatAllowEveryGpu) {
  DoctorInputs in = Healthy();
  in.node_view.gpus[0].sample.remapped_rows.reset();
  in.node_view.gpus[0].sample.retired_pages = node::RetiredPages{1, 2, true};
  in.node_view.gpus[1].sample.remapped_rows.reset();
  in.node_view.gpus[1].sample.retired_pages = node::RetiredPages{30, 31, false};
  std::vector<Finding> e = Of(in, "ecc");
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[0].summary, "gpu 1 has retired 61 memory pages");
  EXPECT_EQ(e[0].severity, Severity::kCritical);
  EXPECT_EQ(e[1].summary, "gpu 0: a page retirement waits for a reset");
  // An H100 SXM has 18 NVLinks; one showing 12 is missing some.
  in.node_view.gpus[0].sample.nvlink_active.assign(12, true);
  std::vector<Finding> n = Of(in, "nvlink");
  ASSERT_EQ(n.size(), 1u);
  EXPECT_EQ(n[0].summary, "gpu 0 shows 12 of the 18 NVLinks an NVIDIA H100 80GB HBM3 has");
  // cgroup v1 device rules that let a one-GPU job open every GPU.
  in.processes[100].device_rules = std::vector<std::string>{"c 195:* rwm", "c 1:3 rwm"};
  std::vector<Finding> a = Of(in, "allocation");
  ASSERT_EQ(a.size(), 1u);
  EXPECT_NE(a[0].summary.find("may open every GPU"), std::string::npos);
  // Two such processes: one cause, one finding that lists them both.
  in.processes[101].device_rules = std::vector<std::string>{"c 195:* rwm"};
  a = Of(in, "allocation");
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].summary, "2 processes may open every GPU: their cgroups' device rules allow them all");
  EXPECT_NE(a[0].evidence.find("pid 100 ("), std::string::npos) << a[0].evidence;
  EXPECT_NE(a[0].evidence.find("pid 101 ("), std::string::npos) << a[0].evidence;
  // Processes with the same rules share their line: the rules said once.
  in.processes[101].device_rules = in.processes[100].device_rules;
  a = Of(in, "allocation");
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].evidence.find("devices.list"), a[0].evidence.rfind("devices.list")) << a[0].evidence;
  EXPECT_FALSE(a[0].gpu.has_value());
  EXPECT_TRUE(a[0].command.empty());  // Command lines stay out of a finding of several processes.
  in.processes[101].device_rules.reset();
  in.processes[100].device_rules = std::vector<std::string>{"c 195:0 rwm", "c 195:255 rwm"};
  EXPECT_TRUE(Of(in, "allocation").empty());
}

TEST(DoctorChecksTest, AJobLimitedToLessThanACpuPerGpu) {
  DoctorInputs in = Healthy();
  in.processes[101].cpu_limit = 0.5;
  std::vector<Finding> f = Of(in, "cpu_limit");
  ASSERT_EQ(f.size(), 1u);
  // The process by its name; its command line (which may hold a secret)
  // only in `command`, which the web leaves out.
  EXPECT_EQ(f[0].summary, "pid 101 (python) drives 1 GPU on 0.5 CPUs");
  EXPECT_EQ(f[0].command, "python train.py");
  EXPECT_EQ(f[0].evidence.find("train.py"), std::string::npos) << f[0].evidence;
  EXPECT_NE(f[0].evidence.find("cgroup /job_1 may use 0.5 CPUs"), std::string::npos) << f[0].evidence;
  in.processes[101].cpu_limit.reset();  // No limit at all.
  EXPECT_TRUE(Of(in, "cpu_limit").empty());
}

TEST(DoctorChecksTest, ProcessesOutsideTheirAllocation) {
  DoctorInputs in = Healthy();
  in.processes[100].cuda_visible_devices = "GPU-00000001";  // gpu 1's prefix; runs on gpu 0.
  in.processes[101].cuda_visible_devices = "0";             // By index only, on gpu 1.
  std::vector<Finding> f = Of(in, "allocation");
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].severity, Severity::kCritical);
  EXPECT_EQ(f[0].gpu, 0);
  EXPECT_NE(f[0].meaning.find("invisible neighbour"), std::string::npos);
  EXPECT_EQ(f[1].severity, Severity::kWarning);
  in = Healthy();
  in.processes[100].cuda_visible_devices = "GPU-00000000";  // Its own, by prefix.
  EXPECT_TRUE(Of(in, "allocation").empty());
  in.node_view.gpus[0].lease = node::GpuLease{7, "carol", node::LeaseKind::kRun, false};
  f = Of(in, "allocation");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].summary.find("leased to carol"), std::string::npos);
  in = Healthy();
  in.is_root = false;
  in.processes[101].is_environment_readable = false;
  in.processes[101].cuda_visible_devices.reset();
  DoctorResult r = RunPlaybook(in, Selection{{"allocation"}, {}});
  ASSERT_EQ(r.skipped.size(), 1u);
  EXPECT_NE(r.skipped[0].why.find("run as root"), std::string::npos);
}

TEST(DoctorChecksTest, ContainerRuntimesThatCannotHandOutGpus) {
  DoctorInputs in = Healthy();
  in.containers = ContainerFacts{{"docker"}, false, {}};
  EXPECT_NE(Of(in, "containers").at(0).summary.find("no NVIDIA container toolkit"), std::string::npos);
  in.containers = ContainerFacts{{"containerd"}, true, {}};
  EXPECT_NE(Of(in, "containers").at(0).summary.find("not configured"), std::string::npos);
  in.containers = ContainerFacts{};
  DoctorResult r = RunPlaybook(in, Selection{{"containers"}, {}});
  EXPECT_TRUE(r.findings.empty());
  ASSERT_EQ(r.skipped.size(), 1u);
  EXPECT_NE(r.skipped[0].why.find("no container runtime"), std::string::npos);
}

TEST(DoctorPlaybookTest, OnlySkipUnknownNamesAndExitCodes) {
  DoctorInputs in = Healthy();
  in.node_view.gpus[0].sample.ecc.volatile_uncorrected = 1;
  in.cpu = CpuWindow{64, 0.97, 0, 0, 5, 1.0, 60};
  DoctorResult all = RunPlaybook(in, Selection{});
  EXPECT_EQ(all.worst, Severity::kCritical);
  EXPECT_EQ(ExitCodeOf(all.worst), kExitDoctorCritical);
  EXPECT_EQ(all.verdicts[Question::kPipeline], Severity::kWarning);
  DoctorResult pipeline = RunPlaybook(in, Selection{{"pipeline"}, {}});
  EXPECT_EQ(pipeline.worst, Severity::kWarning);
  EXPECT_EQ(ExitCodeOf(pipeline.worst), kExitDoctorWarning);
  EXPECT_EQ(pipeline.verdicts.size(), 1u);
  DoctorResult skipped = RunPlaybook(in, Selection{{}, {"ecc", "pipeline"}});
  EXPECT_LE(skipped.worst, Severity::kInfo);
  EXPECT_TRUE(ValidateSelection(Selection{{"gpus", "xid"}, {"topology"}}).ok());
  Status bad = ValidateSelection(Selection{{"gpu"}, {}});
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.message().find("--only: unknown check 'gpu'; did you mean 'gpus'? (known: gpus, pipeline"),
            std::string::npos)
      << bad.message();
}

}  // namespace
}  // namespace tarmac::doctor
