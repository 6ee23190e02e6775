// SPDX-License-Identifier: GPL-2.0-only
// bitops.h, find.h and bitmap.h, checked against brute-force references.
#include <gtest/gtest.h>

#include <random>
#include <thread>
#include <vector>

#include <uk/linux/bitmap.h>
#include <uk/linux/bitops.h>
#include <uk/linux/find.h>

#include "testmain.h"

namespace {

const unsigned long kSizes[] = {1,   2,   31,  63,  64,  65,  127,
                                128, 129, 130, 200, 256, 1000};

// A bitmap with a brute-force mirror.
struct Ref {
  unsigned long nbits;
  std::vector<unsigned long> map;
  std::vector<bool> bits;

  Ref(unsigned long n, std::mt19937_64 &rng, int density)
      : nbits(n), map(BITS_TO_LONGS(n) + 1, 0), bits(n, false) {
    for (unsigned long i = 0; i < n; i++) {
      if (static_cast<int>(rng() % 100) < density) {
        bits[i] = true;
        map[i / 64] |= 1UL << (i % 64);
      }
    }
    // Garbage beyond nbits in the last word: searches must ignore it.
    if (n % 64) map[n / 64] |= ~0UL << (n % 64);
    map.back() = ~0UL;  // and in the word after
  }

