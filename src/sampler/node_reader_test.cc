// SPDX-License-Identifier: Apache-2.0
#include "sampler/node_reader.h"

#include <gtest/gtest.h>

#include "gpu/gpu_backend.h"

namespace tarmac::sampler {
namespace {

constexpr double kBytesPerSecond = 900e6;

// One GPU moving 900 MB/s over PCIe; each read is one second after the
// one before, and the PCIe counters are read only with the slow tier, as
// the NVML backend does.
class PcieBackend final : public gpu::GpuBackend {
 public:
  std::string_view name() const override { return "pcie"; }
  Result<std::vector<node::GpuInfo>> Open() override {
    node::GpuInfo g;
    g.uuid = "GPU-0";
    return std::vector<node::GpuInfo>{g};
  }
  const node::SystemInfo& system_info() const override { return system_; }
  Result<node::GpuSample> Sample(int index, unsigned tiers) override {
    ++seconds_;
    node::GpuSample s;
    s.index = index;
    s.taken_at = std::chrono::system_clock::time_point(std::chrono::seconds(1'800'000'000 + seconds_));
    if (tiers & node::kSlowTier) {
      s.pcie_tx_bytes = static_cast<int64_t>(kBytesPerSecond * seconds_);
      s.pcie_rx_bytes = static_cast<int64_t>(kBytesPerSecond / 2 * seconds_);
    }
    return s;
  }
  std::optional<double> RecentUtilization(int, std::chrono::seconds) override { return std::nullopt; }
  Result<std::vector<node::GpuEvent>> WaitEvents(std::chrono::milliseconds) override {
    return std::vector<node::GpuEvent>{};
  }

 private:
  int64_t seconds_ = 0;
  node::SystemInfo system_;
};

// The rate is the counter's change over the time between its own reads: a
// fast tick in between neither zeroes it nor divides a slow interval's
// bytes by a fast interval (both of which status once showed).
TEST(NodeReaderTest, PcieRatesComeFromTheCountersOwnInterval) {
  auto backend = std::make_unique<PcieBackend>();
  std::vector<node::GpuInfo> gpus = backend->Open().value();
  NodeReader reader(gpu::OpenedBackend{std::move(backend), gpus}, RealClock());
  node::NodeView first = reader.Read(std::nullopt, node::kAllTiers);
  EXPECT_FALSE(first.gpus[0].pcie_tx_bytes_per_second.has_value());  // One reading: no rate yet.
  for (int i = 0; i < 4; ++i) {
    node::NodeView fast = reader.Read(std::nullopt, node::kFastTier);
    EXPECT_FALSE(fast.gpus[0].pcie_tx_bytes_per_second.has_value()) << i;
    EXPECT_EQ(fast.gpus[0].sample.pcie_tx_bytes, first.gpus[0].sample.pcie_tx_bytes);  // Carried.
  }
  node::NodeView slow = reader.Read(std::nullopt, node::kAllTiers);  // Five seconds after the first.
  ASSERT_TRUE(slow.gpus[0].pcie_tx_bytes_per_second.has_value());
  EXPECT_DOUBLE_EQ(*slow.gpus[0].pcie_tx_bytes_per_second, kBytesPerSecond);
  EXPECT_DOUBLE_EQ(*slow.gpus[0].pcie_rx_bytes_per_second, kBytesPerSecond / 2);
  for (int i = 0; i < 3; ++i) {
    node::NodeView fast = reader.Read(std::nullopt, node::kFastTier);
    ASSERT_TRUE(fast.gpus[0].pcie_tx_bytes_per_second.has_value()) << i;
    EXPECT_DOUBLE_EQ(*fast.gpus[0].pcie_tx_bytes_per_second, kBytesPerSecond) << i;
  }
  node::NodeView again = reader.Read(std::nullopt, node::kAllTiers);  // Four seconds on.
  EXPECT_DOUBLE_EQ(*again.gpus[0].pcie_tx_bytes_per_second, kBytesPerSecond);
}

}  // namespace
}  // namespace tarmac::sampler
