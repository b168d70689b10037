// SPDX-License-Identifier: Apache-2.0
//
// `tarmac doctor` end to end: the real command over the simulated world
// (through the agent and the fake NVML, or the sim backend directly) and a
// planted host (/proc, /sys, /dev/kmsg, /etc under --host-root). The
// healthy lab says nothing above info; each planted fault is found with the
// right check, GPU and severity; bad --only names are refused.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "testutil/agent_fixture.h"

namespace tarmac::testing {
namespace {

using nlohmann::json;

// Plants `first` at `path` and, once a reader has read it (inotify: closed
// without writing), puts `second` in its place: how a planted /proc/stat
// changes between the doctor's two readings.
class FileSwapper {
 public:
  FileSwapper(const std::string& path, const std::string& first, std::string second) : path_(path) {
    std::filesystem::path p(path);
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(path) << first;
    fd_ = ::inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
    EXPECT_GE(fd_, 0);
    EXPECT_GE(::inotify_add_watch(fd_, p.parent_path().c_str(), IN_CLOSE_NOWRITE), 0);
    thread_ = std::thread([this, name = p.filename().string(), second = std::move(second)] {
      while (!stop_) {
        pollfd pfd{fd_, POLLIN, 0};
        if (::poll(&pfd, 1, 50) <= 0) continue;
        alignas(inotify_event) char buf[4096];
        ssize_t n = ::read(fd_, buf, sizeof buf);
        for (ssize_t at = 0; at < n;) {
          const auto* e = reinterpret_cast<const inotify_event*>(buf + at);
          if (e->len > 0 && name == e->name) {
            std::ofstream(path_ + ".next") << second;
            std::filesystem::rename(path_ + ".next", path_);
            return;
          }
          at += static_cast<ssize_t>(sizeof(inotify_event) + e->len);
        }
      }
    });
  }
  ~FileSwapper() {
    stop_ = true;
    thread_.join();
    ::close(fd_);
  }

 private:
  std::string path_;
  int fd_ = -1;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// /proc/stat with four CPUs, each with the given (busy, idle, iowait, steal) ticks.
std::string Stat(const std::vector<std::array<int64_t, 4>>& cpus) {
  std::array<int64_t, 4> all{};
  std::string lines;
  for (size_t i = 0; i < cpus.size(); ++i) {
    const auto& c = cpus[i];
    lines += fmt::format("cpu{} {} 0 0 {} {} 0 0 {} 0 0\n", i, c[0], c[1], c[2], c[3]);
    for (size_t k = 0; k < 4; ++k) all[k] += c[k];
  }
  return fmt::format("cpu  {} 0 0 {} {} 0 0 {} 0 0\n", all[0], all[1], all[2], all[3]) + lines + "intr 1\n";
}

class DoctorTest : public AgentFixture {
 public:
  std::string Root() const { return dir_.path() + "/host"; }
  void Plant(const std::string& path, const std::string& text) { dir_.Write("host" + path, text); }

  // The host of a healthy machine: its GPUs on the PCI bus (as NVML names
  // them), an empty kernel log, plenty of memory, no container runtime.
  void PlantHealthyHost(const json& status) {
    for (const json& g : status["gpus"]) {
      if (!g.contains("pci_bus_id")) continue;
      PlantPciGpu(g["pci_bus_id"].get<std::string>().substr(4), "nvidia");
    }
    Plant("/dev/kmsg", "6,1,1000,-;Linux version 6.1.0\n");
    Plant("/proc/meminfo",
          "MemTotal: 528000000 kB\nMemAvailable: 400000000 kB\nSwapTotal: 0 kB\nSwapFree: 0 kB\n");
  }

