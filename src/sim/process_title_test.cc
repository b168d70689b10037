// SPDX-License-Identifier: Apache-2.0
#include "sim/process_title.h"

#include <gtest/gtest.h>
#include <sys/prctl.h>

#include <cstring>
#include <fstream>
#include <iterator>

#include "testutil/testutil.h"

namespace tarmac::sim {
namespace {

// argv as the kernel lays it out: the strings one after another.
struct Arguments {
  explicit Arguments(const std::vector<std::string>& words) {
    for (const std::string& w : words) block += w + '\0';
    for (size_t at = 0; at < block.size(); at += std::strlen(block.data() + at) + 1) {
      pointers.push_back(block.data() + at);
    }
  }
  std::string block;
  std::vector<char*> pointers;
};

TEST(ProcessTitleTest, TheArgumentsReadAsTheTitleWordByWord) {
  Arguments args(
      {"/usr/lib/tarmac/tarmac-simload", "--memory", "20GiB", "--title", "python3 train.py --lr 3e-4"});
  char before[16] = {};
  ::prctl(PR_GET_NAME, before, 0, 0, 0);
  ASSERT_TRUE(SetProcessTitle(static_cast<int>(args.pointers.size()), args.pointers.data(),
                              "python3  train.py --lr 3e-4")
                  .ok());
  std::string want = std::string("python3\0train.py\0--lr\0003e-4\0", 27);
  EXPECT_EQ(args.block.substr(0, want.size()), want);
  EXPECT_EQ(args.block.find_first_not_of('\0', want.size()), std::string::npos) << "the rest is NULs";
  char name[16] = {};
  ::prctl(PR_GET_NAME, name, 0, 0, 0);
  EXPECT_STREQ(name, "python3");
  ::prctl(PR_SET_NAME, before, 0, 0, 0);
}

TEST(ProcessTitleTest, ATitleThatDoesNotFitOrIsEmptyChangesNothing) {
  Arguments args({"simload", "--title", "x"});
  std::string kept = args.block;
  int argc = static_cast<int>(args.pointers.size());
  EXPECT_FALSE(SetProcessTitle(argc, args.pointers.data(), "a-much-longer-command line").ok());
  EXPECT_FALSE(SetProcessTitle(argc, args.pointers.data(), "   ").ok());
  EXPECT_EQ(args.block, kept);
}

// A real process: /proc says the title, as tarmac's attribution reads it.
TEST(ProcessTitleTest, ASimloadWithATitleReadsAsItsCommandInProc) {
  testing::TempDir dir;
  std::string world = dir.path() + "/world";
  testing::Child load({testing::BinDir() + "/tarmac-simload", "--title", "python3 -m jupyterlab --port 8888",
                       "--pattern", "idle", "--memory", "1GiB", "--scenario",
                       testing::SourceDir() + "/examples/scenarios/lab-8gpu.toml", "--sim-dir", world},
                      {});
  ASSERT_TRUE(testing::WaitForLoad(world, load.pid()));
  auto read = [&](const std::string& file) {
    std::ifstream in("/proc/" + std::to_string(load.pid()) + "/" + file);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  EXPECT_EQ(read("cmdline").substr(0, 34), std::string("python3\0-m\0jupyterlab\0--port\0008888\0", 34));
  EXPECT_EQ(read("comm"), "python3\n");
}

}  // namespace
}  // namespace tarmac::sim
