// SPDX-License-Identifier: Apache-2.0
#include "common/terminal_text.h"

#include <gtest/gtest.h>

#include <string>

namespace tarmac {
namespace {

// No byte a terminal acts on: C0, DEL, a raw C1 byte, or the UTF-8 of a C1
// control or a bidi override.
bool HoldsNoControl(const std::string& s) {
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7f) return false;
    if (c == 0xc2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) <= 0x9f) return false;
  }
  return s.find("\u202e") == std::string::npos && s.find("\u2066") == std::string::npos;
}

TEST(TerminalTextTest, TerminalEscapesAreShownNotEmitted) {
  EXPECT_EQ(ForTerminal("\033]0;pwned\a"), "\\e]0;pwned\\a");
  EXPECT_EQ(ForTerminal("\033[2J"), "\\e[2J");
  EXPECT_EQ(ForTerminal("\033]52;c;ZWNobyBwd25lZA==\a"), "\\e]52;c;ZWNobyBwd25lZA==\\a");
  EXPECT_EQ(ForTerminal("\033]8;;http://x\033\\link\033]8;;\033\\"),
            "\\e]8;;http://x\\e\\\\link\\e]8;;\\e\\\\");
  EXPECT_EQ(ForTerminal(std::string("a\0b", 3)), "a\\0b");
  EXPECT_EQ(ForTerminal("a\nb\tc\rd\x7f"), "a\\nb\\tc\\rd\\x7f");
}

TEST(TerminalTextTest, C1ControlsBidiMarksAndBadUtf8AreShown) {
  EXPECT_EQ(ForTerminal("\xc2\x9b"
                        "2J"),
            "\\u009b2J");  // CSI as a UTF-8 C1 character.
  EXPECT_EQ(ForTerminal("\x9b"
                        "2J"),
            "\\x9b2J");                                             // CSI as a raw byte: not UTF-8.
  EXPECT_EQ(ForTerminal("evil\u202etxt.sh"), "evil\\u202etxt.sh");  // Right-to-left override.
  EXPECT_EQ(ForTerminal("a\u2066b\u2069"), "a\\u2066b\\u2069");
  EXPECT_EQ(ForTerminal("\xff\xfe"), "\\xff\\xfe");
  EXPECT_EQ(ForTerminal("\xe2\x82"), "\\xe2\\x82");           // A character cut short.
  EXPECT_EQ(ForTerminal("\xc0\xaf"), "\\xc0\\xaf");           // Overlong '/'.
  EXPECT_EQ(ForTerminal("\xed\xa0\x80"), "\\xed\\xa0\\x80");  // A surrogate.
}

TEST(TerminalTextTest, PrintableTextPassesUnchangedAndBackslashIsDoubled) {
  EXPECT_EQ(ForTerminal("python train.py --lr=3e-4 日本 89 °C 🚀"), "python train.py --lr=3e-4 日本 89 °C 🚀");
  EXPECT_EQ(ForTerminal("a\\e"), "a\\\\e");  // So "\e" in the output always meant ESC.
  EXPECT_TRUE(IsTerminalSafe("alice"));
  EXPECT_TRUE(IsTerminalSafe("a\\b"));
  EXPECT_FALSE(IsTerminalSafe("\xc2\x9b"));
  EXPECT_FALSE(IsTerminalSafe("\xff"));
  EXPECT_FALSE(IsTerminalSafe("\033[31m"));
}

TEST(TerminalTextTest, LinesKeepTheirBreaksAndNothingElse) {
  EXPECT_EQ(ForTerminalLines("node-1 \033[2J\nnode-2\r\n"), "node-1 \\e[2J\nnode-2\\r\n");
}

TEST(TerminalTextTest, NoByteStringEverYieldsAControl) {
  // Every one- and two-byte string, and three-byte strings around the C1
  // and bidi ranges.
  for (int a = 0; a < 256; ++a) {
    for (int b = 0; b < 256; ++b) {
      std::string s{static_cast<char>(a), static_cast<char>(b)};
      ASSERT_TRUE(HoldsNoControl(ForTerminal(s))) << a << " " << b;
      ASSERT_TRUE(HoldsNoControl(ForTerminal(s + "\x80\xae")));
    }
  }
  for (int c = 0x80; c < 0xc0; ++c) {
    std::string s{'\xe2', '\x80', static_cast<char>(c)};
    ASSERT_TRUE(HoldsNoControl(ForTerminal(s))) << c;
  }
}

}  // namespace
}  // namespace tarmac
