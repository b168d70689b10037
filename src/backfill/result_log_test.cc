// SPDX-License-Identifier: Apache-2.0
//
// The results file on real files: a writer killed mid-line, a file reopened
// after it, a repeated id, and a full disk (a small tmpfs).
#include "backfill/result_log.h"

#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "testutil/testutil.h"

namespace tarmac::backfill {
namespace {

using nlohmann::json;

json Line(const std::string& id) {
  return {
      {"id", "batch_req_" + id}, {"custom_id", id}, {"response", {{"status_code", 200}}}, {"error", nullptr}};
}

std::string Contents(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(ResultLogTest, ALineIsWrittenOnceAndFoundAgainAfterReopening) {
  testing::TempDir dir;
  std::string path = dir.path() + "/output.jsonl";
  {
    Result<std::unique_ptr<ResultLog>> log = ResultLog::Open(path);
    ASSERT_TRUE(log.ok()) << log.status().ToString();
    ASSERT_TRUE(log.value()->Append(Line("a")).ok());
    ASSERT_TRUE(log.value()->Append(Line("b")).ok());
    Status again = log.value()->Append(Line("a"));
    EXPECT_EQ(again.code(), StatusCode::kFailedPrecondition) << again.ToString();
    EXPECT_FALSE(log.value()->Append(json{{"no", "id"}}).ok());
  }
  Result<std::unique_ptr<ResultLog>> log = ResultLog::Open(path);
  ASSERT_TRUE(log.ok());
  EXPECT_EQ(log.value()->size(), 2u);
  EXPECT_TRUE(log.value()->IsDone("a"));
  EXPECT_TRUE(log.value()->IsDone("b"));
  EXPECT_FALSE(log.value()->IsDone("c"));
  EXPECT_EQ(log.value()->Append(Line("b")).code(), StatusCode::kFailedPrecondition);
}

// A writer killed with SIGKILL in the middle of its lines: what was
// appended stays, a torn tail is cut off, and nothing appears twice.
TEST(ResultLogTest, AWriterKilledMidWayLeavesWholeLinesOnly) {
  testing::TempDir dir;
  std::string path = dir.path() + "/output.jsonl";
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    Result<std::unique_ptr<ResultLog>> log = ResultLog::Open(path);
    if (!log.ok()) _exit(1);
    for (int i = 0;; ++i) {
      if (!log.value()->Append(Line("r" + std::to_string(i))).ok()) _exit(2);
    }
  }
  // Let it write for a while, then kill it where it stands.
  for (int i = 0; i < 200; ++i) {
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0 && st.st_size > 20000) break;
    usleep(10000);
  }
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  // And a torn line, as a kill in the middle of a write() would leave one.
  {
    std::ofstream out(path, std::ios::app);
    out << R"({"custom_id":"torn","respo)";
  }
  Result<std::unique_ptr<ResultLog>> log = ResultLog::Open(path);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  EXPECT_GT(log.value()->size(), 10u);
  EXPECT_EQ(log.value()->repaired_bytes(), std::string(R"({"custom_id":"torn","respo)").size());
  EXPECT_FALSE(log.value()->IsDone("torn"));
  std::string text = Contents(path);
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(text.back(), '\n');
  // The ids are r0..rN-1 with no gap and no repeat.
  size_t n = log.value()->size();
  for (size_t i = 0; i < n; ++i) EXPECT_TRUE(log.value()->IsDone("r" + std::to_string(i))) << i;
  // The resumed writer carries on after what is there.
  ASSERT_TRUE(log.value()->Append(Line("torn")).ok());
  EXPECT_TRUE(ResultLog::Open(path).value()->IsDone("torn"));
}

TEST(ResultLogTest, AFileChangedInTheMiddleIsRefusedNamingTheLine) {
  testing::TempDir dir;
  std::string path = dir.Write("output.jsonl", "{\"custom_id\":\"a\"}\ngarbage\n{\"custom_id\":\"b\"}\n");
  Result<std::unique_ptr<ResultLog>> log = ResultLog::Open(path);
  ASSERT_FALSE(log.ok());
  EXPECT_EQ(log.status().code(), StatusCode::kCorruption);
  EXPECT_NE(log.status().message().find("output.jsonl:2:"), std::string::npos) << log.status().message();
  std::string twice = dir.Write("twice.jsonl", "{\"custom_id\":\"a\"}\n{\"custom_id\":\"a\"}\n");
  EXPECT_NE(ResultLog::Open(twice).status().message().find("appears twice"), std::string::npos);
}

TEST(ResultLogTest, AFullDiskLosesNothingAndLeavesNoPartialLine) {
  testing::TempDir dir;
  std::string mnt = dir.path() + "/small";
  ::mkdir(mnt.c_str(), 0755);
  if (::mount("tarmac-test", mnt.c_str(), "tmpfs", 0, "size=64k") != 0)
    GTEST_SKIP() << "mounting a tmpfs needs root";
  std::string path = mnt + "/output.jsonl";
  Status last;
  size_t written = 0;
  {
    Result<std::unique_ptr<ResultLog>> log = ResultLog::Open(path);
    ASSERT_TRUE(log.ok());
    std::string padding(700, 'x');
    for (int i = 0; i < 1000; ++i) {
      json line = Line("r" + std::to_string(i));
      line["padding"] = padding;
      last = log.value()->Append(line);
      if (!last.ok()) break;
      ++written;
    }
  }
  EXPECT_EQ(last.code(), StatusCode::kResourceExhausted) << last.ToString();
  EXPECT_NE(last.message().find("output.jsonl"), std::string::npos) << last.message();
  std::string text = Contents(path);
  Result<std::unique_ptr<ResultLog>> reopened = ResultLog::Open(path);
  ::umount(mnt.c_str());
  ASSERT_TRUE(reopened.ok()) << reopened.status().ToString();
  EXPECT_EQ(reopened.value()->size(), written);
  EXPECT_EQ(reopened.value()->repaired_bytes(), 0u) << "a partial line was left behind";
  EXPECT_GT(written, 10u);
}

}  // namespace
}  // namespace tarmac::backfill
