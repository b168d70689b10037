// SPDX-License-Identifier: Apache-2.0
//
// SimWorldTest: a fresh simulated world per test (its own directory), the
// environment the fake libnvidia-ml and tarmac-simload read, and helpers to
// start simload processes and open both backends on the same frozen instant.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <functional>
#include <memory>
#include <thread>

#include "common/clock.h"
#include "common/log.h"
#include "gpu/nvml_backend.h"
#include "gpu/sim_backend.h"
#include "testutil/testutil.h"

namespace tarmac::testing {

class SimWorldTest : public ::testing::Test {
 public:
  // Uses examples/scenarios/<name>.
  void UseScenario(const std::string& name) {
    scenario_ = SourceDir() + "/examples/scenarios/" + name;
    sim_dir_ = dir_.path() + "/world";
    setenv("TARMAC_SIM_SCENARIO", scenario_.c_str(), 1);
    setenv("TARMAC_SIM_DIR", sim_dir_.c_str(), 1);
    unsetenv("TARMAC_SIM_NOW");
  }

  void UseScenarioText(const std::string& text) {
    UseScenario("unused");
    scenario_ = dir_.Write("scenario.toml", text);
    setenv("TARMAC_SIM_SCENARIO", scenario_.c_str(), 1);
  }

  std::map<std::string, std::string> Env() const {
    return {{"TARMAC_SIM_SCENARIO", scenario_}, {"TARMAC_SIM_DIR", sim_dir_}, {"TARMAC_SIM_NOW", "<unset>"}};
  }

  // Starts tarmac-simload with `args`; CUDA_VISIBLE_DEVICES=`visible` unless
  // it is "<unset>". Waits until it has registered.
  // Bounded poll (not a timing assertion).
  bool WaitFor(const std::function<bool()>& pred, int tries = 200) {
    for (int i = 0; i < tries; ++i) {
      if (pred()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }

  Child* StartLoad(const std::string& visible, std::vector<std::string> args) {
    std::vector<std::string> argv = {BinDir() + "/tarmac-simload"};
    argv.insert(argv.end(), args.begin(), args.end());
    std::map<std::string, std::string> env = Env();
    env["CUDA_VISIBLE_DEVICES"] = visible;
    children_.push_back(std::make_unique<Child>(argv, env));
    Child* child = children_.back().get();
    EXPECT_TRUE(WaitForLoad(sim_dir_, child->pid())) << "simload did not start";
    return child;
  }

  // Freezes the world a little in the future, so every reader (this
  // process, the fake library in it, child processes) evaluates the same
  // instant and per-process samples are newer than "a second ago".
  std::chrono::system_clock::time_point Freeze() {
    std::chrono::system_clock::time_point at = RealClock()->WallNow() + std::chrono::seconds(3);
    double seconds = std::chrono::duration<double>(at.time_since_epoch()).count();
    std::string text = std::to_string(seconds);
    setenv("TARMAC_SIM_NOW", text.c_str(), 1);
    // Round-trip through the text, as every reader parses it.
    return std::chrono::system_clock::time_point(
        std::chrono::duration_cast<std::chrono::system_clock::duration>(
            std::chrono::duration<double>(std::stod(text))));
  }

  std::unique_ptr<gpu::SimBackend> OpenSim(std::vector<node::GpuInfo>* gpus) {
    sim::WorldOptions options;
    auto backend = std::make_unique<gpu::SimBackend>(options, RealClock());
    Result<std::vector<node::GpuInfo>> opened = backend->Open();
    EXPECT_TRUE(opened.ok()) << opened.status().ToString();
    if (opened.ok()) *gpus = opened.value();
    return backend;
  }

  std::unique_ptr<gpu::NvmlBackend> OpenNvml(const std::string& library, std::vector<node::GpuInfo>* gpus) {
    auto backend = std::make_unique<gpu::NvmlBackend>(gpu::NvmlOptions{library}, RealClock(), &logger_);
    Result<std::vector<node::GpuInfo>> opened = backend->Open();
    EXPECT_TRUE(opened.ok()) << opened.status().ToString();
    if (opened.ok()) *gpus = opened.value();
    return backend;
  }

  RunResult Tarmac(std::vector<std::string> args, std::map<std::string, std::string> extra = {}) {
    std::vector<std::string> argv = {BinDir() + "/tarmac"};
    argv.insert(argv.end(), args.begin(), args.end());
    std::map<std::string, std::string> env = Env();
    for (const auto& [k, v] : extra) env[k] = v;
    return RunCommand(argv, env);
  }

  TempDir dir_;
  std::string scenario_;
  std::string sim_dir_;
  Logger logger_{LogLevel::kOff};
  std::vector<std::unique_ptr<Child>> children_;
};

}  // namespace tarmac::testing
