// SPDX-License-Identifier: Apache-2.0
#include "http/gzip.h"

#include <gtest/gtest.h>

namespace tarmac::http {
namespace {

TEST(GzipTest, AcceptEncodingAdmitsGzipUnlessItsQualityIsZero) {
  EXPECT_TRUE(AcceptsGzip("gzip"));
  EXPECT_TRUE(AcceptsGzip("gzip, deflate, br"));
  EXPECT_TRUE(AcceptsGzip("br;q=1.0, GZIP;q=0.5"));
  EXPECT_TRUE(AcceptsGzip("*"));
  EXPECT_FALSE(AcceptsGzip(""));
  EXPECT_FALSE(AcceptsGzip("br, deflate"));
  EXPECT_FALSE(AcceptsGzip("gzip;q=0"));
  EXPECT_FALSE(AcceptsGzip("gzip; q=0.000"));
  EXPECT_FALSE(AcceptsGzip("x-gzip2"));
}

TEST(GzipTest, CompressesIntoAGzipMember) {
  std::string text(10000, 'a');
  std::string zipped = Gzip(text);
  ASSERT_GE(zipped.size(), 18u);
  EXPECT_EQ(static_cast<unsigned char>(zipped[0]), 0x1f);  // RFC 1952 magic.
  EXPECT_EQ(static_cast<unsigned char>(zipped[1]), 0x8b);
  EXPECT_LT(zipped.size(), 200u);
  // The trailer's ISIZE is the input's length.
  uint32_t size = 0;
  for (int i = 0; i < 4; ++i)
    size |= static_cast<uint32_t>(static_cast<unsigned char>(zipped[zipped.size() - 4 + i])) << (8 * i);
  EXPECT_EQ(size, 10000u);
}

}  // namespace
}  // namespace tarmac::http
