// SPDX-License-Identifier: Apache-2.0
//
// tarmac as the node's device plugin and pod-aware exporter, driven by a
// kubelet stand-in over the kubelet's own gRPC services and sockets: a real
// agent over the fake NVML registers, streams its GPUs' health, prefers
// NVLink pairs, turns Allocate into pod leases, re-registers when the
// kubelet restarts, and labels GPUs with the pods the kubelet allocated
// them to. Bad input: a refused registration, unknown and unhealthy IDs, a
// pod-resources API that hangs.
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <sstream>

#include "testutil/kubelet_standin.h"
#include "testutil/lease_fixture.h"
#include "testutil/mig_views.h"

namespace tarmac::testing {
namespace {

using nlohmann::json;

// Two NVLink pairs on two NUMA nodes.
constexpr const char* kTwoPairs = R"(
[[gpu]]
nvlink = [1]
numa_node = 0
[[gpu]]
nvlink = [0]
numa_node = 0
[[gpu]]
nvlink = [3]
numa_node = 1
[[gpu]]
nvlink = [2]
numa_node = 1
)";

class KubernetesTest : public LeaseFixture {
 protected:
  std::string PluginDir() const { return dir_.path() + "/device-plugins"; }
  std::string PodResourcesSocket() const { return dir_.path() + "/pod-resources/kubelet.sock"; }

  void SetUp() override {
    LeaseFixture::SetUp();
    kubelet_ = std::make_unique<KubeletStandIn>(PluginDir());
    pods_ = std::make_unique<PodResourcesStandIn>(PodResourcesSocket());
  }
  void TearDown() override {
    kubelet_->Stop();
    pods_->Stop();
    LeaseFixture::TearDown();
  }

  Child* StartKubeAgent(const std::string& more = "") {
    return StartLeaseAgent("[kubernetes]\nenabled = true\ndevice_plugin_dir = \"" + PluginDir() +
                           "\"\npod_resources_socket = \"" + PodResourcesSocket() +
                           "\"\npod_resources_interval = \"1s\"\nkubelet_timeout = \"500ms\"\n" + more);
  }

  grpc::Status Allocate(const std::vector<std::string>& ids, v1beta1::AllocateResponse* out,
                        const std::string& resource = "") {
    v1beta1::AllocateRequest request;
    v1beta1::ContainerAllocateRequest* c = request.add_container_requests();
    for (const std::string& id : ids) c->add_devices_ids(id);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    return kubelet_->Plugin(resource)->Allocate(&context, request, out);
  }

  std::vector<std::string> Preferred(const std::vector<std::string>& available,
                                     const std::vector<std::string>& must, int size) {
    v1beta1::PreferredAllocationRequest request;
    v1beta1::ContainerPreferredAllocationRequest* c = request.add_container_requests();
    for (const std::string& id : available) c->add_available_deviceids(id);
    for (const std::string& id : must) c->add_must_include_deviceids(id);
    c->set_allocation_size(size);
    v1beta1::PreferredAllocationResponse response;
    grpc::ClientContext context;
    grpc::Status s = kubelet_->Plugin()->GetPreferredAllocation(&context, request, &response);
    EXPECT_TRUE(s.ok()) << s.error_message();
    if (!s.ok() || response.container_responses_size() != 1) return {};
    std::vector<std::string> ids(response.container_responses(0).deviceids().begin(),
                                 response.container_responses(0).deviceids().end());
    std::sort(ids.begin(), ids.end());
    return ids;
  }

  static std::vector<std::string> Sorted(std::vector<std::string> v) {
    std::sort(v.begin(), v.end());
    return v;
  }

