// SPDX-License-Identifier: Apache-2.0
#include "metrics/render.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "node/sample_fields.h"

namespace tarmac::metrics {
namespace {

node::Snapshot TwoGpus() {
  node::Snapshot s;
  s.node_view.hostname = "node-1";
  s.node_view.system.driver_version = "580.65.06";
  s.node_view.taken_at = std::chrono::system_clock::from_time_t(1800000000);
  for (int i = 0; i < 2; ++i) {
    node::GpuView g;
    g.info.index = i;
    g.info.uuid = "GPU-" + std::to_string(i);
    g.info.name = "NVIDIA H100 80GB HBM3";
    g.info.pci_bus_id = "00000000:1" + std::to_string(i) + ":00.0";
    g.sample.utilization_gpu_ratio = 0.85;
    g.sample.sm_clock_hertz = 1980000000;
    g.sample.memory_used_bytes = int64_t{40} << 30;
    g.sample.temperature_celsius = 61;
    // Power is not supported on this board: absent, not zero.
    s.node_view.gpus.push_back(g);
  }
  node::ProcessView p;
  p.process.pid = 4242;
  p.process.used_memory_bytes = int64_t{40} << 30;
  p.process.sm_utilization_ratio = 0.8;
  p.details.user = "alice";
  p.details.name = "python \"train\"\nx";
  s.node_view.gpus[0].processes.push_back(p);
  s.node_view.gpus[1].sample.health = node::GpuHealth::kLost;
  s.node_view.gpus[1].xid_count_by_code = {{79, 1}, {13, 2}};
  return s;
}

// Each family of the readings table carries its reading, scaled: every row
// set to a value of its own (row n: n + 1, a bool row true).
TEST(RenderTest, EveryTableFamilyCarriesItsReading) {
  node::Snapshot s = TwoGpus();
  s.node_view.gpus.resize(1);
  node::GpuSample& sample = s.node_view.gpus[0].sample;
  int n = 0;
  std::map<std::string, double> want;
  for (const node::SampleField& f : node::SampleFields()) {
    ++n;
    double value = n;
    std::visit(
        [&](auto member) {
          using T = typename std::remove_reference_t<decltype(sample.*member)>::value_type;
          if constexpr (std::is_same_v<T, bool>) value = 1;
          sample.*member = static_cast<T>(value);
        },
        f.member);
    if (!f.native.name.empty()) want[std::string(f.native.name)] = value * f.native.scale;
    if (!f.dcgm.name.empty()) want[std::string(f.dcgm.name)] = value * f.dcgm.scale;
  }
  ASSERT_GE(want.size(), 30u);
  std::string text = RenderMetrics(s, node::SamplerStats{}, {}, {});
  for (const auto& [family, value] : want) {
    std::regex line("\n" + family + R"(\{[^}]*\} ([-+.e0-9]+)\n)");
    std::smatch m;
    ASSERT_TRUE(std::regex_search(text, m, line)) << family;
    EXPECT_NEAR(std::stod(m[1].str()), value, std::abs(value) * 1e-6) << family;
  }
}

std::string Render(const RenderOptions& options = {}) {
  node::SamplerStats stats;
  stats.ticks = 7;
  std::map<std::string, GpuCounters> counters;
  counters["GPU-0"].idle_seconds = 12.5;
  return RenderMetrics(TwoGpus(), stats, counters, options);
}

// dcgm-exporter 4.8's pod_uid: where a process of the pod names the pod's
// UID in its cgroup, its process series always carry it, and the GPU's and
// the MIG instance's pod labels carry it when device_pod_uid asks (as
// --kubernetes-enable-pod-uid); where no process names it, the label is left
// out (the pod-resources API lacks it).
TEST(RenderTest, APodsUidFromItsProcessesCgroupIsItsPodUidLabel) {
  node::Snapshot s = TwoGpus();
  s.node_view.gpus[0].processes[0].details.kubernetes = {"trainer-0", "ml", "main"};
  s.node_view.gpus[0].processes[0].details.cgroup.pod_uid = "1a2b3c4d-5e6f-7a8b-9c0d-1e2f3a4b5c6d";
  node::SamplerStats stats;
  std::string text = RenderMetrics(s, stats, {}, {});
  EXPECT_NE(
      text.find(
          "DCGM_FI_DRIVER_VERSION=\"580.65.06\",pod=\"trainer-0\",namespace=\"ml\",container=\"main\"} 85\n"),
      std::string::npos)
      << text;
  EXPECT_TRUE(std::regex_search(
      text,
      std::regex(R"(tarmac_process_gpu_memory_bytes\{[^}]*pod_uid="1a2b3c4d-5e6f-7a8b-9c0d-1e2f3a4b5c6d")")))
      << text;
  RenderOptions options;
  options.has_device_pod_uid = true;
  text = RenderMetrics(s, stats, {}, options);
  EXPECT_NE(
      text.find("DCGM_FI_DRIVER_VERSION=\"580.65.06\",pod=\"trainer-0\",namespace=\"ml\",container=\"main\","
                "pod_uid=\"1a2b3c4d-5e6f-7a8b-9c0d-1e2f3a4b5c6d\"} 85\n"),
      std::string::npos)
      << text;
  // An allocation to another pod: its own labels, without this pod's UID.
  s.node_view.gpus[0].allocated_to = node::KubernetesNames{"other-0", "ml", "main"};
  text = RenderMetrics(s, stats, {}, options);
  EXPECT_NE(text.find("pod=\"other-0\",namespace=\"ml\",container=\"main\"} 85\n"), std::string::npos)
      << text;
  EXPECT_NE(
      text.find(
          "tarmac_gpu_pod_allocated{hostname=\"node-1\",gpu=\"0\",uuid=\"GPU-0\",model=\"NVIDIA H100 80GB "
          "HBM3\",pod=\"other-0\",namespace=\"ml\",container=\"main\"} 1\n"),
      std::string::npos)
      << text;
}

// A GPU held by one pod's container carries dcgm-exporter's pod labels; its
// processes carry the names too. A GPU shared by two pods carries none.
TEST(RenderTest, KubernetesNamesBecomePodLabels) {
  node::Snapshot s = TwoGpus();
  s.node_view.gpus[0].processes[0].details.kubernetes = {"trainer-0", "ml", "main"};
  node::SamplerStats stats;
  std::string text = RenderMetrics(s, stats, {}, {});
  EXPECT_NE(
      text.find(
          "DCGM_FI_DRIVER_VERSION=\"580.65.06\",pod=\"trainer-0\",namespace=\"ml\",container=\"main\"} 85\n"),
      std::string::npos)
      << text;
  std::regex process(
      R"(tarmac_process_gpu_memory_bytes\{[^}]*pid="4242"[^}]*pod="trainer-0",namespace="ml",container="main"\})");
  EXPECT_TRUE(std::regex_search(text, process)) << text;

  node::ProcessView other = s.node_view.gpus[0].processes[0];
  other.process.pid = 4343;
  other.details.kubernetes.pod = "trainer-1";
  s.node_view.gpus[0].processes.push_back(other);
  text = RenderMetrics(s, stats, {}, {});
  EXPECT_EQ(
      text.find(
          "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-0\",pci_bus_id=\"00000000:10:00.0\",device=\"nvidia0\","
          "modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"node-1\",DCGM_FI_DRIVER_VERSION=\"580.65.06\",pod"),
      std::string::npos);
  EXPECT_NE(text.find("DCGM_FI_DRIVER_VERSION=\"580.65.06\"} 85\n"), std::string::npos);

  // The kubelet's allocation names the pod, whoever runs on the GPU, and
  // GPU 1, with no process at all, too.
  s.node_view.gpus[0].allocated_to = node::KubernetesNames{"trainer-0", "ml", "main"};
  s.node_view.gpus[1].processes.clear();
  s.node_view.gpus[1].sample.health = node::GpuHealth::kOk;
  s.node_view.gpus[1].allocated_to = node::KubernetesNames{"idle-0", "ml", "notebook"};
  text = RenderMetrics(s, stats, {}, {});
  EXPECT_NE(
      text.find(
          "DCGM_FI_DRIVER_VERSION=\"580.65.06\",pod=\"trainer-0\",namespace=\"ml\",container=\"main\"} 85\n"),
      std::string::npos)
      << text;
  std::regex idle(R"(DCGM_FI_DEV_GPU_UTIL\{gpu="1",[^}]*pod="idle-0",namespace="ml",container="notebook"\})");
  EXPECT_TRUE(std::regex_search(text, idle)) << text;
  EXPECT_NE(
      text.find(
          "tarmac_gpu_pod_allocated{hostname=\"node-1\",gpu=\"1\",uuid=\"GPU-1\",model=\"NVIDIA H100 80GB "
          "HBM3\",pod=\"idle-0\",namespace=\"ml\",container=\"notebook\"} 1\n"),
      std::string::npos)
      << text;
}

TEST(RenderTest, TheLastXidCarriesItsCodeAndNameAndPcieRatesAreTheViews) {
  node::Snapshot s = TwoGpus();
  s.node_view.gpus[1].sample.health = node::GpuHealth::kOk;
  s.node_view.gpus[0].last_xid = node::GpuEvent{0, 8, 79, {}};
  s.node_view.gpus[0].sample.pcie_tx_bytes = 1000;
  s.node_view.gpus[0].sample.pcie_rx_bytes = 5000;
  node::SamplerStats stats;
  std::string text = RenderMetrics(s, stats, {}, {});
  EXPECT_EQ(text.find("DCGM_FI_PROF_PCIE_TX_BYTES{"), std::string::npos) << "no rate before the view has one";
  std::regex xid(R"re(DCGM_FI_DEV_XID_ERRORS\{gpu="0",[^}]*err_code="79",err_msg="([^"]+)"\} 79\n)re");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(text, m, xid)) << text;
  EXPECT_NE(m[1].str().find("bus"), std::string::npos) << m[1].str();
  EXPECT_NE(text.find("err_code=\"0\",err_msg=\"\"} 0\n"), std::string::npos) << text;  // GPU 1: none.
  // The rate status shows (node/counter_rate.h), for GPU 0 only.
  s.node_view.gpus[0].pcie_tx_bytes_per_second = 4096;
  s.node_view.gpus[0].pcie_rx_bytes_per_second = 512;
  text = RenderMetrics(s, stats, {}, {});
  std::regex tx(R"(DCGM_FI_PROF_PCIE_TX_BYTES\{gpu="0",[^}]*\} 4096\n)");
  std::regex rx(R"(DCGM_FI_PROF_PCIE_RX_BYTES\{gpu="0",[^}]*\} 512\n)");
  EXPECT_TRUE(std::regex_search(text, tx)) << text;
  EXPECT_TRUE(std::regex_search(text, rx)) << text;
  EXPECT_EQ(text.find("DCGM_FI_PROF_PCIE_TX_BYTES{gpu=\"1\""), std::string::npos) << text;
}

TEST(RenderTest, DcgmFamiliesInDcgmUnitsWithDcgmLabels) {
  std::string text = Render();
  EXPECT_NE(
      text.find(
          "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-0\",pci_bus_id=\"00000000:10:00.0\",device=\"nvidia0\","
          "modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"node-1\",DCGM_FI_DRIVER_VERSION=\"580.65.06\"} "
          "85\n"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("DCGM_FI_DEV_SM_CLOCK{gpu=\"0\""), std::string::npos);
  EXPECT_NE(text.find("} 1980\n"), std::string::npos);                        // MHz.
  EXPECT_NE(text.find("} 40960\n"), std::string::npos);                       // FB_USED in MiB.
  EXPECT_EQ(text.find("DCGM_FI_DEV_POWER_USAGE{"), std::string::npos);        // Unsupported: absent.
  EXPECT_EQ(text.find("DCGM_FI_DEV_GPU_UTIL{gpu=\"1\""), std::string::npos);  // Lost: stale.
  RenderOptions native_only;
  native_only.is_dcgm_compatible = false;
  EXPECT_EQ(Render(native_only).find("DCGM_"), std::string::npos);
}

TEST(RenderTest, NativeFamiliesBaseUnitsLostGpuAndXidCounters) {
  std::string text = Render();
  EXPECT_NE(text.find("tarmac_gpu_utilization_ratio{hostname=\"node-1\",gpu=\"0\",uuid=\"GPU-0\",model="
                      "\"NVIDIA H100 80GB "
                      "HBM3\"} 0.85\n"),
            std::string::npos)
      << text;
  EXPECT_NE(
      text.find(
          "tarmac_gpu_lost{hostname=\"node-1\",gpu=\"1\",uuid=\"GPU-1\",model=\"NVIDIA H100 80GB HBM3\"} 1"),
      std::string::npos);
  EXPECT_NE(text.find("tarmac_gpu_up{hostname=\"node-1\",gpu=\"1\""), std::string::npos);
  // The health verdict, one of three set: GPU 0 ok, the lost GPU 1 to drain.
  for (const char* line :
       {"tarmac_gpu_health{hostname=\"node-1\",gpu=\"0\",uuid=\"GPU-0\",model=\"NVIDIA H100 80GB "
        "HBM3\",verdict=\"ok\"} 1\n",
        "tarmac_gpu_health{hostname=\"node-1\",gpu=\"0\",uuid=\"GPU-0\",model=\"NVIDIA H100 80GB "
        "HBM3\",verdict=\"drain\"} 0\n",
        "tarmac_gpu_health{hostname=\"node-1\",gpu=\"1\",uuid=\"GPU-1\",model=\"NVIDIA H100 80GB "
        "HBM3\",verdict=\"ok\"} 0\n",
        "tarmac_gpu_health{hostname=\"node-1\",gpu=\"1\",uuid=\"GPU-1\",model=\"NVIDIA H100 80GB "
        "HBM3\",verdict=\"drain\"} 1\n"}) {
    EXPECT_NE(text.find(line), std::string::npos) << line << text;
  }
  EXPECT_NE(
      text.find(
          "tarmac_gpu_xid_errors_total{hostname=\"node-1\",gpu=\"1\",uuid=\"GPU-1\",model=\"NVIDIA H100 80GB "
          "HBM3\",xid=\"13\"} 2"),
      std::string::npos);
  EXPECT_NE(
      text.find(
          "tarmac_gpu_idle_seconds_total{hostname=\"node-1\",gpu=\"0\",uuid=\"GPU-0\",model=\"NVIDIA H100 "
          "80GB HBM3\"} 12.5"),
      std::string::npos);
  EXPECT_NE(text.find("tarmac_sampler_ticks_total{hostname=\"node-1\"} 7"), std::string::npos);
  // Label values are escaped.
  EXPECT_NE(text.find("command=\"python \\\"train\\\"\\nx\""), std::string::npos) << text;
}

TEST(RenderTest, EachFamilyHasOneHelpAndTypeAndItsSamplesTogether) {
  std::string text = Render();
  std::istringstream lines(text);
  std::string line;
  std::set<std::string> seen;
  std::string current;
  while (std::getline(lines, line)) {
    if (line.rfind("# TYPE ", 0) == 0) {
      std::string name = line.substr(7, line.find(' ', 7) - 7);
      EXPECT_TRUE(seen.insert(name).second) << "twice: " << name;
      current = name;
      continue;
    }
    if (line.empty() || line[0] == '#') continue;
    std::string name = line.substr(0, line.find_first_of("{ "));
    EXPECT_EQ(name, current) << line;
    double value = std::stod(line.substr(line.rfind(' ') + 1));
    EXPECT_TRUE(std::isfinite(value)) << line;
  }
}

TEST(RenderTest, TheProcessCapKeepsTheBiggestAndCountsTheRest) {
  RenderOptions capped;
  capped.max_process_series = 0;
  std::string text = Render(capped);
  EXPECT_EQ(text.find("tarmac_process_gpu_memory_bytes{"), std::string::npos);
  EXPECT_NE(text.find("tarmac_process_series_dropped{hostname=\"node-1\"} 1"), std::string::npos);
}

// docs/metrics.md lists exactly the families the code can serve.
TEST(RenderTest, TheMetricsDocumentMatchesTheCode) {
  std::ifstream in(std::string(TARMAC_SOURCE_DIR) + "/docs/metrics.md");
  ASSERT_TRUE(in.good());
  std::stringstream doc;
  doc << in.rdbuf();
  std::string text = doc.str();
  std::set<std::string> documented;
  std::regex row(R"(\n\| `((?:tarmac|DCGM)_[A-Za-z0-9_]+)` \| (gauge|counter) \|)");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), row); it != std::sregex_iterator(); ++it) {
    documented.insert((*it)[1].str() + " " + (*it)[2].str());
  }
  std::set<std::string> served;
  for (const FamilyDoc& f : NativeFamilies()) served.insert(f.name + " " + f.type);
  for (const FamilyDoc& f : DcgmFamilies()) served.insert(f.name + " " + f.type);
  EXPECT_EQ(documented, served);
}

TEST(RenderTest, TheDcgmHostLabelCanBeSpelledAsNewerDcgmExportersDo) {
  RenderOptions options;
  EXPECT_NE(Render(options).find(",Hostname=\"node-1\","), std::string::npos);
  options.dcgm_hostname_label = "hostname";
  std::string text = Render(options);
  EXPECT_NE(
      text.find(
          "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-0\",pci_bus_id=\"00000000:10:00.0\",device=\"nvidia0\","
          "modelName=\"NVIDIA H100 80GB HBM3\",hostname=\"node-1\","),
      std::string::npos)
      << text;
  EXPECT_EQ(text.find("Hostname="), std::string::npos);
}

}  // namespace
}  // namespace tarmac::metrics

