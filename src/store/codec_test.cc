// SPDX-License-Identifier: Apache-2.0
#include "store/codec.h"

#include <gtest/gtest.h>

#include <random>

namespace tarmac::store {
namespace {

Block Minute(int rows, int columns, const std::function<std::optional<int64_t>(int, int)>& value) {
  Block b;
  for (int i = 0; i < rows; ++i) b.times.push_back(6000 + i);
  b.columns.resize(static_cast<size_t>(columns));
  for (int c = 0; c < columns; ++c) {
    for (int i = 0; i < rows; ++i) b.columns[static_cast<size_t>(c)].push_back(value(i, c));
  }
  return b;
}

TEST(CodecTest, RoundTripsValuesGapsAndAbsentReadings) {
  Block b;
  b.times = {6000, 6001, 6003, 6059};
  b.columns = {{0, 100, 100, std::nullopt}, {-5, std::nullopt, 81920, 81920}, {INT64_MAX / 4, 0, -1, 7}};
  std::string bytes = EncodeBlock(6000, b);
  Result<Block> back = DecodeBlock(6000, bytes);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back.value().times, b.times);
  EXPECT_EQ(back.value().columns, b.columns);
}

TEST(CodecTest, AnIdleMinuteIsTinyAndABusyOneAboutAByteAReading) {
  Block idle = Minute(60, 8, [](int, int c) { return std::optional<int64_t>(c * 1000); });
  EXPECT_LT(EncodeBlock(6000, idle).size(), 40u);
  std::mt19937 rng(7);
  Block busy = Minute(60, 8, [&](int, int c) { return std::optional<int64_t>(c * 1000 + rng() % 40); });
  size_t busy_bytes = EncodeBlock(6000, busy).size();
  EXPECT_LT(busy_bytes, 60u * 8u * 2u);
  Result<Block> back = DecodeBlock(6000, EncodeBlock(6000, busy));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back.value().columns, busy.columns);
}

TEST(CodecTest, MalformedBytesAreCorruptionNeverACrash) {
  Block b = Minute(10, 3, [](int i, int c) { return std::optional<int64_t>(i * c); });
  std::string bytes = EncodeBlock(6000, b);
  for (size_t cut = 0; cut < bytes.size(); ++cut) {
    Result<Block> r = DecodeBlock(6000, bytes.substr(0, cut));
    EXPECT_FALSE(r.ok()) << cut;
    EXPECT_EQ(r.status().code(), StatusCode::kCorruption);
  }
  EXPECT_FALSE(DecodeBlock(6000, bytes + "x").ok());
  EXPECT_FALSE(DecodeBlock(6000, std::string("\x09\x01\x01\x00", 4)).ok());  // Unknown format.
  // A run longer than the rows left.
  EXPECT_FALSE(DecodeBlock(6000, std::string("\x01\x00\x02\x00\x05", 5)).ok());
}

}  // namespace
}  // namespace tarmac::store
