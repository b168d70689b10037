// SPDX-License-Identifier: Apache-2.0
//
// The device plugin's figures, against baselines in the same run, with a
// real agent over the fake libnvidia-ml (8 simulated GPUs, default 1 s
// sampling) and the tests' kubelet stand-in on real Unix sockets:
//   1. Allocate latency (p50, p99, max) over N calls, each one a new pod
//      lease saved to the lease state (the previous pod's lease on that GPU
//      ends), against GetDevicePluginOptions on the same socket (the gRPC
//      round trip alone).
//   2. Health change to the kubelet: a GPU falls off the bus at a known time
//      of the simulated world; time until the kubelet's stream says Unhealthy.
//   3. RSS of the agent with the plugin and pod-resources reader on, against
//      the same agent without [kubernetes].
//   4. /metrics latency while the pod-resources API hangs, against the same
//      agent while it answers.
// Usage: kube_plugin_bench BUILD_DIR SOURCE_DIR [ALLOCATIONS]
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <regex>
#include <sstream>

#include "testutil/kubelet_standin.h"
#include "testutil/testutil.h"

using tarmac::testing::Child;
using tarmac::testing::KubeletStandIn;
using tarmac::testing::PodResourcesStandIn;
using tarmac::testing::TempDir;
using Clock = std::chrono::steady_clock;

namespace {

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

double RssMiB(pid_t pid) {
  std::string status = Read("/proc/" + std::to_string(pid) + "/status");
  std::smatch m;
  if (!std::regex_search(status, m, std::regex(R"(VmRSS:\s+(\d+) kB)"))) return -1;
  return std::stod(m[1].str()) / 1024.0;
}

int HttpPort(const std::string& log) {
  std::smatch m;
  if (!std::regex_search(log, m, std::regex(R"(listening on http://127\.0\.0\.1:(\d+)/metrics)"))) return 0;
  return std::stoi(m[1].str());
}

// GET /metrics; the whole response.
std::string Scrape(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return "";
  }
  std::string request = "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  (void)!::write(fd, request.data(), request.size());
  std::string out;
  char buf[65536];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return out;
}

struct Quantiles {
  double p50, p99, max;
};
Quantiles Of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return {v[v.size() / 2], v[std::min(v.size() - 1, v.size() * 99 / 100)], v.back()};
}

struct Agent {
  TempDir dir;
  std::unique_ptr<Child> child;
  std::string log() const { return Read(dir.path() + "/agent.log"); }
};