namespace tarmac::metrics {
namespace {

// Who holds each GPU, labelled as the GPU's other series; a GPU no lease
// holds has no series at all.
TEST(RenderLeaseMarksTest, EachHeldGpuAndInstanceCarriesItsHolder) {
  node::Snapshot s = TwoGpus();
  node::MigInstance m;
  m.uuid = "MIG-7";
  s.node_view.gpus[1].sample.mig_instances.push_back(m);
  node::LeaseMarks marks;
  EXPECT_EQ(RenderLeaseMarks(marks, s.node_view, "node-1"), "");
  marks.leases[0] = node::GpuLease{7, "alice", node::LeaseKind::kSlurm, false, "4242"};
  marks.mig_leases["MIG-7"] = node::GpuLease{9, "bob \"b\"", node::LeaseKind::kBackfill};
  std::string text = RenderLeaseMarks(marks, s.node_view, "node-1");
  EXPECT_NE(
      text.find(
          "tarmac_gpu_lease{hostname=\"node-1\",gpu=\"0\",uuid=\"GPU-0\",model=\"NVIDIA H100 80GB HBM3\","
          "lease=\"7\",user=\"alice\",kind=\"slurm\",slurm_job=\"4242\"} 1\n"),
      std::string::npos)
      << text;
  EXPECT_NE(
      text.find("gpu=\"1\",uuid=\"GPU-1\",model=\"NVIDIA H100 80GB HBM3\",mig_uuid=\"MIG-7\",lease=\"9\","
                "user=\"bob \\\"b\\\"\",kind=\"backfill\"} 1\n"),
      std::string::npos)
      << text;
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 4) << text;  // HELP, TYPE and two samples.
}

// Each GPU of a lease lent to backfill on its own: one tarmac_gpu_loan
// series a lent GPU, naming the loan, its user and the lender.
TEST(RenderLeaseMarksTest, EachLentGpuCarriesItsLoan) {
  node::Snapshot s = TwoGpus();
  node::LeaseMarks marks;
  for (int g : {0, 1}) marks.leases[g] = node::GpuLease{7, "alice", node::LeaseKind::kReservation};
  marks.leases[1].lent_to = 12;
  marks.leases[1].lent_to_user = "bob";
  std::string text = RenderLeaseMarks(marks, s.node_view, "node-1");
  EXPECT_NE(text.find("tarmac_gpu_loan{hostname=\"node-1\",gpu=\"1\",uuid=\"GPU-1\",model=\"NVIDIA H100 80GB "
                      "HBM3\",lease=\"12\",user=\"bob\",lender=\"7\"} 1\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("tarmac_gpu_loan{hostname=\"node-1\",gpu=\"0\""), std::string::npos) << text;
  marks.leases[1].lent_to = 0;
  EXPECT_EQ(RenderLeaseMarks(marks, s.node_view, "node-1").find("tarmac_gpu_loan"), std::string::npos);
}

}  // namespace
}  // namespace tarmac::metrics