  std::unique_ptr<KubeletStandIn> kubelet_;
  std::unique_ptr<PodResourcesStandIn> pods_;
};

TEST_F(KubernetesTest, RegistersStreamsPrefersNvlinkAndAllocatesAsPodLeases) {
  UseScenarioText(kTwoPairs);
  kubelet_->Start();
  pods_->Start();
  StartKubeAgent();
  ASSERT_TRUE(kubelet_->WaitForRegistrations(1)) << ReadLog();
  v1beta1::RegisterRequest r = kubelet_->registrations()[0];
  EXPECT_EQ(r.version(), "v1beta1");
  EXPECT_EQ(r.resource_name(), "nvidia.com/gpu");
  EXPECT_EQ(r.endpoint(), "tarmac-gpu.sock");
  EXPECT_TRUE(r.options().get_preferred_allocation_available());
  EXPECT_TRUE(std::filesystem::exists(PluginDir() + "/" + r.endpoint()));

  std::vector<std::string> u = {Uuid(0), Uuid(1), Uuid(2), Uuid(3)};
  kubelet_->Watch();
  auto first =
      kubelet_->WaitForList([](const v1beta1::ListAndWatchResponse& l) { return l.devices_size() == 4; });
  ASSERT_TRUE(first) << ReadLog();
  for (const v1beta1::Device& d : first->list.devices()) {
    EXPECT_EQ(d.health(), "Healthy") << d.id();
    ASSERT_EQ(d.topology().nodes_size(), 1);
    int gpu = static_cast<int>(std::find(u.begin(), u.end(), d.id()) - u.begin());
    EXPECT_EQ(d.topology().nodes(0).id(), gpu / 2) << d.id();
  }

  // Preferred: an NVLink pair, and the pair of a GPU that must be included.
  std::vector<std::string> pair = Preferred(u, {}, 2);
  EXPECT_TRUE(pair == Sorted({u[0], u[1]}) || pair == Sorted({u[2], u[3]})) << pair.size();
  EXPECT_EQ(Preferred(u, {u[2]}, 2), Sorted({u[2], u[3]}));
  EXPECT_EQ(Preferred({u[0], u[2], u[3]}, {}, 2), Sorted({u[2], u[3]}));

  // Allocate: the container's GPUs, and a pod lease on them.
  v1beta1::AllocateResponse answer;
  grpc::Status s = Allocate({u[0], u[1]}, &answer);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_EQ(answer.container_responses_size(), 1);
  EXPECT_EQ(answer.container_responses(0).envs().at("NVIDIA_VISIBLE_DEVICES"), u[0] + "," + u[1]);
  json leases = Leases();
  ASSERT_EQ(leases.size(), 1u) << leases.dump();
  EXPECT_EQ(leases[0]["kind"], "pod");
  EXPECT_EQ(leases[0]["gpus"], json::array({0, 1}));
  int64_t pod_lease = leases[0]["id"].get<int64_t>();

  // `tarmac run` never gets a GPU a pod holds: a request for GPU 0 waits.
  json asked = Call("lease.request", {{"uuids", {u[0]}}, {"command", "sleep 1"}});
  EXPECT_EQ(asked["state"], "queued") << asked.dump();
  EXPECT_EQ(Leases().size(), 1u);
  // Nor can anyone release the pod's lease: the kubelet ends it.
  RunResult release = T({"release", std::to_string(pod_lease)});
  EXPECT_NE(release.exit_code, 0);
  EXPECT_NE(release.err.find("pod"), std::string::npos) << release.err;

  // A GPU that tarmac leases is not offered to pods while leased.
  json reserved =
      Call("lease.request", {{"uuids", {u[3]}}, {"kind", "reservation"}, {"command", "maintenance"}});
  ASSERT_EQ(reserved["state"], "granted") << reserved.dump();
  auto held = kubelet_->WaitForList([&](const v1beta1::ListAndWatchResponse& l) {
    return KubeletStandIn::HealthOf(l, u[3]) == "Unhealthy";
  });
  ASSERT_TRUE(held) << ReadLog();
  EXPECT_EQ(KubeletStandIn::HealthOf(held->list, u[0]), "Healthy");  // The pod's own GPUs stay offered.
  s = Allocate({u[3]}, &answer);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_NE(s.error_message().find(u[3]), std::string::npos) << s.error_message();
  size_t seen = kubelet_->lists().size();
  RunResult released = T({"release", std::to_string(reserved["lease"]["id"].get<int64_t>())});
  EXPECT_EQ(released.exit_code, 0) << released.err;
  EXPECT_TRUE(kubelet_
                  ->WaitForList(
                      [&](const v1beta1::ListAndWatchResponse& l) {
                        return KubeletStandIn::HealthOf(l, u[3]) == "Healthy";
                      },
                      seen)
                  .has_value());
}

TEST_F(KubernetesTest, AllocateRefusesUnknownAndUnhealthyDevicesByName) {
  UseScenarioText(R"(
[[gpu]]
count = 2
[[fault]]
kind = "fall_off_bus"
gpu = 1
at = "1s"
)");
  kubelet_->Start();
  StartKubeAgent();
  ASSERT_TRUE(kubelet_->WaitForRegistrations(1)) << ReadLog();
  std::string lost = Uuid(1);
  kubelet_->Watch();
  // A GPU lost in the simulated world turns Unhealthy.
  ASSERT_TRUE(kubelet_->WaitForList([&](const v1beta1::ListAndWatchResponse& l) {
    return KubeletStandIn::HealthOf(l, lost) == "Unhealthy";
  })) << ReadLog();
  v1beta1::AllocateResponse answer;
  grpc::Status s = Allocate({"GPU-not-on-this-node"}, &answer);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("GPU-not-on-this-node"), std::string::npos) << s.error_message();
  s = Allocate({lost}, &answer);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_NE(s.error_message().find("unhealthy"), std::string::npos) << s.error_message();
  // Nothing was leased; the agent serves on.
  EXPECT_TRUE(Leases().empty());
  EXPECT_EQ(AgentStatus()["gpus"].size(), 2u);
}

