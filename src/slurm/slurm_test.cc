// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <tuple>

#include "slurm/gres_conf.h"
#include "slurm/job_answer_json.h"
#include "slurm/job_request.h"

namespace tarmac::slurm {
namespace {

// Four H100s: NVLink pairs (0,1) and (2,3); two NUMA nodes.
node::NodeView Machine() {
  node::NodeView f;
  f.system.driver_version = "580.65.06";
  for (int i = 0; i < 4; ++i) {
    node::GpuView g;
    g.info.index = i;
    g.info.minor_number = i;
    g.info.name = "NVIDIA H100 80GB HBM3";
    g.info.pci_bus_id = "00000000:1" + std::to_string(i) + ":00.0";
    g.info.cpu_affinity = i < 2 ? "0-31" : "32-63";
    f.gpus.push_back(g);
  }
  for (int i = 0; i < 4; ++i) {
    const std::string& peer = f.gpus[static_cast<size_t>(i ^ 1)].info.pci_bus_id;
    f.gpus[static_cast<size_t>(i)].info.nvlink_peer_bus_ids = {peer};
  }
  return f;
}

TEST(GresConfTest, OneLinePerGpuWithTypeFileCoresAndLinks) {
  std::string text = RenderGresConf(Machine(), "node7");
  EXPECT_NE(
      text.find(
          "NodeName=node7 Name=gpu Type=nvidia_h100_80gb_hbm3 File=/dev/nvidia0 Cores=0-31 Links=-1,1,0,0\n"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("NodeName=node7 Name=gpu Type=nvidia_h100_80gb_hbm3 File=/dev/nvidia3 Cores=32-63 "
                      "Links=0,0,1,-1\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("NodeName=node7 ... Gres=gpu:nvidia_h100_80gb_hbm3:4\n"), std::string::npos) << text;
  // Without NVLink, no Links=; without an affinity, no Cores=.
  node::NodeView plain = Machine();
  for (node::GpuView& g : plain.gpus) {
    g.info.nvlink_peer_bus_ids.clear();
    g.info.cpu_affinity.reset();
  }
  text = RenderGresConf(plain, "n");
  EXPECT_NE(text.find("NodeName=n Name=gpu Type=nvidia_h100_80gb_hbm3 File=/dev/nvidia2\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("Links=-1"), std::string::npos);
  EXPECT_NE(RenderGresConf(node::NodeView(), "n").find("No GPU was found"), std::string::npos);
}

TEST(GresConfTest, TypesAreSlurmsLowercaseNames) {
  EXPECT_EQ(GresType("NVIDIA H100 80GB HBM3"), "nvidia_h100_80gb_hbm3");
  EXPECT_EQ(GresType("Tesla T4"), "tesla_t4");
  EXPECT_EQ(GresType("NVIDIA A100-SXM4-40GB"), "nvidia_a100_sxm4_40gb");
  EXPECT_EQ(GresType("  "), "gpu");
}

TEST(GresConfTest, TheEpilogsLineSaysHowTheJobUsedItsGpus) {
  nlohmann::json answer = {{"job", "42"},
                           {"gpus", {0, 1}},
                           {"held_seconds", 4680},
                           {"idle_gpu_seconds", 6840},
                           {"mean_utilization_ratio", 0.04},
                           {"memory_max_bytes", int64_t{12} << 30},
                           {"terminated", {{{"pid", 7}}}}};
  EXPECT_EQ(
      EpilogSummary(EpilogAnswerFromJson(answer).value()),
      "tarmac: job 42: 2 GPUs for 1.30 h, mean 4 %, 1.90 GPU-hours idle, peak 12.0 GiB; 1 process left on "
      "its GPUs terminated");
  answer["mean_utilization_ratio"] = nullptr;
  answer["terminated"] = nlohmann::json::array();
  EXPECT_EQ(EpilogSummary(EpilogAnswerFromJson(answer).value()),
            "tarmac: job 42: 2 GPUs for 1.30 h, mean unknown, 1.90 GPU-hours idle, peak 12.0 GiB");
  // An answer of the wrong shape is a clear error, not a crash.
  answer["held_seconds"] = "long";
  EXPECT_EQ(EpilogAnswerFromJson(answer).status().code(), StatusCode::kCorruption);
  EXPECT_FALSE(PrologAnswerFromJson({{"lease", {{"id", "x"}}}}).ok());
  EXPECT_EQ(PrologAnswerFromJson({{"job", "42"}, {"lease", {{"id", 7}, {"gpus", {0, 2}}}}}).value().gpus,
            (std::vector<int>{0, 2}));
}

TEST(GresConfTest, TheJobsGpusComeFromSlurmsEnvironment) {
  EXPECT_EQ(JobGpus({{"SLURM_JOB_GPUS", "0,2"}}).value(), (std::vector<int>{0, 2}));
  EXPECT_EQ(JobGpus({{"CUDA_VISIBLE_DEVICES", "3"}}).value(), (std::vector<int>{3}));
  EXPECT_TRUE(JobGpus({}).value().empty());
  EXPECT_TRUE(JobGpus({{"CUDA_VISIBLE_DEVICES", "NoDevFiles"}}).value().empty());
  Result<std::vector<int>> bad = JobGpus({{"SLURM_JOB_GPUS", "GPU-abc"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("SLURM_JOB_GPUS='GPU-abc'"), std::string::npos);
}

// A GPU in MIG mode is declared by its instances: Type= the profile and
// MultipleFiles= its GPU's device file and the instance's capability files,
// from the driver's mig-minors; an instance without minors is left out, saying so.
TEST(GresConfTest, MigInstancesAreDeclaredWithTheirCapabilityFiles) {
  node::NodeView f = Machine();
  f.gpus.resize(2);
  f.gpus[1].info.nvlink_peer_bus_ids.clear();
  f.gpus[0].info.nvlink_peer_bus_ids.clear();
  for (int gi : {1, 2}) {
    node::MigInstance m;
    m.uuid = "MIG-" + std::to_string(gi);
    m.gpu_instance_id = gi;
    m.profile = gi == 1 ? "3g.40gb" : "1g.10gb";
    f.gpus[1].sample.mig_instances.push_back(m);
  }
  std::string minors =
      "config 1\nmonitor 2\ngpu1/gi1/access 12\ngpu1/gi1/ci0/access 13\ngpu1/gi9/access 40\n";
  std::string text = RenderGresConf(f, "n1", "/dev", minors);
  EXPECT_NE(text.find("NodeName=n1 Name=gpu Type=nvidia_h100_80gb_hbm3 File=/dev/nvidia0 Cores=0-31\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("NodeName=n1 Name=gpu Type=3g.40gb "
                      "MultipleFiles=/dev/nvidia1,/dev/nvidia-caps/nvidia-cap12,/dev/nvidia-caps/"
                      "nvidia-cap13 Cores=0-31\n"),
            std::string::npos)
      << text;
  EXPECT_NE(
      text.find("# GPU 1 MIG 1g.10gb (GPU instance 2): left out, no capability minors for it in mig-minors"),
      std::string::npos)
      << text;
  EXPECT_EQ(text.find("File=/dev/nvidia1 "), std::string::npos) << "the split GPU is not declared whole";
  EXPECT_NE(text.find("Gres=gpu:3g.40gb:1,gpu:nvidia_h100_80gb_hbm3:1"), std::string::npos) << text;
  std::string without = RenderGresConf(f, "n1", "/dev");
  EXPECT_NE(without.find("(/proc/driver/nvidia-caps/mig-minors unreadable)"), std::string::npos) << without;
}

// A job's cgroup (v1) names its GPUs by their device rules: nvidiactl and
// other devices are not GPUs, and nothing readable means none.
TEST(GresConfTest, AJobsCgroupDeviceRulesNameItsGpus) {
  EXPECT_EQ(GpusOfDevicesList("c 1:3 rwm\nc 195:255 rw\nc 195:2 rw\nc 195:0 rw\nc 195:2 rw\nc 508:1 rw\n"),
            (std::vector<int>{0, 2}));
  EXPECT_TRUE(GpusOfDevicesList("a *:* rwm\n").empty());
  EXPECT_TRUE(GpusOfDevicesList("c 195:x rw\nc 195:1234 rw\n").empty());
  // nvidia-modeset and minors no GPU has (found by slurm_inputs_fuzzer).
  EXPECT_TRUE(GpusOfDevicesList("c 195:254 rw\nc 195:261 rw\nc 195:755 rwm\n").empty());
  EXPECT_TRUE(GpusOfDevicesList("").empty());
}

// The prolog's request is one format for both sides: what the command
// builds from Slurm's environment, the agent reads back the same; the job's
// cgroup counts only when the environment names no GPU.
TEST(JobRequestTest, ThePrologsRequestGoesFromTheEnvironmentToTheAgentWhole) {
  std::map<std::string, std::string> env = {{"SLURM_JOB_ID", "42_7"},
                                            {"SLURM_JOB_UID", "1001"},
                                            {"SLURM_JOB_USER", "alice"},
                                            {"SLURM_JOB_PARTITION", "gpu"},
                                            {"SLURM_JOB_GPUS", "2,0"}};
  Result<PrologRequest> request = PrologRequestFromEnvironment(env, std::string("c 195:5 rw\n"));
  ASSERT_TRUE(request.ok()) << request.status().message();
  EXPECT_EQ(request.value().gpus, (std::vector<int>{2, 0}));
  Result<PrologRequest> back = PrologRequestFromJson(PrologRequestToJson(request.value()));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back.value().job, "42_7");
  EXPECT_EQ(back.value().uid, 1001);
  EXPECT_EQ(back.value().user, "alice");
  EXPECT_EQ(back.value().partition, std::optional<std::string>("gpu"));
  EXPECT_EQ(back.value().gpus, (std::vector<int>{2, 0}));

  env.erase("SLURM_JOB_GPUS");
  env.erase("SLURM_JOB_PARTITION");
  request = PrologRequestFromEnvironment(env, std::string("c 195:5 rw\n"));
  ASSERT_TRUE(request.ok());
  EXPECT_EQ(request.value().gpus, (std::vector<int>{5}));
  EXPECT_FALSE(PrologRequestToJson(request.value()).contains("partition"));
}

TEST(JobRequestTest, AMissingOrWrongVariableIsNamed) {
  std::map<std::string, std::string> env = {
      {"SLURM_JOB_ID", "42"}, {"SLURM_JOB_UID", "1001"}, {"SLURM_JOB_USER", "alice"}};
  auto message = [](const std::map<std::string, std::string>& e) {
    Result<PrologRequest> r = PrologRequestFromEnvironment(e, std::nullopt);
    return r.ok() ? std::string("ok") : r.status().message();
  };
  EXPECT_EQ(message(env), "ok");
  for (const auto& [name, value, expected] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"SLURM_JOB_ID", "", "SLURM_JOB_ID is not set"},
           {"SLURM_JOB_ID", "../x", "SLURM_JOB_ID='../x'"},
           {"SLURM_JOB_UID", "-1", "SLURM_JOB_UID"},
           {"SLURM_JOB_UID", "99999999999", "SLURM_JOB_UID"},
           {"SLURM_JOB_USER", "", "SLURM_JOB_USER"},
           {"SLURM_JOB_GPUS", "a", "SLURM_JOB_GPUS='a'"}}) {
    std::map<std::string, std::string> bad = env;
    bad[name] = value;
    EXPECT_NE(message(bad).find(expected), std::string::npos) << name << "=" << value << ": " << message(bad);
  }
}

// The agent takes nothing it cannot show or act on safely: each member is
// checked and named.
TEST(JobRequestTest, TheAgentRefusesEachBadMemberByName) {
  nlohmann::json good = {{"job", "42"}, {"uid", 1001}, {"user", "alice"}, {"gpus", {0, 1}}};
  ASSERT_TRUE(PrologRequestFromJson(good).ok());
  for (const auto& [member, value, expected] :
       std::vector<std::tuple<std::string, nlohmann::json, std::string>>{
           {"job", "4a", "params.job"},
           {"job", 42, "params.job"},
           {"uid", -1, "params.uid"},
           {"uid", int64_t{4294967295}, "params.uid"},
           {"uid", "1001", "params.uid"},
           {"user", "a/b", "params.user"},
           {"user", std::string(257, 'a'), "params.user"},
           {"user", "al\u202eice", "params.user"},
           {"partition", "", "params.partition"},
           {"partition", 3, "params.partition"},
           {"gpus", "0,1", "params.gpus"},
           {"gpus", {0, 0}, "GPU 0 named twice"},
           {"gpus", {-1}, "params.gpus: -1"},
           {"gpus", {1.5}, "params.gpus: 1.5"}}) {
    nlohmann::json bad = good;
    bad[member] = value;
    Result<PrologRequest> r = PrologRequestFromJson(bad);
    ASSERT_FALSE(r.ok()) << member << "=" << value.dump();
    EXPECT_NE(r.status().message().find(expected), std::string::npos) << r.status().message();
  }
  EXPECT_EQ(JobOfParams({{"job", "7+1"}}).value(), "7+1");
  EXPECT_FALSE(JobOfParams(nlohmann::json::object()).ok());
}

}  // namespace
}  // namespace tarmac::slurm