namespace tarmac::metrics {
namespace {

// In MIG mode the driver reports no utilization: idle is judged by the
// engine's activity (GPM), as status judges it, not left out.
TEST(RenderTest, RegressionAMigGpuIsIdleByItsEngineActivity) {
  node::Snapshot s = TwoGpus();
  s.node_view.gpus[1].sample.health = node::GpuHealth::kOk;
  for (node::GpuView& g : s.node_view.gpus) {
    g.sample.utilization_gpu_ratio.reset();
    g.sample.mig_instances.push_back(node::MigInstance{});
  }
  s.node_view.gpus[0].sample.graphics_engine_active_ratio = 0.01;
  s.node_view.gpus[1].sample.graphics_engine_active_ratio = 0.6;
  std::string page = RenderMetrics(s, {}, {}, RenderOptions{});
  EXPECT_NE(page.find("tarmac_gpu_idle{hostname=\"node-1\",gpu=\"0\",uuid=\"GPU-0\",model=\"NVIDIA H100 80GB "
                      "HBM3\"} 1\n"),
            std::string::npos)
      << page;
  EXPECT_NE(page.find("tarmac_gpu_idle{hostname=\"node-1\",gpu=\"1\",uuid=\"GPU-1\",model=\"NVIDIA H100 80GB "
                      "HBM3\"} 0\n"),
            std::string::npos);
}

}  // namespace
}  // namespace tarmac::metrics