TEST_F(KubernetesTest, AHungGpuIsUnhealthyWhileItHangsAndHealthyAgain) {
  UseScenarioText(R"(
[[gpu]]
count = 2
[[fault]]
kind = "nvml_hang"
gpu = 0
at = "2s"
until = "10s"
)");
  kubelet_->Start();
  StartKubeAgent();
  ASSERT_TRUE(kubelet_->WaitForRegistrations(1)) << ReadLog();
  std::string hung = Uuid(0);
  kubelet_->Watch();
  auto down = kubelet_->WaitForList([&](const v1beta1::ListAndWatchResponse& l) {
    return KubeletStandIn::HealthOf(l, hung) == "Unhealthy";
  });
  ASSERT_TRUE(down) << ReadLog();
  EXPECT_EQ(KubeletStandIn::HealthOf(down->list, Uuid(1)), "Healthy");
  size_t seen = kubelet_->lists().size();
  EXPECT_TRUE(kubelet_->WaitForList(
      [&](const v1beta1::ListAndWatchResponse& l) { return KubeletStandIn::HealthOf(l, hung) == "Healthy"; },
      seen))
      << ReadLog();
}

TEST_F(KubernetesTest, ReRegistersWhenTheKubeletRestartsAndWipesItsFolder) {
  UseScenarioText("[[gpu]]\ncount = 2\n");
  kubelet_->Start();
  StartKubeAgent("cdi = true\n");
  ASSERT_TRUE(kubelet_->WaitForRegistrations(1)) << ReadLog();
  kubelet_->Restart();
  EXPECT_FALSE(std::filesystem::exists(PluginDir() + "/tarmac-gpu.sock"));
  ASSERT_TRUE(kubelet_->WaitForRegistrations(2)) << ReadLog();
  EXPECT_TRUE(std::filesystem::exists(PluginDir() + "/tarmac-gpu.sock"));
  // The new socket serves: the device list comes again.
  kubelet_->Watch();
  EXPECT_TRUE(kubelet_->WaitForList([](const v1beta1::ListAndWatchResponse& l) {
    return l.devices_size() == 2;
  })) << ReadLog();
  EXPECT_NE(ReadLog().find("the kubelet restarted"), std::string::npos);
  // With cdi = true, a container gets CDI device names, not the variable.
  v1beta1::AllocateResponse answer;
  grpc::Status s = Allocate({Uuid(1)}, &answer);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_EQ(answer.container_responses(0).cdi_devices_size(), 1);
  EXPECT_EQ(answer.container_responses(0).cdi_devices(0).name(), "nvidia.com/gpu=" + Uuid(1));
  EXPECT_EQ(answer.container_responses(0).envs().count("NVIDIA_VISIBLE_DEVICES"), 0u);
}

TEST_F(KubernetesTest, ARefusedRegistrationIsReportedRetriedAndTheAgentServesOn) {
  UseScenarioText("[[gpu]]\ncount = 2\n");
  kubelet_->Refuse(grpc::Status(grpc::StatusCode::ALREADY_EXISTS,
                                "resource nvidia.com/gpu is already registered by another plugin"));
  kubelet_->Start();
  StartKubeAgent();
  ASSERT_TRUE(kubelet_->WaitForAttempts(2)) << ReadLog();
  EXPECT_TRUE(WaitForLog("already registered by another plugin")) << ReadLog();
  EXPECT_TRUE(kubelet_->registrations().empty());
  EXPECT_EQ(AgentStatus()["gpus"].size(), 2u);
  std::string health = HttpGet("/health");
  EXPECT_NE(health.find("200 OK"), std::string::npos) << health;
  EXPECT_NE(health.find("kubernetes:"), std::string::npos) << health;
  EXPECT_NE(HttpGet("/metrics").find("tarmac_kube_plugin_registered{hostname="), std::string::npos);
  bool has_event = false;
  for (const json& e : Events()) has_event |= e["kind"] == "kube_plugin_problem";
  EXPECT_TRUE(has_event);
  // Once the kubelet accepts, the plugin registers.
  kubelet_->Refuse(std::nullopt);
  EXPECT_TRUE(kubelet_->WaitForRegistrations(1, std::chrono::seconds(60))) << ReadLog();
}