  unsigned long next(unsigned long start, bool want) const {
    for (unsigned long i = start; i < nbits; i++)
      if (bits[i] == want) return i;
    return nbits;
  }
  unsigned long last() const {
    for (unsigned long i = nbits; i-- > 0;)
      if (bits[i]) return i;
    return nbits;
  }
};

TEST(BitopsTest, SetClearChange) {
  DECLARE_BITMAP(map, 130);
  bitmap_zero(map, 130);
  for (long nr : {0L, 1L, 63L, 64L, 65L, 127L, 129L}) {
    EXPECT_FALSE(test_bit(nr, map));
    set_bit(nr, map);
    EXPECT_TRUE(test_bit(nr, map));
    EXPECT_TRUE(test_bit_acquire(nr, map));
    change_bit(nr, map);
    EXPECT_FALSE(test_bit(nr, map));
    change_bit(nr, map);
    EXPECT_TRUE(test_bit(nr, map));
    clear_bit(nr, map);
    EXPECT_FALSE(test_bit(nr, map));
  }
  EXPECT_TRUE(bitmap_empty(map, 130));
  set_bit(64, map);
  EXPECT_EQ(map[0], 0UL);
  EXPECT_EQ(map[1], 1UL);
  EXPECT_EQ(map[2], 0UL);
}

// Bit numbers the compiler cannot see (on x86-64 the atomic forms are then one
// lock bts/btr/btc with the number in a register): each must reach its own
// word and bit, and no other.
TEST(BitopsTest, RuntimeNumbers) {
  DECLARE_BITMAP(map, 200);
  bitmap_zero(map, 200);
  volatile long numbers[] = {0, 1, 63, 64, 65, 130, 199};
  for (long nr : numbers) {
    unsigned long *word = &map[nr / BITS_PER_LONG];
    unsigned long mask = 1UL << (nr % BITS_PER_LONG);

    set_bit(nr, map);
    EXPECT_EQ(*word, mask);
    change_bit(nr, map);
    EXPECT_EQ(*word, 0UL);
    change_bit(nr, map);
    clear_bit(nr, map);
    EXPECT_EQ(*word, 0UL);
    EXPECT_FALSE(test_and_set_bit(nr, map));
    EXPECT_TRUE(test_and_set_bit(nr, map));
    EXPECT_EQ(*word, mask);
    EXPECT_TRUE(test_and_clear_bit(nr, map));
    EXPECT_FALSE(test_and_clear_bit(nr, map));
    EXPECT_FALSE(test_and_change_bit(nr, map));
    EXPECT_TRUE(test_and_change_bit(nr, map));
    EXPECT_FALSE(test_and_set_bit_lock(nr, map));
    EXPECT_TRUE(test_and_set_bit_lock(nr, map));
    clear_bit_unlock(nr, map);
    EXPECT_TRUE(bitmap_empty(map, 200)) << nr;
  }
}

TEST(BitopsTest, TestAndForms) {
  unsigned long map[2] = {0, 0};
  EXPECT_FALSE(test_and_set_bit(70, map));
  EXPECT_TRUE(test_and_set_bit(70, map));
  EXPECT_TRUE(test_and_clear_bit(70, map));
  EXPECT_FALSE(test_and_clear_bit(70, map));
  EXPECT_FALSE(test_and_change_bit(3, map));
  EXPECT_TRUE(test_and_change_bit(3, map));
  EXPECT_EQ(map[0], 0UL);
  EXPECT_FALSE(test_and_set_bit_lock(5, map));
  EXPECT_TRUE(test_and_set_bit_lock(5, map));
  clear_bit_unlock(5, map);
  EXPECT_FALSE(test_bit(5, map));
  EXPECT_FALSE(test_and_set_bit_lock(5, map));
  __clear_bit_unlock(5, map);
  EXPECT_EQ(map[0], 0UL);
}

TEST(BitopsTest, NonAtomicForms) {
  unsigned long map[3] = {0, 0, 0};
  __set_bit(130, map);
  EXPECT_EQ(map[2], 1UL << 2);
  __change_bit(131, map);
  EXPECT_EQ(map[2], 3UL << 2);
  __clear_bit(130, map);
  EXPECT_EQ(map[2], 1UL << 3);
  EXPECT_FALSE(__test_and_set_bit(0, map));
  EXPECT_TRUE(__test_and_set_bit(0, map));
  EXPECT_TRUE(__test_and_clear_bit(0, map));
  EXPECT_FALSE(__test_and_clear_bit(0, map));
  EXPECT_FALSE(__test_and_change_bit(64, map));
  EXPECT_TRUE(__test_and_change_bit(64, map));
  EXPECT_EQ(map[0], 0UL);
  EXPECT_EQ(map[1], 0UL);
}

TEST(BitopsTest, BitLockGivesMutualExclusion) {
  // test_and_set_bit_lock()/clear_bit_unlock() as a lock: a non-atomic
  // counter (and other bits of the same word, changed atomically meanwhile)
  // must come out exact.
  const unsigned threads = uk::testing::StressThreads();
  const int per_thread = 5000;
  unsigned long word = 0;
  long counter = 0;
  std::vector<std::thread> ts;
  for (unsigned t = 0; t < threads; t++) {
    ts.emplace_back([&, t] {
      for (int i = 0; i < per_thread; i++) {
        while (test_and_set_bit_lock(0, &word)) {
          while (test_bit(0, &word)) std::this_thread::yield();
        }
        counter = counter + 1;  // plain access, protected by bit 0
        clear_bit_unlock(0, &word);
        change_bit(1 + t, &word);  // unrelated bits of the same word
      }
    });
  }
  for (auto &t : ts) t.join();
  EXPECT_EQ(counter, static_cast<long>(threads) * per_thread);
  EXPECT_FALSE(test_bit(0, &word));
  // per_thread is even: every thread's bit is back to 0.
  EXPECT_EQ(word, 0UL);
}

TEST(BitopsTest, FindAgainstReference) {
  std::mt19937_64 rng(12345);
  for (unsigned long n : kSizes) {
    for (int density : {0, 3, 50, 97, 100}) {
      for (int round = 0; round < 4; round++) {
        Ref r(n, rng, density);
        Ref r2(n, rng, 50);
        const unsigned long *m = r.map.data();
        ASSERT_EQ(find_first_bit(m, n), r.next(0, true)) << n;
        ASSERT_EQ(find_first_zero_bit(m, n), r.next(0, false)) << n;
        ASSERT_EQ(find_last_bit(m, n), r.last()) << n;
        for (unsigned long s = 0; s <= n + 1; s++) {
          ASSERT_EQ(find_next_bit(m, n, s), r.next(s, true)) << n << " " << s;
          ASSERT_EQ(find_next_zero_bit(m, n, s), r.next(s, false))
              << n << " " << s;
          unsigned long want = n;
          for (unsigned long i = s; i < n; i++) {
            if (r.bits[i] && r2.bits[i]) {
              want = i;
              break;
            }
          }
          ASSERT_EQ(find_next_and_bit(m, r2.map.data(), n, s), want)
              << n << " " << s;
        }
        // for_each_set_bit / for_each_clear_bit visit exactly the bits.
        std::vector<unsigned long> set, clear, rs, rc;
        unsigned long bit;
        for_each_set_bit(bit, m, n) set.push_back(bit);
        for_each_clear_bit(bit, m, n) clear.push_back(bit);
        for (unsigned long i = 0; i < n; i++)
          (r.bits[i] ? rs : rc).push_back(i);
        ASSERT_EQ(set, rs) << n;
        ASSERT_EQ(clear, rc) << n;
        if (!rs.empty()) {
          std::vector<unsigned long> from;
          bit = rs[rs.size() / 2];
          for_each_set_bit_from(bit, m, n) from.push_back(bit);
          ASSERT_EQ(from, std::vector<unsigned long>(rs.begin() + rs.size() / 2,
                                                     rs.end()));
        }
      }
    }
  }
}

// The inline small-constant paths of find_next_bit/find_next_zero_bit.
template <unsigned long N>
void CheckSmallConst(std::mt19937_64 &rng) {
  for (int round = 0; round < 50; round++) {
    Ref r(N, rng, static_cast<int>(rng() % 101));
    const unsigned long *m = r.map.data();
    for (unsigned long s = 0; s <= N + 1; s++) {
      ASSERT_EQ(find_next_bit(m, N, s), r.next(s, true)) << N << " " << s;
      ASSERT_EQ(find_next_zero_bit(m, N, s), r.next(s, false)) << N << " " << s;
    }
    ASSERT_EQ(find_first_bit(m, N), r.next(0, true));
    ASSERT_EQ(find_last_bit(m, N), r.last());
    ASSERT_EQ(bitmap_empty(m, N), r.next(0, true) == N);
    ASSERT_EQ(bitmap_full(m, N), r.next(0, false) == N);
  }
}

TEST(BitopsTest, FindSmallConstantSizes) {
  std::mt19937_64 rng(777);
  CheckSmallConst<1>(rng);
  CheckSmallConst<7>(rng);
  CheckSmallConst<32>(rng);
  CheckSmallConst<63>(rng);
  CheckSmallConst<64>(rng);
}

TEST(BitopsTest, WordHelpers) {
  for (int b = 0; b < 64; b++) {
    unsigned long w = 1UL << b;
    EXPECT_EQ(__ffs(w), (unsigned long)b);
    EXPECT_EQ(__fls(w), (unsigned long)b);
    EXPECT_EQ(__ffs(w | (1UL << 63)), (unsigned long)b);
    EXPECT_EQ(__fls(w | 1UL), (unsigned long)b);
    EXPECT_EQ(ffz(~w), (unsigned long)b);
    EXPECT_EQ(ffz(w - 1), (unsigned long)b);  // low b bits set
    EXPECT_EQ(fls64(w), b + 1);
    EXPECT_EQ(fls_long(w), (unsigned int)b + 1);
    if (b < 32) {
      EXPECT_EQ(fls(1u << b), b + 1);
    }
  }
  EXPECT_EQ(fls(0), 0);
  EXPECT_EQ(fls64(0), 0);
  EXPECT_EQ(fls(0x80000000u), 32);
  EXPECT_EQ(fls(0x00010001u), 17);
}

TEST(BitopsTest, Hweight) {
  std::mt19937_64 rng(99);
  for (int i = 0; i < 2000; i++) {
    u64 w = rng();
    if (i < 64) w = (1ULL << i) - 1;
    unsigned ref = 0;
    for (int b = 0; b < 64; b++) ref += (w >> b) & 1;
    unsigned r8 = 0, r16 = 0, r32 = 0;
    for (int b = 0; b < 8; b++) r8 += (w >> b) & 1;
    for (int b = 0; b < 16; b++) r16 += (w >> b) & 1;
    for (int b = 0; b < 32; b++) r32 += (w >> b) & 1;
    ASSERT_EQ(hweight64(w), ref);
    ASSERT_EQ(hweight_long(w), ref);
    ASSERT_EQ(hweight32((u32)w), r32);
    ASSERT_EQ(hweight16((unsigned)w), r16);  // only the low 16 bits count
    ASSERT_EQ(hweight8((unsigned)w), r8);
  }
  EXPECT_EQ(hweight8(0x1ff), 8u);
  EXPECT_EQ(hweight64(~0ULL), 64u);
}

TEST(BitopsTest, BitmapOpsAgainstReference) {
  std::mt19937_64 rng(4242);
  for (unsigned long n : kSizes) {
    for (int round = 0; round < 20; round++) {
      Ref a(n, rng, static_cast<int>(rng() % 101));
      Ref b(n, rng, static_cast<int>(rng() % 101));
      const size_t words = BITS_TO_LONGS(n);
      std::vector<unsigned long> dst(words + 1, 0x5a5a5a5a5a5a5a5aUL);
      const unsigned long guard = dst[words];
      auto bit_of = [&](unsigned long i) {
        return ((dst[i / 64] >> (i % 64)) & 1) != 0;
      };
      auto check = [&](auto ref_op, const char *what) {
        for (unsigned long i = 0; i < n; i++)
          ASSERT_EQ(bit_of(i), ref_op(a.bits[i], b.bits[i]))
              << what << " n=" << n << " i=" << i;
        // Bits past nbits in the last word are cleared; the next word is untouched.
        if (n % 64) {
          ASSERT_EQ(dst[words - 1] >> (n % 64), 0UL) << what;
        }
        ASSERT_EQ(dst[words], guard) << what;
      };
      bool any_and = false, any_andnot = false, inter = false, subset = true,
           equal = true;
      unsigned weight = 0;
      for (unsigned long i = 0; i < n; i++) {
        any_and |= a.bits[i] && b.bits[i];
        any_andnot |= a.bits[i] && !b.bits[i];
        inter |= a.bits[i] && b.bits[i];
        subset &= !a.bits[i] || b.bits[i];
        equal &= a.bits[i] == b.bits[i];
        weight += a.bits[i];
      }
      ASSERT_EQ(bitmap_and(dst.data(), a.map.data(), b.map.data(), n), any_and);
      check([](bool x, bool y) { return x && y; }, "and");
      bitmap_or(dst.data(), a.map.data(), b.map.data(), n);
      check([](bool x, bool y) { return x || y; }, "or");
      bitmap_xor(dst.data(), a.map.data(), b.map.data(), n);
      check([](bool x, bool y) { return x != y; }, "xor");
      ASSERT_EQ(bitmap_andnot(dst.data(), a.map.data(), b.map.data(), n),
                any_andnot);
      check([](bool x, bool y) { return x && !y; }, "andnot");
      bitmap_complement(dst.data(), a.map.data(), n);
      check([](bool x, bool) { return !x; }, "complement");
      ASSERT_EQ(bitmap_intersects(a.map.data(), b.map.data(), n), inter);
      ASSERT_EQ(bitmap_subset(a.map.data(), b.map.data(), n), subset);
      ASSERT_EQ(bitmap_equal(a.map.data(), b.map.data(), n), equal);
      ASSERT_TRUE(bitmap_equal(a.map.data(), a.map.data(), n));
      ASSERT_TRUE(bitmap_subset(a.map.data(), a.map.data(), n));
      ASSERT_EQ(bitmap_weight(a.map.data(), n), weight);
      ASSERT_EQ(bitmap_empty(a.map.data(), n), weight == 0);
      ASSERT_EQ(bitmap_full(a.map.data(), n), weight == n);
      // copy, and garbage beyond nbits does not affect equal().
      std::vector<unsigned long> cp(words, 0);
      bitmap_copy(cp.data(), a.map.data(), n);
      ASSERT_TRUE(bitmap_equal(cp.data(), a.map.data(), n));
    }
  }
}

TEST(BitopsTest, ZeroFillSetClear) {
  std::mt19937_64 rng(31337);
  for (unsigned long n : kSizes) {
    const size_t words = BITS_TO_LONGS(n);
    std::vector<unsigned long> m(words + 1, 0);
    bitmap_fill(m.data(), n);
    EXPECT_TRUE(bitmap_full(m.data(), n));
    EXPECT_EQ(bitmap_weight(m.data(), n), n);
    if (n % 64) {
      EXPECT_EQ(m[words - 1] >> (n % 64), 0UL) << "fill spills past nbits";
    }
    EXPECT_EQ(m[words], 0UL);
    bitmap_zero(m.data(), n);
    EXPECT_TRUE(bitmap_empty(m.data(), n));
    std::vector<bool> ref(n, false);
    for (int round = 0; round < 30; round++) {
      unsigned long start = rng() % n;
      unsigned long len = rng() % (n - start + 1);
      bool set = rng() & 1;
      if (set)
        bitmap_set(m.data(), start, len);
      else
        bitmap_clear(m.data(), start, len);
      for (unsigned long i = start; i < start + len; i++) ref[i] = set;
      for (unsigned long i = 0; i < n; i++)
        ASSERT_EQ(test_bit(i, m.data()), ref[i])
            << n << " " << start << "+" << len;
      ASSERT_EQ(m[words], 0UL);
    }
  }
}

// Reference for bitmap_find_next_zero_area: the first aligned index at or
// after start whose nr bits are all clear, else something > size - nr.
unsigned long RefZeroArea(const std::vector<bool> &bits, unsigned long size,
                          unsigned long start, unsigned int nr,
                          unsigned long align_mask) {
  for (unsigned long idx = (start + align_mask) & ~align_mask; idx + nr <= size;
       idx += align_mask + 1) {
    bool ok = true;
    for (unsigned long i = idx; i < idx + nr; i++) ok &= !bits[i];
    if (ok) return idx;
  }
  return size + 1;  // "not found": any value > size - nr
}

TEST(BitopsTest, FindNextZeroArea) {
  std::mt19937_64 rng(2024);
  for (unsigned long n : {64UL, 65UL, 130UL, 300UL}) {
    for (int round = 0; round < 200; round++) {
      Ref r(n, rng, static_cast<int>(rng() % 60));
      r.map[n / 64] &= n % 64 ? ~(~0UL << (n % 64)) : 0;  // clean tail
      unsigned long start = rng() % n;
      unsigned int nr = 1 + rng() % 8;
      unsigned long align_mask = (1UL << (rng() % 4)) - 1;
      unsigned long got =
          bitmap_find_next_zero_area(r.map.data(), n, start, nr, align_mask);
      unsigned long want = RefZeroArea(r.bits, n, start, nr, align_mask);
      if (want <= n - nr) {
        ASSERT_EQ(got, want) << n << " start " << start << " nr " << nr
                             << " mask " << align_mask;
      } else {
        ASSERT_GT(got + 0, n - nr) << n << " start " << start << " nr " << nr;
      }
    }
  }
}

TEST(BitopsTest, BitmapAllocFree) {
  unsigned long *m = bitmap_zalloc(1000, GFP_KERNEL);
  ASSERT_NE(m, nullptr);
  EXPECT_TRUE(bitmap_empty(m, 1000));
  bitmap_set(m, 10, 900);
  EXPECT_EQ(bitmap_weight(m, 1000), 900u);
  bitmap_free(m);
}

}  // namespace
