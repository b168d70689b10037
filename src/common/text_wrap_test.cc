// SPDX-License-Identifier: Apache-2.0
#include "common/text_wrap.h"

#include <gtest/gtest.h>

namespace tarmac {
namespace {

TEST(TextWrapTest, WordsCarryOverAndContinuationLinesAreIndented) {
  EXPECT_EQ(WrapText("check airflow, fan speeds and the inlet", 20, 6, 4),
            "check airflow,\n    fan speeds and\n    the inlet");
  EXPECT_EQ(WrapText("short", 20, 0, 2), "short");
  EXPECT_EQ(WrapText("a\nb c", 20, 0, 2), "a\n  b c");
  // A word longer than a line is cut at the line's end.
  EXPECT_EQ(WrapText("ab averyveryverylongword x", 12, 0, 2), "ab averyvery\n  verylongwo\n  rd x");
  EXPECT_EQ(WrapText("abcdefgh", 4, 0, 2), "abcd\n  ef\n  gh");  // Even when a line holds little.
  // A list is cut between its items, never inside one (a UUID).
  EXPECT_EQ(WrapText("GPU-47ebcdc4-36d9-0bef,GPU-3adccd91-9a34-6d76,GPU-0d5fa55b-1111-2222", 50, 0, 2),
            "GPU-47ebcdc4-36d9-0bef,GPU-3adccd91-9a34-6d76,\n  GPU-0d5fa55b-1111-2222");
  EXPECT_EQ(WrapText("°C °C °C", 6, 0, 0), "°C °C\n°C");       // Columns, not bytes.
  EXPECT_EQ(WrapText("a long line", 0, 0, 2), "a long line");  // No width: no wrapping.
  EXPECT_EQ(WrapText("a\n\nb", 20, 0, 2), "a\n\n  b");         // No line of spaces alone.
}

TEST(TextWrapTest, ColumnsCountCharactersNotBytesOrColourCodes) {
  EXPECT_EQ(TextColumns("89 °C"), 5u);
  EXPECT_EQ(TextColumns("\033[31mTHROTTLED\033[0m"), 9u);
  EXPECT_EQ(TextColumns(""), 0u);
}

}  // namespace
}  // namespace tarmac