TEST_F(KubernetesTest, PodsAllocatedGpusCarryTheirPodEvenWithNoProcess) {
  UseScenarioText("[[gpu]]\ncount = 2\nnvlink = \"all\"\n[[gpu]]\nvgpu = true\nvgpu_licensed = false\n");
  kubelet_->Start();
  pods_->Start();
  agent_env_["NODE_NAME"] = "gpu-node-7";  // As the DaemonSet's downward API sets it.
  StartKubeAgent();
  std::string u0 = Uuid(0);
  pods_->SetPod("ml", "train-0", "trainer", {u0});
  // Adopted as a pod lease owned by namespace/pod.
  ASSERT_TRUE(WaitFor([&] {
    json l = Leases();
    return l.size() == 1 && l[0]["user"] == "ml/train-0";
  })) << Leases().dump()
      << ReadLog();
  EXPECT_EQ(Leases()[0]["kind"], "pod");
  // /metrics names the pod on the idle GPU, in both families.
  std::string metrics;
  ASSERT_TRUE(WaitFor([&] {
    metrics = HttpGet("/metrics");
    return metrics.find("pod=\"train-0\"") != std::string::npos;
  })) << metrics;
  EXPECT_NE(metrics.find("tarmac_gpu_pod_allocated{hostname="), std::string::npos);
  EXPECT_NE(metrics.find("pod=\"train-0\",namespace=\"ml\",container=\"trainer\"} 1"), std::string::npos)
      << metrics;
  std::regex dcgm(
      "DCGM_FI_DEV_GPU_UTIL\\{gpu=\"0\",[^}]*pod=\"train-0\",namespace=\"ml\",container=\"trainer\"\\}");
  EXPECT_TRUE(std::regex_search(metrics, dcgm)) << metrics;
  std::regex other("DCGM_FI_DEV_GPU_UTIL\\{gpu=\"1\",[^}]*pod=");
  EXPECT_FALSE(std::regex_search(metrics, other));
  EXPECT_NE(metrics.find("tarmac_kube_pod_resources_up{hostname=\"gpu-node-7\"} 1"), std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("Hostname=\"gpu-node-7\""), std::string::npos);
  // dcgm-exporter's default counters, over the real NVML path: HBM
  // temperature, video engines, NVLink bytes, the last Xid with its labels.
  for (const char* family : {"DCGM_FI_DEV_MEMORY_TEMP{", "DCGM_FI_DEV_ENC_UTIL{", "DCGM_FI_DEV_DEC_UTIL{",
                             "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL{", "DCGM_FI_DEV_PCIE_REPLAY_COUNTER{"}) {
    EXPECT_NE(metrics.find(family), std::string::npos) << family;
  }
  EXPECT_NE(metrics.find("err_code=\"0\",err_msg=\"\"} 0"), std::string::npos);
  // A vGPU guest without its license reads 0; bare-metal GPUs have no series.
  std::regex unlicensed(R"(DCGM_FI_DEV_VGPU_LICENSE_STATUS\{gpu="2",[^}]*\} 0\n)");
  EXPECT_TRUE(std::regex_search(metrics, unlicensed)) << metrics;
  EXPECT_EQ(metrics.find("DCGM_FI_DEV_VGPU_LICENSE_STATUS{gpu=\"0\""), std::string::npos);
  // The seconds the pod held its GPU, counted for fleet accounting.
  std::regex held(
      R"(tarmac_gpu_job_seconds_total\{hostname="gpu-node-7",gpu="0",[^}]*namespace="ml",pod="train-0",state="idle"\} [0-9.]+\n)");
  EXPECT_TRUE(std::regex_search(metrics, held)) << metrics;
  // The pod goes: its lease ends, and its labels with it, but for its
  // final count of held seconds (kept an hour for Prometheus to read).
  pods_->SetPod("ml", "train-0", "trainer", {});
  ASSERT_TRUE(WaitFor([&] { return Leases().empty(); })) << Leases().dump();
  auto labelled_series = [&] {
    std::string page = HttpGet("/metrics"), out;
    std::istringstream lines(page);
    for (std::string line; std::getline(lines, line);) {
      if (line.find("pod=\"train-0\"") != std::string::npos) out += line + "\n";
    }
    return out;
  };
  ASSERT_TRUE(WaitFor([&] {
    std::istringstream left(labelled_series());
    int lines = 0;
    for (std::string line; std::getline(left, line); ++lines) {
      if (line.rfind("tarmac_gpu_job_seconds_total{", 0) != 0) return false;
    }
    return lines > 0;
  })) << labelled_series();
  bool ended = false;
  for (const json& e : Events()) ended |= e["kind"] == "pod_ended";
  EXPECT_TRUE(ended);
}