// An agent over the fake NVML serving `scenario`, with `extra` config.
std::unique_ptr<Agent> StartAgent(const std::string& build, const std::string& scenario,
                                  const std::string& extra) {
  auto a = std::make_unique<Agent>();
  std::string world = a->dir.path() + "/world";
  std::string config = a->dir.Write("agent.toml", "[doctor]\nenabled = false\n" + extra);
  std::string sc = a->dir.Write("scenario.toml", scenario);
  std::map<std::string, std::string> env = {{"TARMAC_SIM_SCENARIO", sc}, {"TARMAC_SIM_DIR", world}};
  a->child = std::make_unique<Child>(
      std::vector<std::string>{build + "/bin/tarmacd", "--config", config, "--backend", "nvml",
                               "--nvml-library", build + "/fakenvml/libnvidia-ml.so.1", "--socket",
                               a->dir.path() + "/t.sock", "--state-dir", a->dir.path() + "/state",
                               "--http-listen", "127.0.0.1:0"},
      env, a->dir.path() + "/agent.log");
  for (int i = 0; i < 300 && HttpPort(a->log()) == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  return a;
}

std::string KubeConfig(const std::string& plugin_dir, const std::string& pod_socket) {
  return "[kubernetes]\nenabled = true\ndevice_plugin_dir = \"" + plugin_dir +
         "\"\npod_resources_socket = \"" + pod_socket +
         "\"\npod_resources_interval = \"1s\"\nkubelet_timeout = \"500ms\"\n";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: kube_plugin_bench BUILD_DIR SOURCE_DIR [ALLOCATIONS]\n");
    return 2;
  }
  std::string build = argv[1];
  int allocations = argc > 3 ? std::atoi(argv[3]) : 2000;
  const int fall_at_s = 8;
  const int hang_at_s = 14;
  std::string scenario =
      "[[gpu]]\ncount = 8\nnvlink = \"all\"\n[[fault]]\nkind = \"fall_off_bus\"\ngpu = 7\nat = \"" +
      std::to_string(fall_at_s) + "s\"\n[[fault]]\nkind = \"nvml_hang\"\ngpu = 6\nat = \"" +
      std::to_string(hang_at_s) + "s\"\n";

  TempDir kube;
  std::string plugin_dir = kube.path() + "/device-plugins";
  std::string pod_socket = kube.path() + "/pod-resources/kubelet.sock";
  KubeletStandIn kubelet(plugin_dir);
  PodResourcesStandIn pods(pod_socket);
  kubelet.Start();
  pods.Start();
  std::unique_ptr<Agent> agent = StartAgent(build, scenario, KubeConfig(plugin_dir, pod_socket));
  if (!kubelet.WaitForRegistrations(1)) {
    std::fprintf(stderr, "the plugin did not register:\n%s\n", agent->log().c_str());
    return 1;
  }
  kubelet.Watch();
  auto first =
      kubelet.WaitForList([](const v1beta1::ListAndWatchResponse& l) { return l.devices_size() == 8; });
  if (!first) {
    std::fprintf(stderr, "no device list\n");
    return 1;
  }
  std::vector<std::string> ids;
  for (const v1beta1::Device& d : first->list.devices()) ids.push_back(d.id());
  std::string lost = ids[7];

  // 1. Allocate latency, against the bare round trip.
  auto stub = kubelet.Plugin();
  std::vector<double> allocate_ms, options_ms;
  for (int i = 0; i < allocations; ++i) {
    v1beta1::AllocateRequest request;
    request.add_container_requests()->add_devices_ids(ids[static_cast<size_t>(i % 7)]);
    v1beta1::AllocateResponse response;
    grpc::ClientContext c1;
    auto t0 = Clock::now();
    grpc::Status s = stub->Allocate(&c1, request, &response);
    auto t1 = Clock::now();
    if (!s.ok()) {
      if (s.error_message().find("unhealthy") != std::string::npos) continue;  // A fault came meanwhile.
      std::fprintf(stderr, "Allocate: %s\n", s.error_message().c_str());
      return 1;
    }
    allocate_ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    v1beta1::Empty empty;
    v1beta1::DevicePluginOptions options;
    grpc::ClientContext c2;
    auto t2 = Clock::now();
    stub->GetDevicePluginOptions(&c2, empty, &options);
    options_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t2).count());
  }
  Quantiles a = Of(allocate_ms), o = Of(options_ms);
  std::printf("Allocate (a pod lease saved each)   p50 %6.3f ms  p99 %6.3f ms  max %6.3f ms  (%zu calls)\n",
              a.p50, a.p99, a.max, allocate_ms.size());
  std::printf("baseline: gRPC round trip alone     p50 %6.3f ms  p99 %6.3f ms  max %6.3f ms\n", o.p50, o.p99,
              o.max);

  // 2. Health change: the fault's time in the world, to the stream.
  std::string epoch_text = Read(agent->dir.path() + "/world/epoch");
  double epoch_s = std::stod(epoch_text) / 1e9;  // Nanoseconds since the Unix epoch.
  auto unhealthy = kubelet.WaitForList([&](const v1beta1::ListAndWatchResponse& l) {
    return KubeletStandIn::HealthOf(l, lost) == "Unhealthy";
  });
  if (!unhealthy) {
    std::fprintf(stderr, "GPU 7 never turned Unhealthy\n");
    return 1;
  }
  // Steady time of the list, mapped to wall time now.
  double now_wall =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  double list_wall = now_wall - std::chrono::duration<double>(Clock::now() - unhealthy->at).count();
  double fault_wall = epoch_s + fall_at_s;
  std::printf(
      "health change to the kubelet        %6.0f ms after the GPU fell off the bus (sampling every 1 s)\n",
      (list_wall - fault_wall) * 1000);
  auto hung = kubelet.WaitForList([&](const v1beta1::ListAndWatchResponse& l) {
    return KubeletStandIn::HealthOf(l, ids[6]) == "Unhealthy";
  });
  if (hung) {
    double now2 = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    double hung_wall = now2 - std::chrono::duration<double>(Clock::now() - hung->at).count();
    std::printf(
        "health change to the kubelet        %6.0f ms after the GPU's driver calls hung (call_timeout 2 s, "
        "sampling every 1 s)\n",
        (hung_wall - (epoch_s + hang_at_s)) * 1000);
  }

  // 3. RSS, against the same agent without [kubernetes].
  std::unique_ptr<Agent> plain = StartAgent(build, scenario, "");
  std::this_thread::sleep_for(std::chrono::seconds(3));
  std::printf("agent RSS, 8 GPUs: with plugin and pod resources %5.1f MiB; without [kubernetes] %5.1f MiB\n",
              RssMiB(agent->child->pid()), RssMiB(plain->child->pid()));

  // 4. Scrapes while List hangs, against while it answers.
  int port = HttpPort(agent->log());
  auto scrape_ms = [&](int n) {
    std::vector<double> v;
    for (int i = 0; i < n; ++i) {
      auto t0 = Clock::now();
      std::string page = Scrape(port);
      if (page.find("200 OK") == std::string::npos) std::fprintf(stderr, "scrape failed\n");
      v.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    }
    return Of(v);
  };
  Quantiles answering = scrape_ms(200);
  pods.Hang(true);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // A List is in flight, hanging.
  Quantiles hanging = scrape_ms(200);
  pods.Hang(false);
  std::printf("/metrics while List answers         p50 %6.3f ms  p99 %6.3f ms  max %6.3f ms\n", answering.p50,
              answering.p99, answering.max);
  std::printf(
      "/metrics while List hangs           p50 %6.3f ms  p99 %6.3f ms  max %6.3f ms  (%d List calls)\n",
      hanging.p50, hanging.p99, hanging.max, pods.calls());
  kubelet.Stop();
  pods.Stop();
  return 0;
}
