// SPDX-License-Identifier: Apache-2.0
#include "common/toml_text.h"

#include <gtest/gtest.h>

namespace tarmac {
namespace {

// Found by fuzz/config_fuzzer.cc: toml++ 3.3 reaches undefined behaviour on
// "a = 1 \u040D" and the like.
TEST(TomlTextTest, NonAsciiOutsideStringsAndCommentsIsRefusedWithItsLine) {
  for (const char* text : {"a = 1 \xd0\x8d\n", "\xd0\x8d = 1\n", "a\xd0\x8d = 1\n", "[s\xd0\x8d]\n",
                           "a = [1,\xd0\x8d 2]\n"}) {
    Status s = CheckTomlText(std::string("x = 1\n") + text, "f.toml");
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << text;
    EXPECT_EQ(s.message(), "f.toml:2: non-ASCII character outside a string or comment") << text;
  }
}

TEST(TomlTextTest, NonAsciiInStringsAndCommentsIsFine) {
  for (const char* text :
       {"a = \"x\xd0\x8dy\"\n", "# c\xd0\x8dmment\na = 1\n", "a = 'x\xd0\x8d'\n", "a = \"\"\"x\n\xd0\x8d\"\"\"\n",
        "a = '''x\n\xd0\x8d'''\n", "a = 1 # \xd0\x8d\n", "\"k\xd0\x8d\" = 1\n", "a = \"q\\\"\xd0\x8d\"\n",
        "a = \"\"\"x\"\"\"\"\nb = '\xd0\x8d'\n"}) {
    EXPECT_TRUE(CheckTomlText(text, "f.toml").ok()) << text;
  }
}

TEST(TomlTextTest, LinesAreCountedThroughMultiLineStrings) {
  Status s = CheckTomlText("a = \"\"\"one\ntwo\nthree\"\"\"\n\xd0\x8d\n", "f.toml");
  EXPECT_EQ(s.message(), "f.toml:4: non-ASCII character outside a string or comment");
}

}  // namespace
}  // namespace tarmac
