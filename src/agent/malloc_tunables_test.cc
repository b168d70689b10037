// SPDX-License-Identifier: Apache-2.0
#include "agent/malloc_tunables.h"

#include <gtest/gtest.h>
#include <malloc.h>

#include <cstdlib>

namespace tarmac::agent {
namespace {

TEST(MallocTunablesTest, TheCacheSettingIsAddedToWhatTheCallerSet) {
  EXPECT_EQ(TunablesWithCacheOff(nullptr), "glibc.malloc.tcache_count=0");
  EXPECT_EQ(TunablesWithCacheOff(""), "glibc.malloc.tcache_count=0");
  EXPECT_EQ(TunablesWithCacheOff("glibc.malloc.trim_threshold=131072"),
            "glibc.malloc.trim_threshold=131072:glibc.malloc.tcache_count=0");
  // Names that only begin like the cache's are other settings.
  EXPECT_EQ(TunablesWithCacheOff("glibc.malloc.tcache_count_x=1"),
            "glibc.malloc.tcache_count_x=1:glibc.malloc.tcache_count=0");
}

TEST(MallocTunablesTest, ACallerWhoSizedTheCacheKeepsTheirSize) {
  EXPECT_EQ(TunablesWithCacheOff("glibc.malloc.tcache_count=3"), std::nullopt);
  EXPECT_EQ(TunablesWithCacheOff("glibc.malloc.arena_max=1:glibc.malloc.tcache_count=7"), std::nullopt);
  EXPECT_EQ(TunablesWithCacheOff("glibc.malloc.tcache_count"), std::nullopt);
}

TEST(MallocTunablesTest, TheMalloptSettingsLeaveOutThoseTheCallerSet) {
  auto tunables = [](const char* caller) {
    std::vector<std::string> names;
    for (const MallocOption& o : MallocOptionsFor(caller)) names.push_back(o.tunable);
    return names;
  };
  std::vector<std::string> both = {"glibc.malloc.arena_max", "glibc.malloc.mmap_threshold"};
  EXPECT_EQ(tunables(nullptr), both);
  EXPECT_EQ(tunables("glibc.malloc.tcache_count=0"), both);
  EXPECT_EQ(tunables("glibc.malloc.mmap_threshold_x=1"), both);
  EXPECT_EQ(tunables("glibc.malloc.tcache_count=0:glibc.malloc.mmap_threshold=262144"),
            std::vector<std::string>{"glibc.malloc.arena_max"});
  EXPECT_EQ(tunables("glibc.malloc.arena_max=8:glibc.malloc.mmap_threshold=1"), std::vector<std::string>{});
  EXPECT_TRUE(NamesTunable("a=1:glibc.malloc.arena_max=8", "glibc.malloc.arena_max"));
  EXPECT_FALSE(NamesTunable(nullptr, "glibc.malloc.arena_max"));
}

// glibc's own threshold starts at 128 KiB and only rises: a 100 KiB block
// that the heap has no room for grows the heap unless the setting was
// made. (A block the heap's free room can hold comes from there whatever
// the threshold: the room is first given back, as the agent does every
// ten seconds.)
TEST(MallocTunablesTest, AfterTheSettingsABlockOf100KiBIsMappedOnItsOwn) {
  SetMallocOptions("glibc.malloc.arena_max=64");  // This test process keeps its arenas.
  malloc_trim(0);
  size_t mapped_before = mallinfo2().hblks;
  void* block = malloc(100 * 1024);
  ASSERT_NE(block, nullptr);
  EXPECT_EQ(mallinfo2().hblks, mapped_before + 1);
  free(block);
  EXPECT_EQ(mallinfo2().hblks, mapped_before);
}

// The second image's side: what the caller had comes back, the marker goes.
TEST(MallocTunablesTest, AfterTheSecondStartTheCallersTunablesAreBack) {
  setenv(kCallerTunablesVariable, "glibc.malloc.arena_max=1", 1);
  setenv("GLIBC_TUNABLES", "glibc.malloc.arena_max=1:glibc.malloc.tcache_count=0", 1);
  EXPECT_TRUE(ApplyMallocTunables(nullptr));
  ASSERT_NE(std::getenv("GLIBC_TUNABLES"), nullptr);
  EXPECT_STREQ(std::getenv("GLIBC_TUNABLES"), "glibc.malloc.arena_max=1");
  EXPECT_EQ(std::getenv(kCallerTunablesVariable), nullptr);

  setenv(kCallerTunablesVariable, "", 1);
  setenv("GLIBC_TUNABLES", "glibc.malloc.tcache_count=0", 1);
  EXPECT_TRUE(ApplyMallocTunables(nullptr));
  EXPECT_EQ(std::getenv("GLIBC_TUNABLES"), nullptr);
  EXPECT_EQ(std::getenv(kCallerTunablesVariable), nullptr);
}

// Without the marker and with the cache sized by the caller: no second
// start, nothing changed.
TEST(MallocTunablesTest, ACallerWhoSizedTheCacheIsNotStartedAgain) {
  setenv("GLIBC_TUNABLES", "glibc.malloc.tcache_count=2", 1);
  EXPECT_FALSE(ApplyMallocTunables(nullptr));
  EXPECT_STREQ(std::getenv("GLIBC_TUNABLES"), "glibc.malloc.tcache_count=2");
  EXPECT_EQ(std::getenv(kCallerTunablesVariable), nullptr);
  unsetenv("GLIBC_TUNABLES");
}

}  // namespace
}  // namespace tarmac::agent