  void PlantPciGpu(std::string address, const std::string& driver) {
    for (char& c : address) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    std::string dir = "/sys/bus/pci/devices/" + address + "/";
    Plant(dir + "vendor", "0x10de\n");
    Plant(dir + "class", "0x030200\n");
    Plant(dir + "current_link_width", "16\n");
    Plant(dir + "max_link_width", "16\n");
    if (!driver.empty()) {
      std::filesystem::create_directories(Root() + "/sys/bus/pci/drivers/" + driver);
      std::filesystem::create_directory_symlink("../../../bus/pci/drivers/" + driver,
                                                Root() + dir + "driver");
    }
  }

  RunResult Doctor(std::vector<std::string> args) {
    args.insert(args.begin(), "doctor");
    args.insert(args.end(), {"--host-root", Root()});
    return Tarmac(args);
  }

  static std::vector<json> Findings(const json& report, const std::string& check) {
    std::vector<json> out;
    for (const json& q : report["questions"]) {
      for (const json& f : q["findings"]) {
        if (f["check"] == check) out.push_back(f);
      }
    }
    return out;
  }

  // Whether a finding of `check` has `severity`, GPU `gpu` (-1: none) and
  // `text` in its summary.
  static bool HasFinding(const json& report, const std::string& check, const std::string& severity, int gpu,
                         const std::string& text) {
    for (const json& f : Findings(report, check)) {
      bool same_gpu = gpu < 0 ? f["gpu"].is_null() : f["gpu"] == gpu;
      if (f["severity"] == severity && same_gpu &&
          f["summary"].get<std::string>().find(text) != std::string::npos) {
        return true;
      }
    }
    return false;
  }
};

TEST_F(DoctorTest, TheHealthyLabThroughTheAgentSaysNothingAboveInfo) {
  UseScenario("healthy-lab.toml");
  StartAgent({"--config", dir_.Write("agent.toml", "[sampler]\nfast_interval = \"100ms\"\n")});
  PlantHealthyHost(AgentStatus());
  // As many CPUs as the simulated GPUs are near: NUMA is judged like with like.
  std::vector<std::array<int64_t, 4>> before(224, {1000, 9000, 0, 0});
  std::vector<std::array<int64_t, 4>> after(224, {1020, 9080, 0, 0});
  FileSwapper stat(Root() + "/proc/stat", Stat(before), Stat(after));
  RunResult r = Doctor({"--json", "--quick", "--socket", Socket()});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  json j = json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.out;
  EXPECT_EQ(j["through_agent"], true);
  EXPECT_EQ(j["gpu_count"], 8);
  ASSERT_EQ(j["questions"].size(), 4u);
  for (const json& q : j["questions"]) {
    for (const json& f : q["findings"]) {
      EXPECT_TRUE(f["severity"] == "info" || f["severity"] == "ok") << f.dump();
    }
  }
  std::vector<std::string> passed = j["passed"].get<std::vector<std::string>>();
  for (const char* check :
       {"driver", "visibility", "xid", "persistence", "cpu", "memory", "pcie", "nvlink"}) {
    EXPECT_NE(std::find(passed.begin(), passed.end(), check), passed.end()) << check << " in " << j["passed"];
  }
  // An agent started a moment ago has not watched long enough to judge
  // bursts of work: said, not guessed.
  ASSERT_EQ(j["skipped"].size(), 2u) << j["skipped"];
  EXPECT_EQ(j["skipped"][0]["check"], "starved");
  EXPECT_EQ(j["skipped"][0]["why"], "the agent's readings span less than 45 s so far");
  EXPECT_EQ(j["skipped"][1]["check"], "containers");
}

TEST_F(DoctorTest, EveryPlantedFaultIsFoundWithItsMeaning) {
  UseScenario("faults.toml");
  json status = json::parse(Tarmac({"status", "--json", "--backend", "sim", "--no-agent"}).out);
  PlantHealthyHost(status);
  std::string uuid0 = status["gpus"][0]["uuid"];
  std::string uuid3 = status["gpus"][3]["uuid"];
  Child* load = StartLoad(uuid3, {"--memory", "2GiB", "--util", "50"});
  std::string proc = "/proc/" + std::to_string(load->pid());
  // The job runs on gpu 3, but its allocation says gpu 0, and it may only
  // run on CPUs far from its GPU (which is near 0-31).
  Plant(proc + "/environ", std::string("HOME=/\0CUDA_VISIBLE_DEVICES=", 28) + uuid0 + std::string("\0", 1));
  Plant(proc + "/status", "Name:\tsimload\nCpus_allowed_list:\t64-95\n");
  // ...and its container may use half a CPU.
  Plant(proc + "/cgroup", "0::/system.slice/docker-abc.scope\n");
  Plant("/sys/fs/cgroup/cgroup.controllers", "cpu memory io\n");
  Plant("/sys/fs/cgroup/system.slice/docker-abc.scope/cpu.max", "50000 100000\n");
  // A GPU on the bus the driver did not take, Xids in the kernel log, memory
  // short and swapping, a container runtime without the NVIDIA toolkit.
  PlantPciGpu("0000:c1:00.0", "");
  Plant("/dev/kmsg",
        "4,10,5000000,-;NVRM: Xid (PCI:0000:29:00): 79, pid=1234, name=python, GPU has fallen off the bus.\n"
        "4,11,6000000,-;NVRM: Xid (PCI:0000:5d:00): 48, pid=99, name=python, An uncorrectable double bit "
        "error\n");
  Plant("/proc/meminfo",
        "MemTotal: 100000000 kB\nMemAvailable: 3000000 kB\nSwapTotal: 8000000 kB\nSwapFree: 4000000 kB\n");
  Plant("/usr/bin/docker", "");
  // One core busy, the rest idle, with steal and iowait; as many CPUs as
  // the simulated GPUs are near (the NUMA check compares like with like).
  std::vector<std::array<int64_t, 4>> before(224, {1000, 9000, 0, 0});
  std::vector<std::array<int64_t, 4>> after(224, {1000, 9070, 20, 10});
  after[0] = {1100, 9000, 0, 0};
  FileSwapper stat(Root() + "/proc/stat", Stat(before), Stat(after));
  RunResult r = Doctor({"--json", "--backend", "sim", "--no-agent", "--window", "0.5"});
  EXPECT_EQ(r.exit_code, 5) << r.out << r.err;
  json j = json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.out;
  EXPECT_EQ(j["severity"], "critical");
  // Question 1.
  EXPECT_TRUE(HasFinding(j, "visibility", "critical", 1, "gpu 1 is lost")) << j.dump(1);
  EXPECT_TRUE(HasFinding(j, "visibility", "critical", -1, "0000:c1:00.0 is on the PCI bus but not visible"))
      << j.dump(1);
  EXPECT_TRUE(HasFinding(j, "throttle", "warning", 0, "gpu 0 thermally throttled 100 %")) << j.dump(1);
  EXPECT_TRUE(HasFinding(j, "throttle", "warning", 3, "power limit was lowered")) << j.dump(1);
  EXPECT_TRUE(HasFinding(j, "ecc", "critical", 2, "uncorrectable memory errors")) << j.dump(1);
  EXPECT_TRUE(HasFinding(j, "xid", "critical", -1, "PCI 0000:29:00: Xid 79 (GPU has fallen off the bus)"))
      << j.dump(1);
  EXPECT_TRUE(HasFinding(j, "xid", "critical", 3, "gpu 3: Xid 48 (double-bit ECC error)")) << j.dump(1);
  // Question 2.
  EXPECT_TRUE(HasFinding(j, "cpu", "warning", -1, "CPU 0 is saturated while the others idle")) << j.dump(1);
  EXPECT_TRUE(HasFinding(j, "cpu", "warning", -1, "stolen by the hypervisor")) << j.dump(1);
  EXPECT_TRUE(HasFinding(j, "cpu", "warning", -1, "wait on storage")) << j.dump(1);
  EXPECT_TRUE(HasFinding(j, "memory", "critical", -1, "only 3 % of host memory is available")) << j.dump(1);
  EXPECT_TRUE(HasFinding(j, "memory", "warning", -1, "50 % of swap is in use")) << j.dump(1);
  // Question 3.
  EXPECT_TRUE(HasFinding(j, "pcie", "critical", 2, "x8 of x16")) << j.dump(1);
  EXPECT_TRUE(HasFinding(j, "numa", "warning", 3, "may only run on CPUs far from the GPU")) << j.dump(1);
  // Question 4.
  EXPECT_TRUE(HasFinding(j, "allocation", "critical", 3, "outside its CUDA_VISIBLE_DEVICES")) << j.dump(1);
  EXPECT_TRUE(HasFinding(j, "containers", "warning", -1, "no NVIDIA container toolkit")) << j.dump(1);
  EXPECT_TRUE(HasFinding(j, "cpu_limit", "warning", 3, "drives 1 GPU on 0.5 CPUs")) << j.dump(1);
  // Each finding says what it means and what to do.
  for (const json& q : j["questions"]) {
    for (const json& f : q["findings"]) {
      EXPECT_FALSE(f["meaning"].get<std::string>().empty()) << f.dump();
      EXPECT_FALSE(f["action"].get<std::string>().empty()) << f.dump();
    }
  }
}

// The GPU-side faults through the real NVML path: the agent reads the fake
// libnvidia-ml, the doctor reads the agent.
TEST_F(DoctorTest, LinkErrorsLinksDownAndAPendingMigChangeThroughTheAgent) {
  UseScenarioText(R"(
[[gpu]]
count = 2
nvlink = "all"
mig_pending = true
[[fault]]
kind = "nvlink_down"
gpu = 0
link = 3
[[fault]]
kind = "nvlink_errors"
gpu = 1
link = 0
count = 5
nvlink_error = "recovery"
[[fault]]
kind = "pcie_replay"
gpu = 1
count = 500
)");
  StartAgent({"--config",
              dir_.Write("agent.toml", "[sampler]\nfast_interval = \"100ms\"\n[doctor]\nenabled = false\n")});
  PlantHealthyHost(AgentStatus());
  RunResult r = Doctor({"--json", "--quick", "--socket", Socket(), "--only", "interconnect,scheduler"});
  EXPECT_EQ(r.exit_code, 5) << r.out << r.err;
  json j = json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.out;
  EXPECT_TRUE(HasFinding(j, "nvlink", "critical", 0, "gpu 0: 1 of 18 NVLinks are down")) << j.dump(1);
  EXPECT_TRUE(HasFinding(j, "nvlink", "critical", 1, "gpu 1: NVLink errors (0 CRC, 0 replay, 5 recovery)"))
      << j.dump(1);
  EXPECT_TRUE(HasFinding(j, "pcie", "warning", 1, "gpu 1's PCIe link resent 500 packets")) << j.dump(1);
  EXPECT_TRUE(HasFinding(j, "mig", "warning", 0, "MIG mode is off until the GPU is reset")) << j.dump(1);
  EXPECT_TRUE(HasFinding(j, "mig", "warning", 1, "MIG mode is off until the GPU is reset")) << j.dump(1);
}

TEST_F(DoctorTest, TextVerdictsOnlySkipAndBadNames) {
  UseScenarioText("[[gpu]]\ncount = 2\npersistence_mode = false\n");
  PlantHealthyHost(json::parse(Tarmac({"status", "--json", "--backend", "sim", "--no-agent"}).out));
  RunResult text =
      Doctor({"--only", "gpus", "--backend", "sim", "--no-agent", "--quick", "--color", "never"});
  EXPECT_EQ(text.exit_code, 4) << text.out << text.err;
  EXPECT_NE(text.out.find("verdict: 0 critical, 1 warning"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("1. Are the GPUs busy, and healthy?  WARNING"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("WARNING  persistence mode is off on 2 GPUs"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("next:     run nvidia-persistenced"), std::string::npos) << text.out;
  EXPECT_EQ(text.out.find("2. Is the data pipeline"), std::string::npos) << text.out;
  RunResult skipped =
      Doctor({"--only", "gpus", "--skip", "persistence", "--backend", "sim", "--no-agent", "--quick"});
  EXPECT_EQ(skipped.exit_code, 0) << skipped.out << skipped.err;
  EXPECT_NE(skipped.out.find("persistence: --skip"), std::string::npos) << skipped.out;
  RunResult bad = Doctor({"--only", "gpu", "--backend", "sim", "--no-agent"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--only: unknown check 'gpu'; did you mean 'gpus'? (known: gpus, pipeline"),
            std::string::npos)
      << bad.err;
  EXPECT_TRUE(bad.out.empty()) << bad.out;
}

TEST_F(DoctorTest, RegressionFifosInTheHostTreeHangNothing) {
  UseScenarioText("[[gpu]]\ncount = 1\n");
  json status = json::parse(Tarmac({"status", "--json", "--backend", "sim", "--no-agent"}).out);
  PlantHealthyHost(status);
  // FIFOs where the doctor reads: with no writer, a blocking open waits for ever.
  std::string numa =
      "/sys/bus/pci/devices/" + status["gpus"][0]["pci_bus_id"].get<std::string>().substr(4) + "/numa_node";
  for (char& c : numa) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const std::string& path :
       {std::string("/proc/meminfo"), std::string("/proc/stat"), std::string("/dev/kmsg"), numa}) {
    std::string full = Root() + path;
    std::filesystem::create_directories(std::filesystem::path(full).parent_path());
    ::unlink(full.c_str());
    ASSERT_EQ(::mkfifo(full.c_str(), 0644), 0) << full;
  }
  // Bounded by `timeout` only so that a regression fails instead of hanging.
  RunResult r = RunCommand({"timeout", "60", BinDir() + "/tarmac", "doctor", "--host-root", Root(),
                            "--backend", "sim", "--no-agent", "--quick", "--json"},
                           Env());
  ASSERT_NE(r.exit_code, 124) << "tarmac doctor hung on a FIFO";
  json report = json::parse(r.out, nullptr, false);
  ASSERT_TRUE(report.is_object()) << r.out << r.err;
  EXPECT_TRUE(report["questions"].is_array()) << r.out;
}

TEST_F(DoctorTest, StorageAndNetworkThroughputAreMeasuredWhenAskedFor) {
  UseScenario("healthy-lab.toml");
  PlantHealthyHost(json::parse(Tarmac({"status", "--json", "--backend", "sim", "--no-agent"}).out));
  std::string data = dir_.path() + "/data";
  std::filesystem::create_directories(data);
  std::vector<std::string> common = {"--json", "--backend",       "sim",      "--no-agent",
                                     "--only", "storage,network", "--window", "0.2"};
  auto run = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = common;
    args.insert(args.end(), extra.begin(), extra.end());
    RunResult r = Doctor(args);
    json j = json::parse(r.out, nullptr, false);
    EXPECT_TRUE(j.is_object()) << r.out << r.err;
    return std::make_pair(r.exit_code, j);
  };
  // Measured for real; a data rate the folder cannot give is a warning, with
  // the numbers; the test file is gone afterwards. (The rate expected of a
  // fine folder is 1 MB/s: a busy test machine's disk is no finding.)
  auto [fine, measured] = run({"--storage", data, "--storage-size", "8MiB", "--storage-expect", "1"});
  EXPECT_EQ(fine, 0) << measured.dump(1);
  ASSERT_EQ(Findings(measured, "storage").size(), 1u) << measured.dump(1);
  EXPECT_EQ(Findings(measured, "storage")[0]["severity"], "info");
  EXPECT_NE(
      Findings(measured, "storage")[0]["evidence"].get<std::string>().find("8 MiB test file in " + data),
      std::string::npos);
  auto [slow, too_slow] = run({"--storage", data, "--storage-size", "8MiB", "--storage-expect", "1e12"});
  EXPECT_EQ(slow, 4) << too_slow.dump(1);
  EXPECT_TRUE(HasFinding(too_slow, "storage", "warning", -1, "under the 1000000000000 MB/s expected"))
      << too_slow.dump(1);
  EXPECT_TRUE(std::filesystem::is_empty(data));
  // --quick measures nothing, and says so.
  auto [quick, skipped] = run({"--storage", data, "--quick"});
  EXPECT_EQ(quick, 0);
  EXPECT_EQ(skipped["skipped"][0]["why"], "--quick: no throughput test") << skipped.dump(1);
  // A folder that is not one, or a size out of range, is refused up front.
  EXPECT_EQ(Doctor({"--storage", data + "/missing", "--backend", "sim", "--no-agent"}).exit_code, 2);
  RunResult size = Doctor({"--storage", data, "--storage-size", "1KiB", "--backend", "sim", "--no-agent"});
  EXPECT_EQ(size.exit_code, 2);
  EXPECT_NE(size.err.find("--storage-size: '1KiB' is not a size from 1MiB to 64GiB"), std::string::npos)
      << size.err;
  // The network, through a real iperf3 server on this machine.
  if (RunCommand({"sh", "-c", "command -v iperf3"}, {}).exit_code != 0)
    GTEST_SKIP() << "iperf3 is not installed";
  int port = 20000 + static_cast<int>(::getpid() % 20000);
  children_.push_back(
      std::make_unique<Child>(std::vector<std::string>{"iperf3", "-s", "-1", "-p", std::to_string(port)},
                              Env(), dir_.path() + "/iperf3.log"));
  std::string server = "127.0.0.1:" + std::to_string(port);
  std::pair<int, json> net;
  for (int i = 0; i < 50; ++i) {  // Until the server listens (bounded).
    net = run({"--network", server, "--network-seconds", "1"});
    if (!Findings(net.second, "network").empty() &&
        Findings(net.second, "network")[0]["summary"] != "the iperf3 server cannot be reached") {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_EQ(Findings(net.second, "network").size(), 1u) << net.second.dump(1);
  EXPECT_NE(Findings(net.second, "network")[0]["evidence"].get<std::string>().find("iperf3 to " + server),
            std::string::npos)
      << net.second.dump(1);
  // Nobody listens on the next port: a warning that says so.
  auto [down, unreachable] =
      run({"--network", "127.0.0.1:" + std::to_string(port + 1), "--network-seconds", "1"});
  EXPECT_EQ(down, 4) << unreachable.dump(1);
  EXPECT_TRUE(HasFinding(unreachable, "network", "warning", -1, "the iperf3 server cannot be reached"))
      << unreachable.dump(1);
}

TEST_F(DoctorTest, TheAgentRunsTheChecksOnAScheduleAsEventsMetricsAndHealth) {
  UseScenario("faults.toml");
  StartAgent(
      {"--config",
       dir_.Write("agent.toml", "[sampler]\nfast_interval = \"100ms\"\n[doctor]\ninterval = \"10s\"\n")});
  // The first run is at the start: the lost GPU and the ECC errors are events.
  auto events = [&] {
    ipc::Request r;
    r.method = "events";
    r.params = {{"limit", 1000}};
    Result<json> answer = ipc::CallAgent(Socket(), r, std::chrono::seconds(5));
    return answer.ok() ? answer.value()["events"] : json::array();
  };
  auto has_event = [&](const std::string& text) {
    for (const json& e : events()) {
      if (e["kind"] == "doctor_finding" && e["detail"].get<std::string>().find(text) != std::string::npos)
        return true;
    }
    return false;
  };
  bool found = false;
  for (int i = 0; i < 100 && !found; ++i) {
    found = has_event("[critical] visibility: gpu 1 is lost");
    if (!found) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(found) << events().dump(1);
  EXPECT_TRUE(has_event("[critical] ecc: gpu 2 had uncorrectable memory errors")) << events().dump(1);
  EXPECT_TRUE(has_event("[critical] pcie: gpu 2's PCIe link runs at x8 of x16")) << events().dump(1);
  // /metrics counts them by check and severity; checks with none say 0.
  std::string page = HttpGet("/metrics");
  EXPECT_NE(page.find("# TYPE tarmac_doctor_finding gauge"), std::string::npos) << page;
  EXPECT_NE(page.find("tarmac_doctor_finding{hostname=\""), std::string::npos);
  auto sample = [&](const std::string& check, const std::string& severity) {
    std::string key = "check=\"" + check + "\",severity=\"" + severity + "\"} ";
    size_t at = page.find(key);
    return at == std::string::npos ? -1.0 : std::stod(page.substr(at + key.size()));
  };
  EXPECT_EQ(sample("ecc", "critical"), 1) << page;
  EXPECT_EQ(sample("pcie", "critical"), 1) << page;
  EXPECT_EQ(sample("persistence", "warning"), 0) << page;
  // /health names the critical findings.
  std::string health = HttpGet("/health");
  EXPECT_NE(health.find("doctor: "), std::string::npos) << health;
  EXPECT_NE(health.find("gpu 2 had uncorrectable memory errors"), std::string::npos) << health;
  // Each finding is one short event: its summary, not the evidence and the
  // advice (tarmac doctor shows those).
  for (const json& e : events()) {
    if (e["kind"] != "doctor_finding") continue;
    std::string detail = e["detail"].get<std::string>();
    EXPECT_EQ(detail.find("next:"), std::string::npos) << detail;
    EXPECT_LT(detail.size(), 160u) << detail;
  }
  // `tarmac events --kind --since` shows just those.
  RunResult only = Tarmac({"events", "--kind", "doctor_finding", "--since", "1h", "--socket", Socket()});
  ASSERT_EQ(only.exit_code, 0) << only.err;
  EXPECT_NE(only.out.find("gpu 1 is lost"), std::string::npos) << only.out;
  std::istringstream lines(only.out);
  std::string line;
  std::getline(lines, line);  // The header.
  while (std::getline(lines, line)) {
    size_t columns = std::count_if(line.begin(), line.end(), [](char c) { return (c & 0xc0) != 0x80; });
    EXPECT_LE(columns, 100u) << line;
    // An event's line, or its detail carried onto the next (indented).
    EXPECT_TRUE(line.find("doctor_finding") != std::string::npos || line.rfind("          ", 0) == 0) << line;
  }
  RunResult none =
      Tarmac({"events", "--kind", "doctor_finding", "--since", "@4102444800", "--socket", Socket()});
  EXPECT_EQ(none.out, "No events match.\n") << none.out;
  RunResult bad = Tarmac({"events", "--since", "yesterday-ish", "--socket", Socket()});
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_NE(bad.err.find("--since"), std::string::npos) << bad.err;
}

TEST_F(DoctorTest, ADisabledScheduleRunsNothing) {
  UseScenario("faults.toml");
  StartAgent({"--config",
              dir_.Write("agent.toml", "[sampler]\nfast_interval = \"100ms\"\n[doctor]\nenabled = false\n")});
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  std::string page = HttpGet("/metrics");
  EXPECT_NE(page.find("tarmac_leases"), std::string::npos) << page;  // The agent's own families are there...
  EXPECT_EQ(page.find("tarmac_doctor_finding"), std::string::npos) << page;  // ...the doctor's are not.
  EXPECT_EQ(HttpGet("/health").find("doctor: "), std::string::npos);
}

}  // namespace
}  // namespace tarmac::testing
