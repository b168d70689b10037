// SPDX-License-Identifier: Apache-2.0
#include "sim/scenario_parser.h"

#include <gtest/gtest.h>

#include "testutil/scenario_error.h"

namespace tarmac::sim {
namespace {

using testing::ScenarioErrorOf;

TEST(ScenarioParserTest, ParsesGpusWithCountsAndDefaults) {
  Result<Scenario> s = ParseScenario(R"(
name = "two-kinds"
seed = 9
[driver]
version = "570.1"
cuda_version = 12080
[[gpu]]
count = 2
model = "NVIDIA A100-SXM4-40GB"
memory = "40GiB"
power_max_w = 400
power_limit_w = 400
nvlink = "all"
unsupported = ["fan", "serial"]
[[gpu]]
uuid = "GPU-12345678-1234-1234-1234-123456789abc"
pcie_width = 8
numa_node = 1
)",
                                     "x.toml");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  const Scenario& sc = s.value();
  EXPECT_EQ(sc.name, "two-kinds");
  EXPECT_EQ(sc.driver_version, "570.1");
  EXPECT_EQ(sc.cuda_driver_version, 12080);
  ASSERT_EQ(sc.gpus.size(), 3u);
  EXPECT_EQ(sc.gpus[0].memory_total_bytes, int64_t{40} << 30);
  EXPECT_EQ(sc.gpus[1].model, "NVIDIA A100-SXM4-40GB");
  EXPECT_EQ(sc.gpus[0].nvlink_peers, std::vector<int>{1});
  EXPECT_EQ(sc.gpus[1].nvlink_peers, std::vector<int>{0});
  EXPECT_TRUE(sc.gpus[2].nvlink_peers.empty());
  EXPECT_FALSE(sc.gpus[0].Supports("fan"));
  EXPECT_TRUE(sc.gpus[2].Supports("fan"));
  EXPECT_EQ(sc.gpus[2].uuid, "GPU-12345678-1234-1234-1234-123456789abc");
  EXPECT_EQ(sc.gpus[2].index, 2);
  EXPECT_EQ(sc.gpus[2].pcie_width, 8);
  // Derived identities are distinct and stable for a seed.
  EXPECT_NE(sc.gpus[0].uuid, sc.gpus[1].uuid);
  EXPECT_EQ(sc.gpus[0].uuid, ParseScenario("seed = 9\n[[gpu]]\n", "y").value().gpus[0].uuid);
  EXPECT_NE(sc.gpus[0].pci_bus, sc.gpus[1].pci_bus);
}

TEST(ScenarioParserTest, ParsesFaultTimelineInOrder) {
  Result<Scenario> s = ParseScenario(R"(
[[gpu]]
count = 2
[[fault]]
kind = "fall_off_bus"
gpu = 1
at = "2m"
[[fault]]
kind = "thermal_throttle"
gpu = 0
at = "30s"
until = "1m"
[[fault]]
kind = "ecc_error"
gpu = 0
at = 10
type = "uncorrected"
count = 2
)",
                                     "x.toml");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  const std::vector<Fault>& f = s.value().faults;
  ASSERT_EQ(f.size(), 3u);
  EXPECT_EQ(f[0].kind, FaultKind::kEccError);
  EXPECT_EQ(f[0].at, std::chrono::seconds(10));
  EXPECT_TRUE(f[0].is_uncorrected);
  EXPECT_EQ(f[1].kind, FaultKind::kThermalThrottle);
  EXPECT_EQ(*f[1].until, std::chrono::minutes(1));
  EXPECT_EQ(f[2].kind, FaultKind::kFallOffBus);
  EXPECT_EQ(f[2].xid, 79);
}

TEST(ScenarioParserTest, SyntaxErrorNamesFileAndLine) {
  std::string e = ScenarioErrorOf("name = \"x\"\n[[gpu]\n");
  EXPECT_EQ(e.rfind("lab.toml:2:", 0), 0u) << e;
}

TEST(ScenarioParserTest, UnknownKeyNamesFileLineAndKey) {
  std::string e = ScenarioErrorOf("[[gpu]]\nmodel = \"x\"\nmemroy = \"80GiB\"\n");
  EXPECT_EQ(e, "lab.toml:3: key 'gpu[0].memroy': unknown key; did you mean 'memory'?");
}

TEST(ScenarioParserTest, WrongTypeNamesTheKey) {
  std::string e = ScenarioErrorOf("[[gpu]]\npower_max_w = \"lots\"\n");
  EXPECT_EQ(e, "lab.toml:2: key 'gpu[0].power_max_w': expected a number");
}

TEST(ScenarioParserTest, BadSizeNamesTheKeyAndValue) {
  std::string e = ScenarioErrorOf("[[gpu]]\nmemory = \"80 gigs\"\n");
  EXPECT_NE(e.find("lab.toml:2: key 'gpu[0].memory'"), std::string::npos) << e;
  EXPECT_NE(e.find("80 gigs"), std::string::npos) << e;
}

