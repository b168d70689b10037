// SPDX-License-Identifier: Apache-2.0
#include "sim/visible_devices.h"

#include <gtest/gtest.h>

namespace tarmac::sim {
namespace {

const std::vector<std::string> kUuids = {
    "GPU-aaaa1111-0000-0000-0000-000000000000",
    "GPU-bbbb2222-0000-0000-0000-000000000000",
    "GPU-bbbb3333-0000-0000-0000-000000000000",
    "GPU-cccc4444-0000-0000-0000-000000000000",
};

TEST(VisibleDevicesTest, UnsetMeansAll) {
  EXPECT_EQ(ParseCudaVisibleDevices(std::nullopt, kUuids), (std::vector<int>{0, 1, 2, 3}));
}

TEST(VisibleDevicesTest, IndicesInTheGivenOrder) {
  EXPECT_EQ(ParseCudaVisibleDevices("2,0", kUuids), (std::vector<int>{2, 0}));
  EXPECT_EQ(ParseCudaVisibleDevices(" 1 ", kUuids), (std::vector<int>{1}));
}

TEST(VisibleDevicesTest, UuidsAndUniquePrefixes) {
  EXPECT_EQ(ParseCudaVisibleDevices(kUuids[3], kUuids), (std::vector<int>{3}));
  EXPECT_EQ(ParseCudaVisibleDevices("GPU-aaaa", kUuids), (std::vector<int>{0}));
  EXPECT_EQ(ParseCudaVisibleDevices("cccc4444", kUuids), (std::vector<int>{3}));
  // "GPU-bbbb" names two GPUs: ambiguous, so the list ends there.
  EXPECT_EQ(ParseCudaVisibleDevices("0,GPU-bbbb,3", kUuids), (std::vector<int>{0}));
}

TEST(VisibleDevicesTest, StopsAtTheFirstInvalidEntry) {
  EXPECT_EQ(ParseCudaVisibleDevices("0,2,-1,1", kUuids), (std::vector<int>{0, 2}));
  EXPECT_EQ(ParseCudaVisibleDevices("-1", kUuids), std::vector<int>{});
  EXPECT_EQ(ParseCudaVisibleDevices("", kUuids), std::vector<int>{});
  EXPECT_EQ(ParseCudaVisibleDevices("1,7,2", kUuids), (std::vector<int>{1}));
}

TEST(VisibleDevicesTest, DuplicateMakesTheListInvalid) {
  EXPECT_EQ(ParseCudaVisibleDevices("0,1,0", kUuids), std::vector<int>{});
}

}  // namespace
}  // namespace tarmac::sim