TEST_F(KubernetesTest, AHangingPodResourcesApiNeverHoldsUpAScrape) {
  UseScenarioText("[[gpu]]\ncount = 2\n");
  pods_->Start();
  pods_->SetPod("ml", "infer-0", "server", {"GPU-x"});
  pods_->Hang(true);
  StartKubeAgent();
  ASSERT_TRUE(WaitFor([&] { return pods_->calls() >= 1; }));
  // While List hangs, every scrape and status call is answered.
  for (int i = 0; i < 5; ++i) {
    std::string metrics = HttpGet("/metrics");
    EXPECT_NE(metrics.find("200 OK"), std::string::npos);
    EXPECT_NE(metrics.find("tarmac_gpu_up"), std::string::npos);
  }
  EXPECT_EQ(AgentStatus()["gpus"].size(), 2u);
  EXPECT_TRUE(WaitForLog("no answer within 500 ms")) << ReadLog();
  pods_->Hang(false);
}

// MIG, mixed strategy: a resource per profile, each its own plugin and
// socket; a container's instances become a pod lease each, named per
// instance from the pod resources, and the instance's metrics carry its pod.
TEST_F(KubernetesTest, TheMixedMigStrategyOffersAResourcePerProfile) {
  UseScenarioText(kSplitAndWholeH100);
  kubelet_->Start();
  pods_->Start();
  StartKubeAgent("mig_strategy = \"mixed\"\n");
  ASSERT_TRUE(kubelet_->WaitForRegistrations(3)) << ReadLog();
  std::map<std::string, std::string> endpoints;
  for (const v1beta1::RegisterRequest& r : kubelet_->registrations())
    endpoints[r.resource_name()] = r.endpoint();
  EXPECT_EQ(endpoints,
            (std::map<std::string, std::string>{{"nvidia.com/gpu", "tarmac-gpu.sock"},
                                                {"nvidia.com/mig-1g.10gb", "tarmac-mig-1g.10gb.sock"},
                                                {"nvidia.com/mig-3g.40gb", "tarmac-mig-3g.40gb.sock"}}));
  json status = AgentStatus();
  std::string small_a = status["gpus"][0]["mig_instances"][1]["uuid"];
  std::string small_b = status["gpus"][0]["mig_instances"][2]["uuid"];
  v1beta1::AllocateResponse answer;
  // The whole-GPU resource has only the GPU without MIG.
  grpc::Status s = Allocate({Uuid(0)}, &answer, "nvidia.com/gpu");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
  s = Allocate({small_a, small_b}, &answer, "nvidia.com/mig-1g.10gb");
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(answer.container_responses(0).envs().at("NVIDIA_VISIBLE_DEVICES"), small_a + "," + small_b);
  json leases = Leases();
  ASSERT_EQ(leases.size(), 2u) << leases.dump();
  EXPECT_EQ(leases[0]["uuids"], json::array({small_a}));
  EXPECT_EQ(leases[1]["uuids"], json::array({small_b}));
  // A tarmac run for a 1g.10gb waits: the pod holds both.
  json asked = Call("lease.request", {{"mig_profile", "1g.10gb"}, {"command", "x"}});
  EXPECT_EQ(asked["state"], "queued") << asked.dump();
  // The pod resources name the pod; status and metrics carry it per instance.
  pods_->SetPod("serve", "infer-0", "server", {small_a, small_b}, "nvidia.com/mig-1g.10gb");
  ASSERT_TRUE(WaitFor([&] {
    json l = Leases();
    return l.size() == 2 && l[0]["user"] == "serve/infer-0" && l[1]["user"] == "serve/infer-0";
  })) << Leases().dump();
  ASSERT_TRUE(WaitFor([&] { return AgentStatus()["gpus"][0]["mig_instances"][1].contains("pod"); }));
  EXPECT_EQ(AgentStatus()["gpus"][0]["mig_instances"][1]["pod"]["name"], "infer-0");
  std::string metrics;
  ASSERT_TRUE(WaitFor([&] {
    metrics = HttpGet("/metrics");
    return metrics.find("GPU_I_ID=\"2\",pod=\"infer-0\",namespace=\"serve\",container=\"server\"}") !=
           std::string::npos;
  })) << metrics;
  EXPECT_EQ(metrics.find("GPU_I_ID=\"1\",pod="), std::string::npos) << "the 3g.40gb instance has no pod";
}

}  // namespace
}  // namespace tarmac::testing
