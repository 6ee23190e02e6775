// SPDX-License-Identifier: GPL-2.0-only
// strim()/strstrip(): white space cut off both ends of a string in place.
#include <gtest/gtest.h>

#include <cstring>

#include <uk/linux/string.h>

namespace {

TEST(StringTest, StrimCutsBothEnds) {
  char s[] = " \t+1-2 \n";
  char *p = strim(s);
  EXPECT_STREQ(p, "+1-2");
  EXPECT_EQ(p, s + 2);  // past the leading white space, in the same buffer
  EXPECT_EQ(s[6], '\0');
}

TEST(StringTest, StrstripOfBlankAndEmpty) {
  char blank[] = " \n\t ";
  char *p = strstrip(blank);
  EXPECT_STREQ(p, "");
  EXPECT_EQ(p, blank);  // the end is cut first, so nothing is left to skip
  char empty[] = "";
  EXPECT_EQ(strstrip(empty), empty);
  char none[] = "abc";
  EXPECT_EQ(strstrip(none), none);
  EXPECT_STREQ(none, "abc");
}

}  // namespace
