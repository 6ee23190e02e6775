// SPDX-License-Identifier: GPL-2.0-only
// lib/kstrtox.c semantics: bases, trailing newline, -EINVAL vs -ERANGE.
#include <gtest/gtest.h>

#include <uk/linux/errno.h>
#include <uk/linux/kernel.h>
#include <uk/linux/kstrtox.h>

#include "testmain.h"

namespace {

TEST(KstrtoxTest, UllBasesAndNewline) {
  unsigned long long v = 0;
  EXPECT_EQ(kstrtoull("0", 0, &v), 0);
  EXPECT_EQ(v, 0u);
  EXPECT_EQ(kstrtoull("42\n", 10, &v), 0);
  EXPECT_EQ(v, 42u);
  EXPECT_EQ(kstrtoull("0x1F", 0, &v), 0);
  EXPECT_EQ(v, 31u);
  EXPECT_EQ(kstrtoull("0X1f", 16, &v), 0);
  EXPECT_EQ(v, 31u);
  EXPECT_EQ(kstrtoull("1f", 16, &v), 0);
  EXPECT_EQ(v, 31u);
  EXPECT_EQ(kstrtoull("010", 0, &v), 0);
  EXPECT_EQ(v, 8u);
  EXPECT_EQ(kstrtoull("+7", 0, &v), 0);
  EXPECT_EQ(v, 7u);
  EXPECT_EQ(kstrtoull("18446744073709551615", 10, &v), 0);
  EXPECT_EQ(v, ~0ULL);
}

TEST(KstrtoxTest, UllRejects) {
  unsigned long long v = 5;
  EXPECT_EQ(kstrtoull("", 0, &v), -EINVAL);
  EXPECT_EQ(kstrtoull("\n", 0, &v), -EINVAL);
  EXPECT_EQ(kstrtoull("-1", 0, &v), -EINVAL);
  EXPECT_EQ(kstrtoull(" 1", 0, &v), -EINVAL);
  EXPECT_EQ(kstrtoull("1 ", 0, &v), -EINVAL);
  EXPECT_EQ(kstrtoull("1\n\n", 0, &v), -EINVAL);
  EXPECT_EQ(kstrtoull("09", 0, &v), -EINVAL);  // octal
  EXPECT_EQ(kstrtoull("0x", 16, &v), -EINVAL);
  EXPECT_EQ(kstrtoull("12a", 10, &v), -EINVAL);
  EXPECT_EQ(kstrtoull("18446744073709551616", 10, &v), -ERANGE);
  EXPECT_EQ(kstrtoull("0x10000000000000000", 0, &v), -ERANGE);
  EXPECT_EQ(v, 5u);  // untouched on error
}

TEST(KstrtoxTest, SignedLimits) {
  long long ll = 0;
  EXPECT_EQ(kstrtoll("-9223372036854775808", 10, &ll), 0);
  EXPECT_EQ(ll, LLONG_MIN);
  EXPECT_EQ(kstrtoll("9223372036854775807", 10, &ll), 0);
  EXPECT_EQ(ll, LLONG_MAX);
  EXPECT_EQ(kstrtoll("9223372036854775808", 10, &ll), -ERANGE);
  EXPECT_EQ(kstrtoll("-9223372036854775809", 10, &ll), -ERANGE);
  EXPECT_EQ(kstrtoll("--1", 10, &ll), -EINVAL);
  EXPECT_EQ(kstrtoll("-+1", 10, &ll), -EINVAL);
  EXPECT_EQ(kstrtoll("-0x10", 0, &ll), 0);
  EXPECT_EQ(ll, -16);

  int i = 0;
  EXPECT_EQ(kstrtoint("2147483647", 0, &i), 0);
  EXPECT_EQ(i, INT_MAX);
  EXPECT_EQ(kstrtoint("-2147483648", 0, &i), 0);
  EXPECT_EQ(i, INT_MIN);
  EXPECT_EQ(kstrtoint("2147483648", 0, &i), -ERANGE);
  EXPECT_EQ(kstrtoint("-2147483649", 0, &i), -ERANGE);

  unsigned int u = 0;
  EXPECT_EQ(kstrtouint("4294967295", 0, &u), 0);
  EXPECT_EQ(u, UINT_MAX);
  EXPECT_EQ(kstrtouint("4294967296", 0, &u), -ERANGE);
  EXPECT_EQ(kstrtouint("-1", 0, &u), -EINVAL);

  unsigned long ul = 0;
  EXPECT_EQ(kstrtoul("0x40", 0, &ul), 0);
  EXPECT_EQ(ul, 64ul);

  u8 b = 0;
  EXPECT_EQ(kstrtou8("255", 10, &b), 0);
  EXPECT_EQ(kstrtou8("256", 10, &b), -ERANGE);
  s8 sb = 0;
  EXPECT_EQ(kstrtos8("-128", 10, &sb), 0);
  EXPECT_EQ(sb, -128);
  EXPECT_EQ(kstrtos8("128", 10, &sb), -ERANGE);
  u16 w = 0;
  EXPECT_EQ(kstrtou16("65536", 10, &w), -ERANGE);
  s16 sw = 0;
  EXPECT_EQ(kstrtos16("-32768", 10, &sw), 0);
  EXPECT_EQ(sw, -32768);
}

// The out-of-line forms kstrtoul()/kstrtol() use where long is narrower
// than long long: here they give what kstrtoull()/kstrtoll() give.
TEST(KstrtoxTest, LongForms) {
  unsigned long ul = 0;
  long l = 0;
  EXPECT_EQ(_kstrtoul("0xffffffffffffffff", 0, &ul), 0);
  EXPECT_EQ(ul, ~0UL);
  EXPECT_EQ(_kstrtoul("18446744073709551616", 10, &ul), -ERANGE);
  EXPECT_EQ(_kstrtoul("-1", 10, &ul), -EINVAL);
  EXPECT_EQ(_kstrtol("-9223372036854775808", 10, &l), 0);
  EXPECT_EQ(l, LONG_MIN);
  EXPECT_EQ(_kstrtol("9223372036854775808", 10, &l), -ERANGE);
  EXPECT_EQ(_kstrtol("0x", 0, &l), -EINVAL);
  EXPECT_EQ(kstrtoul("077", 0, &ul), 0);
  EXPECT_EQ(ul, 077UL);
}

TEST(KstrtoxTest, Bool) {
  bool b = false;
  for (const char *t :
       {"y", "Y", "yes", "1", "t", "true", "T", "on", "ON", "On\n"}) {
    b = false;
    EXPECT_EQ(kstrtobool(t, &b), 0) << t;
    EXPECT_TRUE(b) << t;
  }
  for (const char *f :
       {"n", "N", "no", "0", "f", "false", "off", "OFF", "0\n"}) {
    b = true;
    EXPECT_EQ(kstrtobool(f, &b), 0) << f;
    EXPECT_FALSE(b) << f;
  }
  b = true;
  for (const char *bad : {"", "2", "o", "ox", "x", "-1", " y"}) {
    EXPECT_EQ(kstrtobool(bad, &b), -EINVAL) << bad;
  }
  EXPECT_TRUE(b);
  EXPECT_EQ(kstrtobool(nullptr, &b), -EINVAL);
}

TEST(KstrtoxTest, ParseIntegerCountsAndOverflow) {
  unsigned long long v;
  EXPECT_EQ(_parse_integer("123abc", 10, &v), 3u);
  EXPECT_EQ(v, 123u);
  EXPECT_EQ(_parse_integer_limit("123456", 10, &v, 2), 2u);
  EXPECT_EQ(v, 12u);
  unsigned int rv = _parse_integer("99999999999999999999", 10, &v);
  EXPECT_TRUE(rv & KSTRTOX_OVERFLOW);
  EXPECT_EQ(rv & ~KSTRTOX_OVERFLOW, 20u);
  unsigned int base = 0;
  const char *s = _parse_integer_fixup_radix("0xg", &base);
  EXPECT_EQ(base, 8u);  // "0x" not followed by a hex digit: octal "0"
  EXPECT_STREQ(s, "0xg");
}

}  // namespace
