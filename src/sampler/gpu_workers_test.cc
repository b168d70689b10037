// SPDX-License-Identifier: Apache-2.0
#include "sampler/gpu_workers.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace tarmac::sampler {
namespace {

// A backend whose reads of one GPU block until released, as a hung driver
// call does.
class HangingBackend : public gpu::GpuBackend {
 public:
  std::string_view name() const override { return "test"; }
  Result<std::vector<node::GpuInfo>> Open() override { return std::vector<node::GpuInfo>{}; }
  const node::SystemInfo& system_info() const override { return system_; }
  Result<node::GpuSample> Sample(int index, unsigned) override {
    calls[static_cast<size_t>(index)]++;
    if (index == hang_index) {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return is_released_; });
    }
    node::GpuSample s;
    s.index = index;
    s.power_milliwatts = 1000 * (index + 1);
    return s;
  }
  std::optional<double> RecentUtilization(int, std::chrono::seconds) override { return std::nullopt; }
  Result<std::vector<node::GpuEvent>> WaitEvents(std::chrono::milliseconds) override {
    return std::vector<node::GpuEvent>{};
  }
  void Release() {
    std::lock_guard<std::mutex> lock(mu_);
    is_released_ = true;
    cv_.notify_all();
  }

  int hang_index = -1;
  std::atomic<int> calls[3] = {0, 0, 0};

 private:
  node::SystemInfo system_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool is_released_ = false;
};

TEST(GpuWorkersTest, ReadsEveryGpuInOrder) {
  HangingBackend backend;
  Logger logger(LogLevel::kOff);
  GpuWorkers workers(&backend, {0, 1, 2}, std::chrono::milliseconds(500), RealClock(), &logger);
  for (int round = 0; round < 3; ++round) {
    std::vector<node::GpuSample> s = workers.SampleAll(node::kFastTier);
    ASSERT_EQ(s.size(), 3u);
    for (int i = 0; i < 3; ++i) {
      EXPECT_EQ(s[static_cast<size_t>(i)].index, i);
      EXPECT_EQ(s[static_cast<size_t>(i)].health, node::GpuHealth::kOk);
      EXPECT_EQ(s[static_cast<size_t>(i)].power_milliwatts, 1000 * (i + 1));
    }
  }
  EXPECT_FALSE(workers.HasCallInDriver());
}

TEST(GpuWorkersTest, AHungGpuIsUnresponsiveAndTheOthersAreStillRead) {
  auto backend = std::make_unique<HangingBackend>();
  backend->hang_index = 1;
  Logger logger(LogLevel::kOff);
  GpuWorkers workers(backend.get(), {0, 1, 2}, std::chrono::milliseconds(100), RealClock(), &logger);
  std::vector<node::GpuSample> first = workers.SampleAll(node::kFastTier);
  EXPECT_EQ(first[0].health, node::GpuHealth::kOk);
  EXPECT_EQ(first[1].health, node::GpuHealth::kUnresponsive);
  EXPECT_NE(first[1].error.find("has not returned"), std::string::npos);
  EXPECT_EQ(first[2].health, node::GpuHealth::kOk);  // Read by the fresh reader.
  EXPECT_TRUE(workers.HasCallInDriver());
  // While the call is stuck, nothing more is queued behind it.
  std::vector<node::GpuSample> second = workers.SampleAll(node::kFastTier);
  EXPECT_EQ(second[1].health, node::GpuHealth::kUnresponsive);
  EXPECT_EQ(second[2].health, node::GpuHealth::kOk);
  EXPECT_EQ(backend->calls[1].load(), 1);
  EXPECT_EQ(backend->calls[2].load(), 2);
  backend->Release();
  for (int i = 0; i < 200 && workers.HasCallInDriver(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_FALSE(workers.HasCallInDriver());
  std::vector<node::GpuSample> third = workers.SampleAll(node::kFastTier);
  EXPECT_EQ(third[1].health, node::GpuHealth::kOk);
  EXPECT_EQ(backend->calls[1].load(), 2);
}

}  // namespace
}  // namespace tarmac::sampler
