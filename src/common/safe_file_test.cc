// SPDX-License-Identifier: Apache-2.0
#include "common/safe_file.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "common/fs.h"
#include "common/proc_files.h"

namespace tarmac {
namespace {

class SafeFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/tarmac-safe-file-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { (void)!std::system(("rm -rf " + dir_).c_str()); }
  std::string Write(const std::string& name, const std::string& text) {
    std::string path = dir_ + "/" + name;
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    EXPECT_GE(fd, 0);
    EXPECT_EQ(::write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
    ::close(fd);
    return path;
  }
  std::string dir_;
};

TEST_F(SafeFileTest, ARegularFileIsReadWholeOrCutAtTheBound) {
  std::string path = Write("f", "0123456789");
  Result<std::string> all = ReadForeignFile(path);
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  EXPECT_EQ(all.value(), "0123456789");
  Result<std::string> cut = ReadForeignFile(path, {.max_bytes = 4});
  ASSERT_TRUE(cut.ok());
  EXPECT_EQ(cut.value(), "0123");
}

TEST_F(SafeFileTest, RegressionAFifoIsRefusedAtOnceNotWaitedOn) {
  std::string path = dir_ + "/fifo";
  ASSERT_EQ(::mkfifo(path.c_str(), 0644), 0);
  // No writer: a blocking open would wait for ever; this returns.
  Result<std::string> r = ReadForeignFile(path);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("a FIFO"), std::string::npos) << r.status().message();
  std::string text;
  EXPECT_FALSE(ReadSmallFile(path, &text));
  EXPECT_FALSE(ReadOperatorFile(path, &text));
}

TEST_F(SafeFileTest, ALinkIsNotFollowedUnlessAnOperatorsFileMayBeOne) {
  std::string target = Write("target", "secret");
  std::string link = dir_ + "/link";
  ASSERT_EQ(::symlink(target.c_str(), link.c_str()), 0);
  Result<std::string> r = ReadForeignFile(link);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("symbolic link"), std::string::npos) << r.status().message();
  std::string text;
  EXPECT_FALSE(ReadSmallFile(link, &text));
  ASSERT_TRUE(ReadOperatorFile(link, &text));
  EXPECT_EQ(text, "secret");
}

TEST_F(SafeFileTest, ADirectoryAndAMissingFileAreNamed) {
  Result<std::string> d = ReadForeignFile(dir_);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("a directory"), std::string::npos);
  Result<std::string> missing = ReadForeignFile(dir_ + "/none");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

TEST_F(SafeFileTest, RegressionAnAtomicWriteNeverFollowsALinkAtItsTempName) {
  std::string victim = Write("victim", "keep");
  std::string path = dir_ + "/state.json";
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  ASSERT_EQ(::symlink(victim.c_str(), tmp.c_str()), 0);
  ASSERT_TRUE(WriteFileAtomically(path, "new").ok());
  std::string text;
  ASSERT_TRUE(ReadSmallFile(victim, &text));
  EXPECT_EQ(text, "keep");
  ASSERT_TRUE(ReadSmallFile(path, &text));
  EXPECT_EQ(text, "new");
  struct stat st {};
  EXPECT_NE(::lstat(tmp.c_str(), &st), 0) << "the planted link is gone, not the file it named";
}

}  // namespace
}  // namespace tarmac
