// SPDX-License-Identifier: Apache-2.0
//
// The fake libnvidia-ml keeps NVML's contract everywhere a client can
// reach it: tarmac-nvml-sweep calls every export as NVML documents calling
// it, on lab-8gpu, mig-lab, faults and mig-room, as root and as nobody, and
// every answer must be SUCCESS or a row of the table in
// tools/fakenvml/README.md ("Every export, swept"), every answer reported
// twice must agree, and MIG instances made through the documented ID
// pattern must appear and go.
#include <fnmatch.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <memory>
#include <set>
#include <sstream>

#include "testutil/testutil.h"

namespace tarmac::testing {
namespace {

std::vector<std::string> SplitOn(const std::string& text, char sep) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string part; std::getline(in, part, sep);) out.push_back(part);
  return out;
}

std::string Trim(std::string s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '`')) s.erase(s.begin());
  while (!s.empty() && (s.back() == ' ' || s.back() == '`')) s.pop_back();
  return s;
}

// One row of the README's table.
struct Row {
  std::vector<std::string> functions, tags, worlds;
  std::string answer;
  int line = 0;
  int met = 0;

  bool Matches(const std::string& function, const std::set<std::string>& call_tags, const std::string& world,
               const std::string& code) const {
    if (code != answer) return false;
    bool named = false;
    for (const std::string& f : functions) named = named || fnmatch(f.c_str(), function.c_str(), 0) == 0;
    if (!named) return false;
    for (const std::string& t : tags)
      if (t != "any" && call_tags.count(t) == 0) return false;
    for (const std::string& w : worlds)
      if (w == "any" || w == world) return true;
    return false;
  }
};

std::vector<Row> ReadTable(const std::string& path) {
  std::ifstream in(path);
  std::vector<Row> rows;
  bool inside = false;
  int number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    if (line.rfind("| functions | tags | world | answer |", 0) == 0) {
      inside = true;
      continue;
    }
    if (!inside || line.rfind("|---", 0) == 0) continue;
    if (line.rfind("| ", 0) != 0) break;
    std::vector<std::string> cells = SplitOn(line.substr(2), '|');
    if (cells.size() < 5) continue;
    Row row;
    for (const std::string& f : SplitOn(cells[0], ',')) row.functions.push_back(Trim(f));
    for (const std::string& t : SplitOn(Trim(cells[1]), ',')) row.tags.push_back(Trim(t));
    for (const std::string& w : SplitOn(cells[2], ',')) row.worlds.push_back(Trim(w));
    row.answer = Trim(cells[3]);
    row.line = number;
    rows.push_back(row);
  }
  return rows;
}

// The calls that answer per instance on a MIG device handle.
const std::set<std::string> kPerInstance = {"nvmlDeviceGetUUID",
                                            "nvmlDeviceGetName",
                                            "nvmlDeviceGetIndex",
                                            "nvmlDeviceGetMemoryInfo",
                                            "nvmlDeviceGetMemoryInfo_v2",
                                            "nvmlDeviceGetBAR1MemoryInfo",
                                            "nvmlDeviceGetAttributes_v2",
                                            "nvmlDeviceGetGpuInstanceId",
                                            "nvmlDeviceGetComputeInstanceId",
                                            "nvmlDeviceGetDeviceHandleFromMigDeviceHandle",
                                            "nvmlDeviceIsMigDeviceHandle",
                                            "nvmlDeviceGetComputeRunningProcesses_v3"};

class NvmlConformanceTest : public ::testing::Test {
 public:
  void SetUp() override {
    rows_ = ReadTable(SourceDir() + "/tools/fakenvml/README.md");
    ASSERT_GT(rows_.size(), 20u) << "the README's table was not found";
    // nobody reaches its own world folders through ours.
    ASSERT_EQ(::chmod(dir_.path().c_str(), 0755), 0);
  }

  std::map<std::string, std::string> WorldEnv(const std::string& world, const std::string& folder) {
    std::string dir = dir_.path() + "/" + folder;
    ::mkdir(dir.c_str(), 0777);
    ::chmod(dir.c_str(), 0777);
    return {{"TARMAC_SIM_SCENARIO", SourceDir() + "/examples/scenarios/" + world + ".toml"},
            {"TARMAC_SIM_DIR", dir},
            {"TARMAC_SIM_NOW", "<unset>"}};
  }

  // Starts a tarmac-simload on `gpu` of the world in `env`.
  void StartLoad(const std::map<std::string, std::string>& env, const std::string& gpu,
                 std::vector<std::string> args) {
    std::vector<std::string> argv = {BinDir() + "/tarmac-simload"};
    argv.insert(argv.end(), args.begin(), args.end());
    std::map<std::string, std::string> with = env;
    with["CUDA_VISIBLE_DEVICES"] = gpu;
    loads_.push_back(std::make_unique<Child>(argv, with));
    ASSERT_TRUE(WaitForLoad(env.at("TARMAC_SIM_DIR"), loads_.back()->pid()));
  }

