// SPDX-License-Identifier: Apache-2.0
//
// What a user sees from the real `tarmac` binary when things go wrong: a lost
// GPU, a missing library or driver, sensors a board lacks, a device without
// permission, bad queries. Each runs over both the fake NVML and the sim
// backend where both apply.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "testutil/sim_fixture.h"

namespace tarmac::testing {
namespace {

using nlohmann::json;

std::vector<std::string> Nvml(std::vector<std::string> args) {
  args.insert(args.end(), {"--backend", "nvml", "--nvml-library", FakeNvmlPath()});
  return args;
}

std::vector<std::string> Sim(std::vector<std::string> args) {
  args.insert(args.end(), {"--backend", "sim"});
  return args;
}

json StatusJson(SimWorldTest* t, const std::vector<std::string>& args) {
  RunResult r = t->Tarmac(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  json j = json::parse(r.out, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << r.out;
  return j;
}

// Bare `tarmac` is the status (as bare nvidia-smi is); a slip in a command
// or an option gets the nearest name, exit 2.
TEST_F(SimWorldTest, BareTarmacShowsTheStatusAndSlipsGetTheNearestName) {
  UseScenario("small.toml");
  RunResult bare = Tarmac({}, {{"TARMAC_BACKEND", "sim"}, {"TARMAC_SOCKET", dir_.path() + "/none.sock"}});
  RunResult status =
      Tarmac({"status"}, {{"TARMAC_BACKEND", "sim"}, {"TARMAC_SOCKET", dir_.path() + "/none.sock"}});
  ASSERT_EQ(bare.exit_code, 0) << bare.err;
  EXPECT_EQ(bare.out.substr(0, bare.out.find('\n')), status.out.substr(0, status.out.find('\n')));
  EXPECT_EQ(std::count(bare.out.begin(), bare.out.end(), '\n'),
            std::count(status.out.begin(), status.out.end(), '\n'));
  RunResult command = Tarmac({"stauts"});
  EXPECT_EQ(command.exit_code, 2);
  EXPECT_NE(command.err.find("unknown command 'stauts'; did you mean 'status'?"), std::string::npos)
      << command.err;
  RunResult option = Tarmac({"run", "--max-tim", "3h", "--", "true"});
  EXPECT_EQ(option.exit_code, 2);
  EXPECT_NE(option.err.find("run: unknown option '--max-tim'; did you mean '--max-time'?"), std::string::npos)
      << option.err;
  RunResult unrelated = Tarmac({"status", "--frobnicate"});
  EXPECT_EQ(unrelated.exit_code, 2);
  EXPECT_NE(unrelated.err.find("status: unknown option '--frobnicate' (see tarmac status --help)"),
            std::string::npos)
      << unrelated.err;
}

TEST_F(SimWorldTest, LostGpuIsMarkedAndTheOthersStillRead) {
  UseScenario("faults.toml");
  for (const auto& args : {Nvml({"status", "--json"}), Sim({"status", "--json"})}) {
    json j = StatusJson(this, args);
    ASSERT_EQ(j["gpus"].size(), 4u);
    EXPECT_EQ(j["gpus"][1]["health"], "lost");
    EXPECT_FALSE(j["gpus"][1].contains("memory_used_bytes"));
    for (int i : {0, 2, 3}) {
      EXPECT_EQ(j["gpus"][i]["health"], "ok");
      EXPECT_TRUE(j["gpus"][i].contains("memory_used_bytes"));
      EXPECT_TRUE(j["gpus"][i].contains("power_milliwatts"));
    }
    EXPECT_EQ(j["gpus"][0]["is_throttled"], true);
    EXPECT_EQ(j["gpus"][0]["throttle_reasons"], json({"sw_thermal_slowdown", "hw_thermal_slowdown"}));
    EXPECT_EQ(j["gpus"][2]["is_pcie_degraded"], true);
    EXPECT_EQ(j["gpus"][2]["pcie_width"], 8);
    EXPECT_EQ(j["gpus"][2]["ecc_errors"]["volatile_corrected"], 3);
    EXPECT_EQ(j["gpus"][2]["ecc_errors"]["volatile_uncorrected"], 1);
    EXPECT_EQ(j["gpus"][2]["remapped_rows"]["pending"], true);
    EXPECT_EQ(j["gpus"][3]["power_limit_milliwatts"], 300000);
  }
  RunResult text = Tarmac(Nvml({"status", "--color", "never"}));
  EXPECT_EQ(text.exit_code, 0);
  EXPECT_NE(text.out.find("LOST"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("GPU is lost"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("THROTTLED (thermal)"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("PCIe x8 of x16"), std::string::npos) << text.out;
  RunResult wide = Tarmac(Nvml({"status", "--color", "never", "--wide"}));
  EXPECT_NE(wide.out.find("THROTTLED (sw_thermal_slowdown,hw_thermal_slowdown)"), std::string::npos)
      << wide.out;
  RunResult query = Tarmac(Nvml({"query", "--query-gpu=index,memory.used", "--format=csv,noheader"}));
  EXPECT_EQ(query.exit_code, 0);
  EXPECT_NE(query.out.find("1, [GPU is lost]"), std::string::npos) << query.out;
}

TEST_F(SimWorldTest, MissingLibraryNamesWhatWasTriedAndExits3) {
  UseScenario("small.toml");
  RunResult r = Tarmac({"status", "--backend", "nvml", "--nvml-library", "/nonexistent/libnvidia-ml.so.1"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("/nonexistent/libnvidia-ml.so.1"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty());
}

TEST_F(SimWorldTest, NoDriverAtAllNamesTheDefaultFilesAndExits3) {
  void* real = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (real != nullptr) {
    dlclose(real);
    GTEST_SKIP() << "this machine has an NVIDIA driver";
  }
  UseScenario("small.toml");
  RunResult r = Tarmac({"status"}, {{"TARMAC_NVML_LIBRARY", "<unset>"}, {"TARMAC_BACKEND", "<unset>"}});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("tried libnvidia-ml.so.1"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("; libnvidia-ml.so ("), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--backend sim"), std::string::npos) << r.err;
}

TEST_F(SimWorldTest, DriverNotLoadedExits3WithTheReason) {
  UseScenarioText("[driver]\nloaded = false\n[[gpu]]\n");
  RunResult nvml = Tarmac(Nvml({"status"}));
  EXPECT_EQ(nvml.exit_code, 3);
  EXPECT_NE(nvml.err.find("Driver Not Loaded"), std::string::npos) << nvml.err;
  RunResult sim = Tarmac(Sim({"status"}));
  EXPECT_EQ(sim.exit_code, 3);
  EXPECT_NE(sim.err.find("driver not loaded"), std::string::npos) << sim.err;
}

TEST_F(SimWorldTest, LibraryDriverMismatchExits3WithAdvice) {
  UseScenarioText("[driver]\ninit_error = \"lib_rm_version_mismatch\"\n[[gpu]]\n");
  RunResult r = Tarmac(Nvml({"query", "--query-gpu=index", "--format=csv"}));
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("different versions"), std::string::npos) << r.err;
}

TEST_F(SimWorldTest, UnsupportedReadingsAreAbsentInJsonAndDashInText) {
  UseScenario("small.toml");
  for (const auto& args : {Nvml({"status", "--json"}), Sim({"status", "--json"})}) {
    json j = StatusJson(this, args);
    const json& t4 = j["gpus"][1];
    for (const char* key : {"power_milliwatts", "power_limit_milliwatts", "energy_millijoules",
                            "fan_speed_ratio", "serial", "pcie_tx_bytes", "numa_node"}) {
      EXPECT_FALSE(t4.contains(key)) << key;
    }
    EXPECT_FALSE(t4.contains("remapped_rows"));
    EXPECT_TRUE(t4.contains("temperature_celsius"));
    EXPECT_TRUE(j["gpus"][0].contains("power_milliwatts"));
    EXPECT_TRUE(j["gpus"][0].contains("serial"));
  }
  RunResult text = Tarmac(Nvml({"status", "--color", "never"}));
  ASSERT_EQ(text.exit_code, 0);
  size_t line = text.out.find("\n1   Tesla T4");
  ASSERT_NE(line, std::string::npos) << text.out;
  std::string t4 = text.out.substr(line + 1, text.out.find('\n', line + 1) - line - 1);
  EXPECT_NE(t4.find(" - "), std::string::npos) << t4;
  RunResult query =
      Tarmac(Nvml({"query", "--query-gpu=index,power.draw,fan.speed", "--format=csv,noheader"}));
  EXPECT_NE(query.out.find("1, [N/A], [N/A]"), std::string::npos) << query.out;
}

TEST_F(SimWorldTest, DeviceWithoutPermissionIsShownNotFatal) {
  UseScenarioText("[[gpu]]\n[[gpu]]\nno_permission = true\n");
  json j = StatusJson(this, Nvml({"status", "--json"}));
  ASSERT_EQ(j["gpus"].size(), 2u);
  EXPECT_EQ(j["gpus"][0]["health"], "ok");
  EXPECT_EQ(j["gpus"][1]["health"], "no_permission");
  EXPECT_NE(j["gpus"][1]["error"].get<std::string>().find("Insufficient Permissions"), std::string::npos);
}

TEST_F(SimWorldTest, KilledSimloadDisappearsFromStatus) {
  UseScenario("lab-8gpu.toml");
  Child* load = StartLoad("2", {"--memory", "12GiB", "--util", "70"});
  for (const auto& args : {Nvml({"status", "--json"}), Sim({"status", "--json"})}) {
    json j = StatusJson(this, args);
    ASSERT_EQ(j["gpus"][2]["processes"].size(), 1u);
    EXPECT_EQ(j["gpus"][2]["processes"][0]["pid"], load->pid());
    EXPECT_EQ(j["gpus"][2]["memory_used_bytes"], int64_t{12} << 30);
  }
  load->KillAndWait(SIGKILL);
  for (const auto& args : {Nvml({"status", "--json"}), Sim({"status", "--json"})}) {
    json j = StatusJson(this, args);
    EXPECT_TRUE(j["gpus"][2]["processes"].empty());
    EXPECT_EQ(j["gpus"][2]["memory_used_bytes"], 0);
    EXPECT_EQ(j["gpus"][2]["utilization_gpu_ratio"], 0.0);
  }
}

TEST_F(SimWorldTest, CudaVisibleDevicesByIndexAndByUuid) {
  UseScenario("lab-8gpu.toml");
  json before = StatusJson(this, Nvml({"status", "--json"}));
  std::string uuid5 = before["gpus"][5]["uuid"];
  Child* by_uuid = StartLoad(uuid5, {"--memory", "1GiB"});
  Child* by_index = StartLoad("6,1", {"--memory", "2GiB"});
  json j = StatusJson(this, Nvml({"status", "--json"}));
  for (int i = 0; i < 8; ++i) {
    std::vector<int64_t> pids;
    for (const json& p : j["gpus"][i]["processes"]) pids.push_back(p["pid"]);
    std::vector<int64_t> expected;
    if (i == 5) expected = {by_uuid->pid()};
    if (i == 1 || i == 6) expected = {by_index->pid()};
    EXPECT_EQ(pids, expected) << "gpu " << i;
  }
}

TEST_F(SimWorldTest, SimloadRefusesWhatCudaWouldRefuse) {
  UseScenario("faults.toml");
  std::map<std::string, std::string> env = Env();
  env["CUDA_VISIBLE_DEVICES"] = "1";  // Lost.
  RunResult lost = RunCommand({BinDir() + "/tarmac-simload", "--seconds", "1"}, env);
  EXPECT_EQ(lost.exit_code, 1);
  EXPECT_NE(lost.err.find("lost"), std::string::npos) << lost.err;
  env["CUDA_VISIBLE_DEVICES"] = "-1";
  RunResult none = RunCommand({BinDir() + "/tarmac-simload", "--seconds", "1"}, env);
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_NE(none.err.find("no CUDA-capable device"), std::string::npos) << none.err;
  env["CUDA_VISIBLE_DEVICES"] = "0";
  RunResult oom = RunCommand({BinDir() + "/tarmac-simload", "--memory", "81GiB", "--seconds", "1"}, env);
  EXPECT_EQ(oom.exit_code, 1);
  EXPECT_NE(oom.err.find("out of memory"), std::string::npos) << oom.err;
}

TEST_F(SimWorldTest, BadScenarioIsOneClearErrorWithFileLineAndKey) {
  UseScenarioText("[[gpu]]\nmodel = \"x\"\npower_max_w = \"hot\"\n");
  RunResult r = Tarmac(Sim({"status"}));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(scenario_ + ":3: key 'gpu[0].power_max_w': expected a number"), std::string::npos)
      << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1);
}

TEST_F(SimWorldTest, UnknownQueryFieldGetsNvidiaSmiError) {
  UseScenario("small.toml");
  RunResult r = Tarmac(Sim({"query", "--query-gpu=index,utilisation.gpu", "--format=csv"}));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("Field \"utilisation.gpu\" is not a valid field to query."), std::string::npos)
      << r.err;
  RunResult f = Tarmac(Sim({"query", "--query-gpu=index", "--format=xml"}));
  EXPECT_EQ(f.exit_code, 2);
}

TEST_F(SimWorldTest, PickTakesOnlyFreeGpusAndFailsWithReasons) {
  UseScenario("lab-8gpu.toml");
  StartLoad("0", {"--memory", "20GiB", "--util", "95"});
  StartLoad("1", {"--memory", "70GiB", "--pattern", "idle"});
  json j = StatusJson(this, Nvml({"status", "--json"}));
  RunResult pick = Tarmac(Nvml({"pick", "--count", "2", "--min-free-memory", "30GiB"}));
  ASSERT_EQ(pick.exit_code, 0) << pick.err;
  // GPU 0 runs a busy job and GPU 1 holds an idle one: neither is free (a
  // job put there would run beside them); the next are 2 and 3 (idle, all
  // memory free; ties go to the lowest index).
  EXPECT_EQ(pick.out,
            j["gpus"][2]["uuid"].get<std::string>() + "," + j["gpus"][3]["uuid"].get<std::string>() + "\n");
  RunResult none = Tarmac(Nvml({"pick", "--count", "8", "--min-free-memory", "30GiB"}));
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_NE(none.err.find("gpu 0: in use outside any lease"), std::string::npos) << none.err;
  EXPECT_NE(none.err.find("gpu 1: in use outside any lease"), std::string::npos) << none.err;
  RunResult explained = Tarmac(Nvml({"pick", "--count", "8", "--json"}));
  EXPECT_EQ(explained.exit_code, 1);
  json why = json::parse(explained.out);
  ASSERT_EQ(why["gpus"].size(), 8u) << explained.out;
  EXPECT_FALSE(why["gpus"][0]["free"].get<bool>());
  EXPECT_TRUE(why["gpus"][2]["free"].get<bool>());
  EXPECT_NE(why["gpus"][2]["why"].get<std::string>().find("not enough free GPUs (6 of 8)"), std::string::npos)
      << explained.out;
  RunResult bad = Tarmac(Nvml({"pick", "--min-free-memory", "lots"}));
  EXPECT_EQ(bad.exit_code, 2);
}

}  // namespace
}  // namespace tarmac::testing