TEST(ScenarioParserTest, RejectsMeaninglessValues) {
  EXPECT_NE(ScenarioErrorOf("[[gpu]]\npcie_width = 0\n").find("gpu[0].pcie_width"), std::string::npos);
  EXPECT_NE(ScenarioErrorOf("[[gpu]]\npower_idle_w = 900\npower_max_w = 700\n").find("power_idle_w"),
            std::string::npos);
  EXPECT_NE(ScenarioErrorOf("[[gpu]]\ncount = 2\nuuid = \"GPU-x\"\n").find("count = 1"), std::string::npos);
  EXPECT_NE(ScenarioErrorOf("[[gpu]]\nunsupported = [\"warp_drive\"]\n").find("unknown field"),
            std::string::npos);
  EXPECT_NE(ScenarioErrorOf("[[gpu]]\nnvlink = [0]\n").find("not another GPU"), std::string::npos);
  EXPECT_NE(ScenarioErrorOf("name = \"x\"\n").find("at least one [[gpu]]"), std::string::npos);
}

TEST(ScenarioParserTest, RejectsBadFaults) {
  EXPECT_EQ(ScenarioErrorOf("[[gpu]]\n[[fault]]\nkind = \"meteor\"\ngpu = 0\n")
                .rfind("lab.toml:2: key 'fault[0].kind'", 0),
            0u);
  EXPECT_NE(ScenarioErrorOf("[[gpu]]\n[[fault]]\nkind = \"xid\"\ngpu = 3\nxid = 13\n").find("no GPU 3"),
            std::string::npos);
  EXPECT_NE(ScenarioErrorOf("[[gpu]]\n[[fault]]\nkind = \"xid\"\ngpu = 0\n").find("needs an xid"),
            std::string::npos);
  EXPECT_NE(ScenarioErrorOf("[[gpu]]\n[[fault]]\nkind = \"thermal_throttle\"\n").find("needs a gpu"),
            std::string::npos);
  EXPECT_NE(ScenarioErrorOf(
                "[[gpu]]\n[[fault]]\nkind = \"thermal_throttle\"\ngpu = 0\nat = \"5m\"\nuntil = \"1m\"\n")
                .find("later than"),
            std::string::npos);
  // NVLink faults: a link the GPU has, and a kind of error there is.
  EXPECT_EQ(
      ScenarioErrorOf(
          "[[gpu]]\ncount = 2\nnvlink = \"all\"\n[[fault]]\nkind = \"nvlink_down\"\ngpu = 0\nlink = 18\n"),
      "lab.toml:4: key 'fault.link': gpu 0 has 18 NVLink links");
  EXPECT_NE(ScenarioErrorOf("[[gpu]]\n[[fault]]\nkind = \"nvlink_down\"\ngpu = 0\n")
                .find("gpu 0 has 0 NVLink links"),
            std::string::npos);
  EXPECT_NE(
      ScenarioErrorOf("[[gpu]]\ncount = 2\nnvlink = \"all\"\n[[fault]]\nkind = \"nvlink_errors\"\ngpu = 0\n"
                      "nvlink_error = \"sparks\"\n")
          .find("expected \"crc\", \"replay\" or \"recovery\""),
      std::string::npos);
}

TEST(ScenarioParserTest, NvlinkLinkCountsFollowTheModel) {
  Result<Scenario> s = ParseScenario(
      "[[gpu]]\ncount = 2\nnvlink = \"all\"\n[[gpu]]\nmodel = \"NVIDIA A100-SXM4-80GB\"\nnvlink = [3]\n"
      "[[gpu]]\nmodel = \"NVIDIA A100-SXM4-80GB\"\n[[gpu]]\nmodel = \"NVIDIA H100 PCIe\"\nnvlink_links = 4\n"
      "nvlink = [0]\n",
      "lab.toml");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(NvlinkLinkCount(s.value().gpus[0]), 18);  // H100 SXM.
  EXPECT_EQ(NvlinkLinkCount(s.value().gpus[2]), 12);  // A100 SXM.
  EXPECT_EQ(NvlinkLinkCount(s.value().gpus[4]), 4);   // As the scenario says.
}

TEST(ScenarioParserTest, ShippedScenariosParse) {
  for (const char* name : {"lab-8gpu.toml", "faults.toml", "small.toml"}) {
    Result<Scenario> s = LoadScenario(std::string(TARMAC_SOURCE_DIR) + "/examples/scenarios/" + name);
    EXPECT_TRUE(s.ok()) << name << ": " << s.status().ToString();
  }
}

TEST(ScenarioParserTest, MissingFileIsNotFound) {
  Result<Scenario> s = LoadScenario("/nonexistent/scenario.toml");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kNotFound);
  EXPECT_NE(s.status().message().find("/nonexistent/scenario.toml"), std::string::npos);
}

}  // namespace
}  // namespace tarmac::sim