  // Sweeps `world` (its folder's env) and holds each line to the contract.
  void Sweep(const std::string& world, const std::map<std::string, std::string>& env, bool as_nobody,
             const std::vector<std::string>& extra) {
    std::vector<std::string> argv;
    if (as_nobody) argv = {"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"};
    argv.push_back(BinDir() + "/tarmac-nvml-sweep");
    argv.insert(argv.end(), {"--lib", FakeNvmlPath(), "--settings"});
    argv.insert(argv.end(), extra.begin(), extra.end());
    RunResult r = RunCommand(argv, env);
    std::string who = world + (as_nobody ? " as nobody" : " as root");
    ASSERT_EQ(r.exit_code, 0) << who << ": " << r.err
                              << r.out.substr(r.out.size() > 2000 ? r.out.size() - 2000 : 0);
    bool done = false;
    for (const std::string& line : SplitOn(r.out, '\n')) {
      std::vector<std::string> f = SplitOn(line, '\t');
      if (f.empty()) continue;
      done = done || f[0] == "done";
      EXPECT_NE(f[0], "crash") << who << ": " << line;
      EXPECT_NE(f[0], "missing") << who << ": " << line;
      if (f[0] == "check" && f.size() >= 6) {
        EXPECT_EQ(f[4], "ok") << who << ": " << line;
        if (f[4] == "ok") checks_.insert(f[1]);
      }
      if (f[0] != "call" || f.size() < 6) continue;
      std::string name = f[1].substr(0, f[1].find('#'));
      called_.insert(name);
      std::vector<std::string> tag_list = SplitOn(f[3], ',');
      std::set<std::string> tags(tag_list.begin(), tag_list.end());
      if (tags.count("mig-device") != 0 && kPerInstance.count(name) != 0) {
        EXPECT_EQ(f[5], "SUCCESS") << who << ": a per-instance call on a MIG device: " << line;
      }
      if (f[5] == "SUCCESS") continue;
      bool allowed = false;
      for (Row& row : rows_) {
        if (row.Matches(f[1], tags, world, f[5])) {
          ++row.met;
          allowed = true;
        }
      }
      EXPECT_TRUE(allowed) << who << ": no row of the README's table allows " << line;
    }
    EXPECT_TRUE(done) << who << ": the sweep did not finish";
  }

 protected:
  TempDir dir_;
  std::vector<Row> rows_;
  std::vector<std::unique_ptr<Child>> loads_;
  std::set<std::string> called_, checks_;
};

TEST_F(NvmlConformanceTest, EveryExportAnswersTheContractOnEveryWorld) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root: the sweep runs as root and as nobody";
  // lab-8gpu: a process holds GPU 0 at 0 % SM (P0, idle clocks, GPU_IDLE).
  std::map<std::string, std::string> lab = WorldEnv("lab-8gpu", "lab-8gpu");
  StartLoad(lab, "0", {"--memory", "4GiB", "--pattern", "idle"});
  Sweep("lab-8gpu", lab, false, {});
  // faults: a busy process on the power-capped GPU 3 and a thermally
  // throttled GPU 0 (violation time with the reasons).
  std::map<std::string, std::string> faults = WorldEnv("faults", "faults");
  StartLoad(faults, "3", {"--memory", "4GiB", "--util", "95"});
  Sweep("faults", faults, false, {});
  Sweep("mig-lab", WorldEnv("mig-lab", "mig-lab"), false, {});
  Sweep("mig-room", WorldEnv("mig-room", "mig-room"), false, {"--mig-exercise"});
  for (const char* world : {"lab-8gpu", "faults", "mig-lab", "mig-room"})
    Sweep(world, WorldEnv(world, std::string("nobody-") + world), true, {"--mig-exercise"});

  // Every public export was called.
  std::ifstream list(SourceDir() + "/tools/fakenvml/public_exports.txt");
  int exports = 0;
  for (std::string line; std::getline(list, line);) {
    if (line.empty() || line[0] == '#') continue;
    ++exports;
    EXPECT_EQ(called_.count(line), 1u) << line << " was never called";
  }
  EXPECT_EQ(exports, 286);
  // Each comparison was made, and each row of the table is still needed.
  for (const char* check :
       {"memory-v1-v2",   "field-1",     "field-2",           "field-91",         "field-94",
        "field-142",      "field-145",   "clock-by-id",       "clock-under-max",  "pstate-supported",
        "pstate-context", "idle-clocks", "violation-thermal", "process-versions", "bar1",
        "error-strings",  "mig-uuid",    "mig-parent",        "mig-handle",       "mig-instance",
        "mig-devices",    "mig-create",  "mig-destroy",       "mig-refused"})
    EXPECT_EQ(checks_.count(check), 1u) << "no check " << check << " was made";
  for (const Row& row : rows_)
    EXPECT_GT(row.met, 0) << "README.md line " << row.line << " (" << row.functions.front() << ", "
                          << row.answer << ") is met by no answer";
}

}  // namespace
}  // namespace tarmac::testing
