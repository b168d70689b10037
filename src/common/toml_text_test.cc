// SPDX-License-Identifier: Apache-2.0
#include "common/toml_text.h"

#include <gtest/gtest.h>

namespace tarmac {
namespace {

// Found by fuzz/config_fuzzer.cc: toml++ 3.3 reaches undefined behaviour on
// "a = 1 \u040D" and the like.
TEST(TomlTextTest, NonAsciiOutsideStringsAndCommentsIsRefusedWithItsLine) {
  for (const char* text :
       {"a = 1 \xd0\x8d\n", "\xd0\x8d = 1\n", "a\xd0\x8d = 1\n", "[s\xd0\x8d]\n", "a = [1,\xd0\x8d 2]\n"}) {
    Status s = CheckTomlText(std::string("x = 1\n") + text, "f.toml");
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << text;
    EXPECT_EQ(s.message(), "f.toml:2: non-ASCII character outside a string or comment") << text;
  }
}

TEST(TomlTextTest, NonAsciiInStringsAndCommentsIsFine) {
  for (const char* text :
       {"a = \"x\xd0\x8dy\"\n", "# c\xd0\x8dmment\na = 1\n", "a = 'x\xd0\x8d'\n",
        "a = \"\"\"x\n\xd0\x8d\"\"\"\n", "a = '''x\n\xd0\x8d'''\n", "a = 1 # \xd0\x8d\n",
        "\"k\xd0\x8d\" = 1\n", "a = \"q\\\"\xd0\x8d\"\n", "a = \"\"\"x\"\"\"\"\nb = '\xd0\x8d'\n"}) {
    EXPECT_TRUE(CheckTomlText(text, "f.toml").ok()) << text;
  }
}

// Also found by the fuzzer: a quote where no string may start is not one,
// for toml++ as here.
TEST(TomlTextTest, AQuoteWhereNoStringMayStartOpensNone) {
  EXPECT_FALSE(CheckTomlText("a =-m::::'''::\xc6\xbc::'''\n", "f.toml").ok());
  EXPECT_FALSE(CheckTomlText("a = \"x\" \"\xd0\x8d\"\n", "f.toml").ok());
  EXPECT_TRUE(CheckTomlText("a = [\n  '\xd0\x8d',\n  \"\xd0\x8d\"]\nt = {k = '\xd0\x8d'}\n", "f.toml").ok());
}

// And: '"""' where a key goes is an empty key and a quote, not a string.
TEST(TomlTextTest, TripleQuotesOnlyOpenMultiLineStringsWhereValuesGo) {
  EXPECT_FALSE(CheckTomlText("\"\"\"ey: k \xef\xbb\x9f\"\"\"\n", "f.toml").ok());
  EXPECT_TRUE(CheckTomlText("a = \"\"\"x \xef\xbb\x9f\"\"\"\n", "f.toml").ok());
  EXPECT_TRUE(CheckTomlText("a = [\n\"\"\"\xd0\x8d\"\"\",\n'''\xd0\x8d''']\n", "f.toml").ok());
  EXPECT_TRUE(
      CheckTomlText("[\"t\xd0\x8d\".'s\xd0\x8d']\n\"k\xd0\x8d\".x = {\"i\xd0\x8d\" = 1, j = '\xd0\x8d'}\n",
                    "f.toml")
          .ok());
  EXPECT_FALSE(CheckTomlText("[t]\n[\xd0\x8d]\n", "f.toml").ok());
}

// And: toml++ tests the character after a line-ending backslash for
// whitespace, so there it must be ASCII too.
TEST(TomlTextTest, NonAsciiRightAfterALineEndingBackslashIsRefused) {
  Status s = CheckTomlText("a = \"\"\"x \\\n    \xc8\xb9\"\"\"\n", "f.toml");
  EXPECT_EQ(s.message(), "f.toml:2: non-ASCII character right after a line-ending backslash");
  EXPECT_TRUE(CheckTomlText("a = \"\"\"x \\\n    y\xc8\xb9\"\"\"\n", "f.toml").ok());
  EXPECT_TRUE(CheckTomlText("a = '''x \\\n\xc8\xb9'''\n", "f.toml").ok());  // Literal: no escapes.
}

TEST(TomlTextTest, LinesAreCountedThroughMultiLineStrings) {
  Status s = CheckTomlText("a = \"\"\"one\ntwo\nthree\"\"\"\n\xd0\x8d\n", "f.toml");
  EXPECT_EQ(s.message(), "f.toml:4: non-ASCII character outside a string or comment");
}

}  // namespace
}  // namespace tarmac
