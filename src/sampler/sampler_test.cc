// SPDX-License-Identifier: Apache-2.0
#include "sampler/sampler.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "gpu/gpu_backend.h"

namespace tarmac::sampler {
namespace {

using namespace std::chrono_literals;

// One GPU; counts the readings taken.
class CountingBackend final : public gpu::GpuBackend {
 public:
  explicit CountingBackend(std::atomic<int>* fast_reads) : fast_reads_(fast_reads) {}
  std::string_view name() const override { return "counting"; }
  Result<std::vector<node::GpuInfo>> Open() override {
    node::GpuInfo g;
    g.index = 0;
    g.uuid = "GPU-0";
    g.pci_bus_id = "00000000:18:00.0";  // As NVML spells it.
    return std::vector<node::GpuInfo>{g};
  }
  const node::SystemInfo& system_info() const override { return system_; }
  Result<node::GpuSample> Sample(int index, unsigned tiers) override {
    if (tiers & node::kFastTier) ++*fast_reads_;
    node::GpuSample s;
    s.index = index;
    return s;
  }
  std::optional<double> RecentUtilization(int, std::chrono::seconds) override { return std::nullopt; }
  Result<std::vector<node::GpuEvent>> WaitEvents(std::chrono::milliseconds timeout) override {
    std::this_thread::sleep_for(std::min(timeout, std::chrono::milliseconds(20)));
    return std::vector<node::GpuEvent>{};
  }

 private:
  std::atomic<int>* fast_reads_;
  node::SystemInfo system_;
};

// A sampler over one CountingBackend GPU whose grid never comes during a
// test (only readings asked for), counting its ticks.
class TickCounter {
 public:
  TickCounter()
      : sampler_(
            [this]() -> Result<gpu::OpenedBackend> {
              auto backend = std::make_unique<CountingBackend>(&fast_reads);
              Result<std::vector<node::GpuInfo>> gpus = backend->Open();
              return gpu::OpenedBackend{std::move(backend), gpus.value()};
            },
            Options(), RealClock(), &logger_,
            [this](const std::shared_ptr<const node::Snapshot>&) {
              std::lock_guard<std::mutex> lock(mu_);
              ++ticks_;
              ticked_.notify_all();
            }) {}
  Sampler& sampler() { return sampler_; }
  // Whether `n` ticks were taken (a bound against a hang only: a reading
  // asked for comes at once).
  bool WaitForTicks(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    return ticked_.wait_for(lock, 60s, [&] { return ticks_ >= n; });
  }
  int ticks() {
    std::lock_guard<std::mutex> lock(mu_);
    return ticks_;
  }
  std::atomic<int> fast_reads{0};

 private:
  static SamplerOptions Options() {
    SamplerOptions options;
    options.fast_interval = std::chrono::hours(1);
    options.slow_interval = std::chrono::hours(2);
    return options;
  }
  std::mutex mu_;
  std::condition_variable ticked_;
  int ticks_ = 0;
  Logger logger_{LogLevel::kOff};
  Sampler sampler_;
};

TEST(SamplerTest, AReadingAskedForIsTakenAtOnceOffTheGrid) {
  TickCounter t;
  Sampler& sampler = t.sampler();
  std::atomic<int>& fast_reads = t.fast_reads;
  ASSERT_TRUE(sampler.Start().ok());
  auto wait_for_ticks = [&](int n) { return t.WaitForTicks(n); };
  ASSERT_TRUE(wait_for_ticks(1));
  EXPECT_EQ(fast_reads.load(), 1);
  sampler.RequestReading();
  ASSERT_TRUE(wait_for_ticks(2)) << "the asked-for reading never came";
  EXPECT_EQ(fast_reads.load(), 2);
  EXPECT_EQ(sampler.Latest()->sequence, 2);
  // Asked again: another one; the grid is unchanged (no tick of its own).
  sampler.RequestReading();
  ASSERT_TRUE(wait_for_ticks(3));
  sampler.Stop();
  EXPECT_EQ(fast_reads.load(), 3);
  sampler.RequestReading();  // Harmless once stopped.
  EXPECT_EQ(t.ticks(), 3);
}

// The kernel log's Xids of this boot (by PCI address, as the kernel spells
// it) count on their GPU from the first tick, the larger count per code of
// these and the history's; those before an admin's clearing do not, and
// ForgetXids forgets them all.
TEST(SamplerTest, XidsFromTheKernelLogAndTheHistoryCountOnTheirGpu) {
  TickCounter t;
  Sampler& sampler = t.sampler();
  sampler.SeedEarlierXids({{"GPU-0", {{48, 1}}}});
  sampler.SeedLoggedXids(
      {{"0000:18:00", 48, 1000}, {"0000:18:00", 48, 2000}, {"0000:18:00", 79, 500}, {"0000:3b:00", 63, 2000}},
      {{"GPU-0", 600}});  // The Xid 79 was cleared by an admin.
  ASSERT_TRUE(sampler.Start().ok());
  auto wait_for_ticks = [&](int n) { return t.WaitForTicks(n); };
  ASSERT_TRUE(wait_for_ticks(1));
  EXPECT_EQ(sampler.Latest()->node_view.gpus[0].earlier_xid_count_by_code,
            (std::map<int64_t, int64_t>{{48, 2}}));
  sampler.ForgetXids("GPU-0");
  sampler.RequestReading();
  ASSERT_TRUE(wait_for_ticks(2));
  EXPECT_TRUE(sampler.Latest()->node_view.gpus[0].earlier_xid_count_by_code.empty());
}

}  // namespace
}  // namespace tarmac::sampler
