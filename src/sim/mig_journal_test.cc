// SPDX-License-Identifier: Apache-2.0
//
// The MIG layout journal: what one process appends, another reads back as
// the same instances (ids, UUIDs); a malformed line is refused naming it.
#include "sim/mig_journal.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "sim/mig_layout.h"
#include "sim/scenario_parser.h"
#include "testutil/testutil.h"

namespace tarmac::sim {
namespace {

Scenario TwoMigGpus() {
  Result<Scenario> s = ParseScenario(
      "[[gpu]]\ncount = 2\nmodel = \"NVIDIA H100 80GB HBM3\"\nmig_layout = [\"3g.40gb\"]\n", "lab.toml");
  EXPECT_TRUE(s.ok()) << s.status().message();
  return s.value();
}

TEST(MigJournalTest, WhatIsAppendedIsReadBackWithItsIdsAndUuids) {
  testing::TempDir dir;
  Scenario scenario = TwoMigGpus();
  EXPECT_EQ(MigJournalSize(dir.path()), 0);
  std::vector<MigInstanceSpec> layout = scenario.gpus[0].mig_instances;
  MigInstanceSpec added;
  ASSERT_TRUE(MakeMigInstance(scenario.gpus[0], "2g.20gb", 3, 1234, &added));
  added.memory_start = 4;  // Made at a placement: it stays there.
  layout.push_back(added);
  ASSERT_TRUE(AppendMigLayout(dir.path(), std::chrono::milliseconds(1234), 0, layout).ok());
  ASSERT_TRUE(AppendMigLayout(dir.path(), std::chrono::milliseconds(2000), 1, {}).ok());
  EXPECT_GT(MigJournalSize(dir.path()), 0);
  Result<std::vector<Fault>> read = ReadMigLayouts(dir.path(), scenario);
  ASSERT_TRUE(read.ok()) << read.status().message();
  ASSERT_EQ(read.value().size(), 2u);
  const Fault& first = read.value()[0];
  EXPECT_EQ(first.kind, FaultKind::kMigReconfigure);
  EXPECT_EQ(first.at, std::chrono::milliseconds(1234));
  ASSERT_EQ(first.mig_instances.size(), 2u);
  EXPECT_EQ(first.mig_instances[0].uuid, scenario.gpus[0].mig_instances[0].uuid);  // Kept.
  EXPECT_EQ(first.mig_instances[1].uuid, added.uuid);
  EXPECT_EQ(first.mig_instances[1].gpu_instance_id, 3);
  EXPECT_EQ(first.mig_instances[0].memory_start, -1);  // Wherever it fits.
  EXPECT_EQ(first.mig_instances[1].memory_start, 4);
  EXPECT_NE(added.uuid, scenario.gpus[0].mig_instances[0].uuid);
  EXPECT_TRUE(read.value()[1].mig_instances.empty());
  EXPECT_EQ(read.value()[1].gpu, 1);
}

TEST(MigJournalTest, AMalformedLineIsRefusedNamingIt) {
  Scenario scenario = TwoMigGpus();
  for (const char* text :
       {"x 0 -\n", "10 2 -\n", "10 0\n", "10 0 9g.90gb:1:0\n", "10 0 1g.10gb:9:0\n", "10 0 1g.10gb:1\n",
        "10 0 1g.10gb:1:0,,\n", "10 0 1g.10gb:1:0:8\n", "10 0 1g.10gb:1:0:-1\n", "10 0 1g.10gb:1:0:2:1\n"}) {
    Result<std::vector<Fault>> r = ParseMigLayouts(std::string("5 0 -\n") + text, "mig-layouts", scenario);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(r.status().message().rfind("mig-layouts:2: ", 0), 0u) << r.status().message();
  }
}

TEST(MigJournalTest, ALinkAFifoOrAFullJournalIsRefusedNeverFollowedNorWaitedOn) {
  testing::TempDir dir;
  Scenario scenario = TwoMigGpus();
  std::string journal = dir.path() + "/mig-layouts";
  std::string victim = dir.Write("victim", "root's file\n");
  // A link planted at the journal's path: neither written through nor read.
  ASSERT_EQ(::symlink(victim.c_str(), journal.c_str()), 0);
  EXPECT_FALSE(AppendMigLayout(dir.path(), std::chrono::milliseconds(1), 0, {}).ok());
  std::ifstream victim_text(victim);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(victim_text), {}), "root's file\n");
  EXPECT_FALSE(ReadMigLayouts(dir.path(), scenario).ok());
  // A FIFO: refused at once on both sides, nobody blocks on it.
  ASSERT_EQ(::unlink(journal.c_str()), 0);
  ASSERT_EQ(::mkfifo(journal.c_str(), 0644), 0);
  EXPECT_FALSE(AppendMigLayout(dir.path(), std::chrono::milliseconds(1), 0, {}).ok());
  EXPECT_FALSE(ReadMigLayouts(dir.path(), scenario).ok());
  // A journal at its bound takes no more.
  ASSERT_EQ(::unlink(journal.c_str()), 0);
  dir.Write("mig-layouts", std::string(size_t{1} << 20, '\n'));
  EXPECT_FALSE(AppendMigLayout(dir.path(), std::chrono::milliseconds(1), 0, {}).ok());
}

// Instances sit where they were made, and the others where they all fit:
// a 3g.40gb and a 2g.20gb and two 1g.10gb fill an H100 only with the 3g at
// slice 4, which a first-come packing from slice 0 would miss.
TEST(MigLayoutTest, InstancesSitAtTheirPlacementOrWhereAllFit) {
  Scenario scenario = TwoMigGpus();
  const GpuSpec& gpu = scenario.gpus[0];
  std::vector<MigInstanceSpec> layout;
  for (const char* profile : {"3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"}) {
    MigInstanceSpec m;
    ASSERT_TRUE(MakeMigInstance(gpu, profile, static_cast<int>(layout.size()) + 1, 0, &m));
    layout.push_back(m);
  }
  EXPECT_EQ(MigMemoryStarts(gpu, layout), (std::vector<int>{4, 0, 2, 3}));
  layout[0].memory_start = 0;  // A 3g made at 0 leaves no room for the 2g beside the two 1g.
  EXPECT_TRUE(MigMemoryStarts(gpu, layout).empty());
  layout.pop_back();
  EXPECT_EQ(MigMemoryStarts(gpu, layout), (std::vector<int>{0, 4, 6}));
}

}  // namespace
}  // namespace tarmac::sim
