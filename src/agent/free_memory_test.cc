// SPDX-License-Identifier: Apache-2.0
#include "agent/free_memory.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common/proc_files.h"

namespace tarmac::agent {
namespace {

using std::chrono::seconds;

// This process's resident bytes (/proc/self/statm: size, then resident
// pages), read as every /proc file is (common/proc_files.h).
int64_t ResidentBytes() {
  std::string statm;
  if (!ReadSmallFile("/proc/self/statm", &statm, 256)) return -1;
  size_t space = statm.find(' ');
  return space == std::string::npos ? -1 : std::atoll(statm.c_str() + space + 1) * ::sysconf(_SC_PAGESIZE);
}

TEST(FreeMemoryTest, FreedHolesBetweenLiveBlocksGoBackToTheSystem) {
  // 32 MiB in 64 KiB blocks (under glibc's mmap threshold: they come from
  // the heap); every other one is freed, leaving holes between blocks still
  // in use, which free() itself never gives back.
  constexpr int64_t kBlock = 64 * 1024;
  constexpr int kBlocks = 512;
  std::vector<char*> blocks;
  for (int i = 0; i < kBlocks; ++i) {
    blocks.push_back(static_cast<char*>(::malloc(static_cast<size_t>(kBlock))));
    std::memset(blocks.back(), 1, static_cast<size_t>(kBlock));  // Resident.
  }
  for (int i = 0; i < kBlocks; i += 2) ::free(blocks[i]);
  int64_t before = ResidentBytes();
  EXPECT_TRUE(ReleaseFreeMemory());
  int64_t after = ResidentBytes();
  ASSERT_GT(after, 0);
  // Most of the 16 MiB freed (a hole's first and last pages hold glibc's
  // bookkeeping and stay).
  EXPECT_GT(before - after, kBlocks / 2 * kBlock / 2) << "before " << before << ", after " << after;
  for (int i = 1; i < kBlocks; i += 2) ::free(blocks[i]);
}

TEST(FreeMemoryTest, TheReleaserWaitsItsIntervalBetweenReleases) {
  FreeMemoryReleaser releaser(seconds(10));
  std::chrono::steady_clock::time_point t0{seconds(1000)};
  EXPECT_TRUE(releaser.MaybeRelease(t0));  // The first sample.
  EXPECT_FALSE(releaser.MaybeRelease(t0 + seconds(1)));
  EXPECT_FALSE(releaser.MaybeRelease(t0 + seconds(9)));
  EXPECT_TRUE(releaser.MaybeRelease(t0 + seconds(10)));
  EXPECT_FALSE(releaser.MaybeRelease(t0 + seconds(19)));
  EXPECT_TRUE(releaser.MaybeRelease(t0 + seconds(25)));
}

}  // namespace
}  // namespace tarmac::agent
