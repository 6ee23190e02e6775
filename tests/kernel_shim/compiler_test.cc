// SPDX-License-Identifier: GPL-2.0-only
// compiler.h, kernel.h, minmax.h, log2.h, err.h, errno.h and WARN_ON.
#include <gtest/gtest.h>

#include <cstdint>

#include <uk/linux/build_bug.h>
#include <uk/linux/compiler.h>
#include <uk/linux/container_of.h>
#include <uk/linux/err.h>
#include <uk/linux/errno.h>
#include <uk/linux/kernel.h>
#include <uk/linux/log2.h>
#include <uk/linux/minmax.h>
#include <uk/linux/printk.h>

#include "testmain.h"

namespace {

TEST(CompilerTest, LikelyUnlikelyKeepTruthValue) {
  int three = 3, zero = 0;
  EXPECT_EQ(likely(three), 1);
  EXPECT_EQ(likely(zero), 0);
  EXPECT_EQ(unlikely(three), 1);
  EXPECT_EQ(unlikely(zero), 0);
  // !! normalisation: a pointer or a wide value becomes 0/1.
  void *p = &three;
  EXPECT_EQ(likely(p), 1);
  EXPECT_EQ(unlikely(0x100000000ULL), 1);
}

TEST(CompilerTest, ReadWriteOnceScalars) {
  uint8_t b = 0;
  uint16_t h = 0;
  uint32_t w = 0;
  uint64_t q = 0;
  int *ptr = nullptr;
  int target = 5;
  WRITE_ONCE(b, 0xab);
  WRITE_ONCE(h, 0xabcd);
  WRITE_ONCE(w, 0xdeadbeefu);
  WRITE_ONCE(q, 0x0123456789abcdefULL);
  WRITE_ONCE(ptr, &target);
  EXPECT_EQ(READ_ONCE(b), 0xab);
  EXPECT_EQ(READ_ONCE(h), 0xabcd);
  EXPECT_EQ(READ_ONCE(w), 0xdeadbeefu);
  EXPECT_EQ(READ_ONCE(q), 0x0123456789abcdefULL);
  EXPECT_EQ(READ_ONCE(ptr), &target);
  EXPECT_EQ(*READ_ONCE(ptr), 5);
  // The value written is converted to the destination type.
  WRITE_ONCE(b, 0x1ff);
  EXPECT_EQ(b, 0xff);
}

TEST(CompilerTest, ReadWriteOnceSmallStruct) {
  struct Pair {
    int a;
    short b;
  };
  struct Big {
    long v[3];
  };
  Pair p{1, 2};
  Pair got = READ_ONCE(p);
  EXPECT_EQ(got.a, 1);
  EXPECT_EQ(got.b, 2);
  WRITE_ONCE(p, (Pair{7, 8}));
  EXPECT_EQ(p.a, 7);
  EXPECT_EQ(p.b, 8);
  Big big{{1, 2, 3}};  // not a scalar size: the memcpy path
  Big g = READ_ONCE(big);
  EXPECT_EQ(g.v[2], 3);
  WRITE_ONCE(big, (Big{{4, 5, 6}}));
  EXPECT_EQ(big.v[0], 4);
  EXPECT_EQ(big.v[2], 6);
}

TEST(CompilerTest, DataRaceYieldsTheExpressionValue) {
  int x = 41;
  int y = data_race(x + 1);
  EXPECT_EQ(y, 42);
  data_race(x = 7);
  EXPECT_EQ(x, 7);
}

struct Outer {
  int a;
  char pad[13];
  long member;
  int tail;
};

TEST(CompilerTest, ContainerOf) {
  Outer o{};
  long *m = &o.member;
  EXPECT_EQ(container_of(m, Outer, member), &o);
  int *t = &o.tail;
  EXPECT_EQ(container_of(t, Outer, tail), &o);
  EXPECT_EQ(container_of(&o.a, Outer, a), &o);
  const Outer *co = &o;
  EXPECT_EQ(container_of_const(&co->tail, Outer, tail), co);
  EXPECT_EQ(sizeof_field(Outer, member), sizeof(long));
}

struct CacheAligned {
  int x ____cacheline_aligned_in_smp;
  int y ____cacheline_aligned_in_smp;
};

TEST(CompilerTest, CachelineAligned) {
  EXPECT_EQ(alignof(CacheAligned), 64u);
  EXPECT_EQ(offsetof(CacheAligned, y), 64u);
  EXPECT_EQ(sizeof(CacheAligned), 128u);
  EXPECT_EQ(SMP_CACHE_BYTES, 64);
}

TEST(CompilerTest, BuildBugOnCompiles) {
  BUILD_BUG_ON(sizeof(u32) != 4);
  BUILD_BUG_ON(sizeof(u64) != 8);
  BUILD_BUG_ON_MSG(sizeof(long) != 8, "LP64 only");
  EXPECT_EQ(BUILD_BUG_ON_ZERO(0), 0);
}

TEST(CompilerTest, MinMaxClamp) {
  EXPECT_EQ(min(3, 5), 3);
  EXPECT_EQ(max(3, 5), 5);
  EXPECT_EQ(min(-1L, 2L), -1L);
  EXPECT_EQ(min3(4, 2, 9), 2);
  EXPECT_EQ(max3(4, 2, 9), 9);
  EXPECT_EQ(clamp(15, 0, 10), 10);
  EXPECT_EQ(clamp(-5, 0, 10), 0);
  EXPECT_EQ(clamp(5, 0, 10), 5);
  // min_t converts both operands first: -1 as unsigned is the larger.
  EXPECT_EQ(min_t(unsigned int, -1, 5), 5u);
  EXPECT_EQ(min_t(int, -1, 5), -1);
  int wide = 0x1ff;
  EXPECT_EQ(max_t(u8, wide, 3), 0xff);
  EXPECT_EQ(clamp_t(int, 100, 1, 50), 50);
  EXPECT_EQ(clamp_val((u16)7, 8, 9), 8);
  // Each argument is evaluated once.
  int i = 0;
  EXPECT_EQ(min(i++, 10), 0);
  EXPECT_EQ(i, 1);
  int a = 1, b = 2;
  swap(a, b);
  EXPECT_EQ(a, 2);
  EXPECT_EQ(b, 1);
  // std::numeric_limits<T>::max() is not broken by the function form.
  EXPECT_EQ(std::numeric_limits<int>::max(), INT_MAX);
}

TEST(CompilerTest, DivRoundUpAndRounding) {
  EXPECT_EQ(DIV_ROUND_UP(0, 4), 0);
  EXPECT_EQ(DIV_ROUND_UP(1, 4), 1);
  EXPECT_EQ(DIV_ROUND_UP(4, 4), 1);
  EXPECT_EQ(DIV_ROUND_UP(5, 4), 2);
  EXPECT_EQ(DIV_ROUND_UP_ULL(1ULL << 40, 3), ((1ULL << 40) + 2) / 3);
  EXPECT_EQ(round_up(0u, 8u), 0u);
  EXPECT_EQ(round_up(1u, 8u), 8u);
  EXPECT_EQ(round_up(8u, 8u), 8u);
  EXPECT_EQ(round_up(9UL, 4096UL), 4096UL);
  EXPECT_EQ(round_down(9u, 8u), 8u);
  EXPECT_EQ(round_down(7u, 8u), 0u);
  EXPECT_EQ(round_down(4097UL, 4096UL), 4096UL);
  EXPECT_EQ(roundup(10, 3), 12);
  EXPECT_EQ(rounddown(10, 3), 9);
  EXPECT_EQ(ALIGN(13UL, 8), 16UL);
  EXPECT_TRUE(IS_ALIGNED(64UL, 64));
  EXPECT_FALSE(IS_ALIGNED(65UL, 64));
  EXPECT_EQ(BIT(63), 1UL << 63);
  EXPECT_EQ(GENMASK(7, 4), 0xf0UL);
  EXPECT_EQ(GENMASK(63, 0), ~0UL);
  EXPECT_EQ(upper_32_bits(0x1234567887654321ULL), 0x12345678u);
  EXPECT_EQ(lower_32_bits(0x1234567887654321ULL), 0x87654321u);
  int arr[7];
  EXPECT_EQ(ARRAY_SIZE(arr), 7u);
}

TEST(CompilerTest, PowersOfTwoConstant) {
  static_assert(ilog2(1) == 0);
  static_assert(ilog2(2) == 1);
  static_assert(ilog2(3) == 1);
  static_assert(ilog2(4096) == 12);
  static_assert(ilog2(0xffffffffULL) == 31);
  static_assert(ilog2(1ULL << 63) == 63);
  EXPECT_EQ(roundup_pow_of_two(1), 1UL);
  EXPECT_EQ(roundup_pow_of_two(5), 8UL);
  EXPECT_EQ(roundup_pow_of_two(64), 64UL);
  EXPECT_EQ(roundup_pow_of_two(65), 128UL);
  EXPECT_EQ(rounddown_pow_of_two(1), 1UL);
  EXPECT_EQ(rounddown_pow_of_two(65), 64UL);
  EXPECT_EQ(rounddown_pow_of_two(64), 64UL);
  EXPECT_EQ(order_base_2(1), 0);
  EXPECT_EQ(order_base_2(5), 3);
}

// Runtime variants: the values come through a volatile so that
// __builtin_constant_p is false.
template <typename T>
T opaque(T v) {
  volatile T x = v;
  return x;
}

TEST(CompilerTest, PowersOfTwoRuntime) {
  for (int b = 0; b < 32; b++) {
    u32 v = opaque<u32>(1u << b);
    EXPECT_EQ(ilog2(v), b);
    if (b > 0) {
      EXPECT_EQ(ilog2(opaque<u32>(v | (v - 1))), b) << b;
    }
    EXPECT_EQ(ilog2(opaque<u32>(v + (v >> 1))), b);
  }
  for (int b = 0; b < 64; b++) {
    u64 v = opaque<u64>(1ULL << b);
    EXPECT_EQ(ilog2(v), b);
    EXPECT_EQ(ilog2(opaque<u64>(v | (v - 1))), b);
  }
  EXPECT_EQ(ilog2(opaque<u64>(0x100000000ULL)), 32);  // u64 path, not u32
  for (unsigned long n = 1; n < 5000; n++) {
    unsigned long v = opaque(n);
    unsigned long up = 1, down = 1;
    while (up < n) up <<= 1;
    while (down * 2 <= n) down <<= 1;
    ASSERT_EQ(roundup_pow_of_two(v), up) << n;
    ASSERT_EQ(rounddown_pow_of_two(v), down) << n;
    ASSERT_EQ(is_power_of_2(v), up == n) << n;
  }
  EXPECT_EQ(roundup_pow_of_two(opaque(1UL << 40) + 1), 1UL << 41);
  EXPECT_EQ(rounddown_pow_of_two(opaque(~0UL)), 1UL << 63);
  EXPECT_FALSE(is_power_of_2(opaque(0UL)));
  EXPECT_TRUE(is_power_of_2(opaque(1UL << 63)));
}

TEST(CompilerTest, ErrPtr) {
  int obj;
  void *e = ERR_PTR(-ENOMEM);
  EXPECT_TRUE(IS_ERR(e));
  EXPECT_EQ(PTR_ERR(e), -ENOMEM);
  EXPECT_TRUE(IS_ERR_OR_NULL(e));
  EXPECT_EQ(PTR_ERR_OR_ZERO(e), -ENOMEM);
  EXPECT_FALSE(IS_ERR(&obj));
  EXPECT_FALSE(IS_ERR_OR_NULL(&obj));
  EXPECT_EQ(PTR_ERR_OR_ZERO(&obj), 0);
  EXPECT_FALSE(IS_ERR(nullptr));
  EXPECT_TRUE(IS_ERR_OR_NULL(nullptr));
  EXPECT_EQ(PTR_ERR_OR_ZERO(nullptr), 0);
  // The edges of the error range.
  EXPECT_TRUE(IS_ERR(ERR_PTR(-1)));
  EXPECT_TRUE(IS_ERR(ERR_PTR(-MAX_ERRNO)));
  EXPECT_FALSE(IS_ERR(ERR_PTR(-MAX_ERRNO - 1)));
  // any_ptr converts to typed pointers, and ERR_CAST keeps the code.
  int *typed = ERR_PTR(-EINVAL);
  EXPECT_EQ(PTR_ERR(typed), -EINVAL);
  long *cast = ERR_CAST(typed);
  EXPECT_EQ(PTR_ERR(cast), -EINVAL);
}

TEST(CompilerTest, ErrnoValues) {
  EXPECT_EQ(ERESTARTSYS, 512);
  EXPECT_EQ(ERESTARTNOINTR, 513);
  EXPECT_EQ(ERESTARTNOHAND, 514);
  EXPECT_EQ(ENOIOCTLCMD, 515);
  EXPECT_EQ(EPROBE_DEFER, 517);
  EXPECT_EQ(ENOTSUPP, 524);
  EXPECT_EQ(EIOCBQUEUED, 529);
  EXPECT_EQ(MAX_ERRNO, 4095);
  // User-visible ones are the host's.
  EXPECT_EQ(EAGAIN, 11);
  EXPECT_EQ(EINVAL, 22);
  EXPECT_EQ(ENOMEM, 12);
  EXPECT_EQ(EINTR, 4);
  EXPECT_EQ(EOPNOTSUPP, 95);
}

TEST(CompilerTest, WarnOnReturnsConditionAndCounts) {
  uk::testing::AllowWarnings();
  long before = __atomic_load_n(&uk::warn_count, __ATOMIC_RELAXED);
  EXPECT_FALSE(WARN_ON(0));
  EXPECT_EQ(__atomic_load_n(&uk::warn_count, __ATOMIC_RELAXED), before);
  int side = 0;
  EXPECT_TRUE(WARN_ON(++side == 1));  // condition evaluated exactly once
  EXPECT_EQ(side, 1);
  EXPECT_EQ(__atomic_load_n(&uk::warn_count, __ATOMIC_RELAXED), before + 1);
  if (WARN(2 > 1, "formatted %d\n", 42)) side++;
  EXPECT_EQ(side, 2);
  EXPECT_EQ(__atomic_load_n(&uk::warn_count, __ATOMIC_RELAXED), before + 2);
  // WARN_ON_ONCE reports once per call site and process (so at most once
  // however often this test is repeated) but returns the condition always.
  static bool first_run = true;
  auto once = [](bool c) { return WARN_ON_ONCE(c); };  // one call site
  EXPECT_TRUE(once(true));
  long after_first = __atomic_load_n(&uk::warn_count, __ATOMIC_RELAXED);
  EXPECT_EQ(after_first, before + 2 + (first_run ? 1 : 0));
  for (int i = 0; i < 3; i++) EXPECT_TRUE(once(true));
  EXPECT_FALSE(once(false));
  EXPECT_EQ(__atomic_load_n(&uk::warn_count, __ATOMIC_RELAXED), after_first);
  first_run = false;
}

}  // namespace
