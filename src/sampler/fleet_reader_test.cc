// SPDX-License-Identifier: Apache-2.0
#include "sampler/fleet_reader.h"

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
  Result<std::vector<fleet::GpuInfo>> Open() override {
    fleet::GpuInfo g;
    g.uuid = "GPU-0";
    return std::vector<fleet::GpuInfo>{g};
  }
  const fleet::SystemInfo& system_info() const override { return system_; }
  Result<fleet::GpuSample> Sample(int index, unsigned tiers) override {
    ++seconds_;
    fleet::GpuSample s;
    s.index = index;
    s.taken_at = std::chrono::system_clock::time_point(std::chrono::seconds(1'800'000'000 + seconds_));
    if (tiers & fleet::kSlowTier) {
      s.pcie_tx_bytes = static_cast<int64_t>(kBytesPerSecond * seconds_);
      s.pcie_rx_bytes = static_cast<int64_t>(kBytesPerSecond / 2 * seconds_);
    }
    return s;
  }
  std::optional<double> RecentUtilization(int, std::chrono::seconds) override { return std::nullopt; }
  Result<std::vector<fleet::GpuEvent>> WaitEvents(std::chrono::milliseconds) override {
    return std::vector<fleet::GpuEvent>{};
  }

 private:
  int64_t seconds_ = 0;
  fleet::SystemInfo system_;
};

// The rate is the counter's change over the time between its own reads: a
// fast tick in between neither zeroes it nor divides a slow interval's
// bytes by a fast interval (both of which status once showed).
TEST(FleetReaderTest, PcieRatesComeFromTheCountersOwnInterval) {
  auto backend = std::make_unique<PcieBackend>();
  std::vector<fleet::GpuInfo> gpus = backend->Open().value();
  FleetReader reader(gpu::OpenedBackend{std::move(backend), gpus}, RealClock());
  fleet::FleetView first = reader.Read(std::nullopt, fleet::kAllTiers);
  EXPECT_FALSE(first.gpus[0].pcie_tx_bytes_per_second.has_value());  // One reading: no rate yet.
  for (int i = 0; i < 4; ++i) {
    fleet::FleetView fast = reader.Read(std::nullopt, fleet::kFastTier);
    EXPECT_FALSE(fast.gpus[0].pcie_tx_bytes_per_second.has_value()) << i;
    EXPECT_EQ(fast.gpus[0].sample.pcie_tx_bytes, first.gpus[0].sample.pcie_tx_bytes);  // Carried.
  }
  fleet::FleetView slow = reader.Read(std::nullopt, fleet::kAllTiers);  // Five seconds after the first.
  ASSERT_TRUE(slow.gpus[0].pcie_tx_bytes_per_second.has_value());
  EXPECT_DOUBLE_EQ(*slow.gpus[0].pcie_tx_bytes_per_second, kBytesPerSecond);
  EXPECT_DOUBLE_EQ(*slow.gpus[0].pcie_rx_bytes_per_second, kBytesPerSecond / 2);
  for (int i = 0; i < 3; ++i) {
    fleet::FleetView fast = reader.Read(std::nullopt, fleet::kFastTier);
    ASSERT_TRUE(fast.gpus[0].pcie_tx_bytes_per_second.has_value()) << i;
    EXPECT_DOUBLE_EQ(*fast.gpus[0].pcie_tx_bytes_per_second, kBytesPerSecond) << i;
  }
  fleet::FleetView again = reader.Read(std::nullopt, fleet::kAllTiers);  // Four seconds on.
  EXPECT_DOUBLE_EQ(*again.gpus[0].pcie_tx_bytes_per_second, kBytesPerSecond);
}

}  // namespace
}  // namespace tarmac::sampler
