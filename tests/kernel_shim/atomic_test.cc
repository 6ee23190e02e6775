// SPDX-License-Identifier: GPL-2.0-only
// atomic_t, atomic_long_t, atomic64_t, the word-sized xchg/cmpxchg family
// and the acquire/release accessors.
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include <uk/linux/atomic.h>
#include <uk/linux/barrier.h>

#include "testmain.h"

namespace {

// One test body, instantiated for each of the three atomic types.
template <typename Tag>
class AtomicOpsTest : public ::testing::Test {};

struct IntTag {};
struct LongTag {};
struct S64Tag {};
using Tags = ::testing::Types<IntTag, LongTag, S64Tag>;
TYPED_TEST_SUITE(AtomicOpsTest, Tags);

// Expands one test body for a given prefix; `big` is a value that only
// fits the wide types (0 for atomic_t).
#define UK_ATOMIC_BODY(pfx, atype, T, big)                                \
  do {                                                                    \
    atype v = ATOMIC_INIT(5);                                             \
    EXPECT_EQ(pfx##_read(&v), 5);                                         \
    pfx##_set(&v, 10);                                                    \
    EXPECT_EQ(pfx##_read(&v), 10);                                        \
    pfx##_set_release(&v, 11);                                            \
    EXPECT_EQ(pfx##_read_acquire(&v), 11);                                \
    pfx##_set(&v, 10);                                                    \
    pfx##_add(3, &v);                                                     \
    EXPECT_EQ(pfx##_read(&v), 13);                                        \
    pfx##_sub(4, &v);                                                     \
    EXPECT_EQ(pfx##_read(&v), 9);                                         \
    pfx##_inc(&v);                                                        \
    EXPECT_EQ(pfx##_read(&v), 10);                                        \
    pfx##_dec(&v);                                                        \
    EXPECT_EQ(pfx##_read(&v), 9);                                         \
    /* _return: the new value; fetch_: the old one */                     \
    EXPECT_EQ(pfx##_add_return(2, &v), 11);                               \
    EXPECT_EQ(pfx##_add_return_relaxed(1, &v), 12);                       \
    EXPECT_EQ(pfx##_add_return_acquire(1, &v), 13);                       \
    EXPECT_EQ(pfx##_add_return_release(1, &v), 14);                       \
    EXPECT_EQ(pfx##_sub_return(4, &v), 10);                               \
    EXPECT_EQ(pfx##_sub_return_relaxed(1, &v), 9);                        \
    EXPECT_EQ(pfx##_inc_return(&v), 10);                                  \
    EXPECT_EQ(pfx##_inc_return_relaxed(&v), 11);                          \
    EXPECT_EQ(pfx##_dec_return(&v), 10);                                  \
    EXPECT_EQ(pfx##_dec_return_acquire(&v), 9);                           \
    EXPECT_EQ(pfx##_fetch_add(5, &v), 9);                                 \
    EXPECT_EQ(pfx##_read(&v), 14);                                        \
    EXPECT_EQ(pfx##_fetch_add_relaxed(1, &v), 14);                        \
    EXPECT_EQ(pfx##_fetch_add_acquire(1, &v), 15);                        \
    EXPECT_EQ(pfx##_fetch_add_release(1, &v), 16);                        \
    EXPECT_EQ(pfx##_fetch_sub(7, &v), 17);                                \
    EXPECT_EQ(pfx##_read(&v), 10);                                        \
    EXPECT_EQ(pfx##_fetch_inc(&v), 10);                                   \
    EXPECT_EQ(pfx##_fetch_dec(&v), 11);                                   \
    EXPECT_EQ(pfx##_fetch_inc_relaxed(&v), 10);                           \
    EXPECT_EQ(pfx##_fetch_dec_relaxed(&v), 11);                           \
    EXPECT_EQ(pfx##_read(&v), 10);                                        \
    /* bit operations */                                                  \
    pfx##_set(&v, 0xf0);                                                  \
    pfx##_and(0x3c, &v);                                                  \
    EXPECT_EQ(pfx##_read(&v), 0x30);                                      \
    pfx##_or(0x03, &v);                                                   \
    EXPECT_EQ(pfx##_read(&v), 0x33);                                      \
    pfx##_xor(0x11, &v);                                                  \
    EXPECT_EQ(pfx##_read(&v), 0x22);                                      \
    pfx##_andnot(0x02, &v);                                               \
    EXPECT_EQ(pfx##_read(&v), 0x20);                                      \
    EXPECT_EQ(pfx##_fetch_or(0x01, &v), 0x20);                            \
    EXPECT_EQ(pfx##_fetch_and(0x21, &v), 0x21);                           \
    EXPECT_EQ(pfx##_fetch_xor(0x0f, &v), 0x21);                           \
    EXPECT_EQ(pfx##_read(&v), 0x2e);                                      \
    EXPECT_EQ(pfx##_fetch_andnot(0x0e, &v), 0x2e);                        \
    EXPECT_EQ(pfx##_fetch_andnot_relaxed(0x20, &v), 0x20);                \
    EXPECT_EQ(pfx##_read(&v), 0);                                         \
    /* xchg / cmpxchg */                                                  \
    pfx##_set(&v, 1);                                                     \
    EXPECT_EQ(pfx##_xchg(&v, 2), 1);                                      \
    EXPECT_EQ(pfx##_xchg_relaxed(&v, 3), 2);                              \
    EXPECT_EQ(pfx##_xchg_acquire(&v, 4), 3);                              \
    EXPECT_EQ(pfx##_xchg_release(&v, 5), 4);                              \
    EXPECT_EQ(pfx##_cmpxchg(&v, 5, 6), 5); /* success: returns old */     \
    EXPECT_EQ(pfx##_read(&v), 6);                                         \
    EXPECT_EQ(pfx##_cmpxchg(&v, 5, 7), 6); /* failure: returns current */ \
    EXPECT_EQ(pfx##_read(&v), 6);                                         \
    EXPECT_EQ(pfx##_cmpxchg_relaxed(&v, 6, 8), 6);                        \
    EXPECT_EQ(pfx##_cmpxchg_acquire(&v, 8, 9), 8);                        \
    EXPECT_EQ(pfx##_cmpxchg_release(&v, 9, 6), 9);                        \
    {                                                                     \
      T old = 5;                                                          \
      EXPECT_FALSE(pfx##_try_cmpxchg(&v, &old, 100));                     \
      EXPECT_EQ(old, 6); /* updated to the current value */               \
      EXPECT_TRUE(pfx##_try_cmpxchg(&v, &old, 100));                      \
      EXPECT_EQ(old, 6);                                                  \
      EXPECT_EQ(pfx##_read(&v), 100);                                     \
      old = 1;                                                            \
      EXPECT_FALSE(pfx##_try_cmpxchg_acquire(&v, &old, 2));               \
      EXPECT_EQ(old, 100);                                                \
      EXPECT_TRUE(pfx##_try_cmpxchg_release(&v, &old, 7));                \
      EXPECT_TRUE(pfx##_try_cmpxchg_relaxed(&v, &old, 7) == false);       \
      EXPECT_EQ(old, 7);                                                  \
    }                                                                     \
    /* conditional forms */                                               \
    pfx##_set(&v, 0);                                                     \
    EXPECT_FALSE(pfx##_inc_not_zero(&v));                                 \
    EXPECT_EQ(pfx##_read(&v), 0);                                         \
    pfx##_set(&v, 3);                                                     \
    EXPECT_TRUE(pfx##_inc_not_zero(&v));                                  \
    EXPECT_EQ(pfx##_read(&v), 4);                                         \
    EXPECT_TRUE(pfx##_dec_not_zero(&v));                                  \
    EXPECT_EQ(pfx##_read(&v), 3);                                         \
    pfx##_set(&v, 0);                                                     \
    EXPECT_FALSE(pfx##_dec_not_zero(&v));                                 \
    EXPECT_EQ(pfx##_read(&v), 0);                                         \
    pfx##_set(&v, 4);                                                     \
    EXPECT_FALSE(pfx##_add_unless(&v, 10, 4));                            \
    EXPECT_EQ(pfx##_read(&v), 4);                                         \
    EXPECT_TRUE(pfx##_add_unless(&v, 10, 5));                             \
    EXPECT_EQ(pfx##_read(&v), 14);                                        \
    EXPECT_EQ(pfx##_fetch_add_unless(&v, 1, 14), 14);                     \
    EXPECT_EQ(pfx##_read(&v), 14);                                        \
    EXPECT_EQ(pfx##_fetch_add_unless(&v, -4, 0), 14);                     \
    EXPECT_EQ(pfx##_read(&v), 10);                                        \
    pfx##_set(&v, 2);                                                     \
    EXPECT_FALSE(pfx##_dec_and_test(&v));                                 \
    EXPECT_TRUE(pfx##_dec_and_test(&v));                                  \
    EXPECT_EQ(pfx##_read(&v), 0);                                         \
    pfx##_set(&v, 10);                                                    \
    EXPECT_FALSE(pfx##_sub_and_test(3, &v));                              \
    EXPECT_TRUE(pfx##_sub_and_test(7, &v));                               \
    pfx##_set(&v, -2);                                                    \
    EXPECT_FALSE(pfx##_inc_and_test(&v));                                 \
    EXPECT_TRUE(pfx##_inc_and_test(&v));                                  \
    pfx##_set(&v, 1);                                                     \
    EXPECT_TRUE(pfx##_add_negative(-2, &v));                              \
    EXPECT_EQ(pfx##_read(&v), -1);                                        \
    EXPECT_FALSE(pfx##_add_negative(1, &v)); /* 0 is not negative */      \
    EXPECT_FALSE(pfx##_add_negative(1, &v));                              \
    pfx##_set(&v, 2);                                                     \
    EXPECT_EQ(pfx##_dec_if_positive(&v), 1);                              \
    EXPECT_EQ(pfx##_dec_if_positive(&v), 0);                              \
    EXPECT_EQ(pfx##_dec_if_positive(&v), -1); /* would go negative */     \
    EXPECT_EQ(pfx##_read(&v), 0);                                         \
    pfx##_set(&v, -1);                                                    \
    EXPECT_FALSE(pfx##_inc_unless_negative(&v));                          \
    EXPECT_EQ(pfx##_read(&v), -1);                                        \
    pfx##_set(&v, 0);                                                     \
    EXPECT_TRUE(pfx##_inc_unless_negative(&v));                           \
    EXPECT_EQ(pfx##_read(&v), 1);                                         \
    EXPECT_FALSE(pfx##_dec_unless_positive(&v));                          \
    EXPECT_EQ(pfx##_read(&v), 1);                                         \
    pfx##_set(&v, 0);                                                     \
    EXPECT_TRUE(pfx##_dec_unless_positive(&v));                           \
    EXPECT_EQ(pfx##_read(&v), -1);                                        \
    /* width */                                                           \
    if ((big) != 0) {                                                     \
      pfx##_set(&v, (T)(big));                                            \
      EXPECT_EQ(pfx##_add_return(1, &v), (T)(big) + 1);                   \
      EXPECT_EQ(pfx##_cmpxchg(&v, (T)(big) + 1, 0), (T)(big) + 1);        \
      EXPECT_EQ(pfx##_read(&v), 0);                                       \
    }                                                                     \
  } while (0)

TYPED_TEST(AtomicOpsTest, WholeOpSet) {
  if constexpr (std::is_same_v<TypeParam, IntTag>) {
    UK_ATOMIC_BODY(atomic, atomic_t, int, 0);
  } else if constexpr (std::is_same_v<TypeParam, LongTag>) {
    UK_ATOMIC_BODY(atomic_long, atomic_long_t, long, 0x100000000L);
  } else {
    UK_ATOMIC_BODY(atomic64, atomic64_t, s64, 0x7ffffffffLL);
  }
}

TEST(AtomicTest, IntWrapsAsTwosComplement) {
  atomic_t v = ATOMIC_INIT(INT32_MAX);
  // The kernel's atomic_t wraps (it is compiled with -fno-strict-overflow).
  EXPECT_EQ(atomic_fetch_add(1, &v), INT32_MAX);
  EXPECT_EQ(atomic_read(&v), INT32_MIN);
}

// The conditional forms wrap too: percpu_ref_tryget() meets a biased count
// of LONG_MAX (UBSan caught the signed overflow in atomic_long_add_unless).
TEST(AtomicTest, ConditionalOpsWrapAsTwosComplement) {
  atomic_long_t l = ATOMIC_LONG_INIT(LONG_MAX);
  EXPECT_TRUE(atomic_long_add_unless(&l, 1, 0));
  EXPECT_EQ(atomic_long_read(&l), LONG_MIN);
  EXPECT_TRUE(atomic_long_inc_not_zero(&l));
  EXPECT_EQ(atomic_long_read(&l), LONG_MIN + 1);
  atomic_t v = ATOMIC_INIT(INT32_MIN);
  EXPECT_TRUE(atomic_dec_unless_positive(&v));
  EXPECT_EQ(atomic_read(&v), INT32_MAX);
  EXPECT_TRUE(atomic_inc_unless_negative(&v));
  EXPECT_EQ(atomic_read(&v), INT32_MIN);
  // INT32_MIN - 1 wraps to a positive value, which is stored.
  EXPECT_EQ(atomic_dec_if_positive(&v), INT32_MAX);
  EXPECT_EQ(atomic_read(&v), INT32_MAX);
}

TEST(AtomicTest, WordXchgCmpxchg) {
  unsigned long w = 1;
  EXPECT_EQ(xchg(&w, 2UL), 1UL);
  EXPECT_EQ(xchg_relaxed(&w, 3UL), 2UL);
  EXPECT_EQ(xchg_acquire(&w, 4UL), 3UL);
  EXPECT_EQ(xchg_release(&w, 5UL), 4UL);
  EXPECT_EQ(cmpxchg(&w, 5UL, 6UL), 5UL);
  EXPECT_EQ(w, 6UL);
  EXPECT_EQ(cmpxchg(&w, 5UL, 7UL), 6UL);
  EXPECT_EQ(w, 6UL);
  EXPECT_EQ(cmpxchg_relaxed(&w, 6UL, 8UL), 6UL);
  EXPECT_EQ(cmpxchg_acquire(&w, 8UL, 9UL), 8UL);
  EXPECT_EQ(cmpxchg_release(&w, 9UL, 10UL), 9UL);
  u64 q = 1ULL << 40;
  EXPECT_EQ(cmpxchg64(&q, 1ULL << 40, 3ULL), 1ULL << 40);
  EXPECT_EQ(q, 3ULL);

  unsigned long old = 0;
  EXPECT_FALSE(try_cmpxchg(&w, &old, 11UL));
  EXPECT_EQ(old, 10UL);
  EXPECT_TRUE(try_cmpxchg(&w, &old, 11UL));
  EXPECT_EQ(w, 11UL);
  old = 11;
  EXPECT_TRUE(try_cmpxchg_acquire(&w, &old, 12UL));
  EXPECT_TRUE(try_cmpxchg_release(&w, &old, 12UL) == false);
  EXPECT_EQ(old, 12UL);
  EXPECT_TRUE(try_cmpxchg_relaxed(&w, &old, 13UL));
  EXPECT_EQ(w, 13UL);

  int x = 0;
  int *p = nullptr;
  EXPECT_EQ(cmpxchg(&p, (int *)nullptr, &x), nullptr);
  EXPECT_EQ(p, &x);
  EXPECT_EQ(xchg(&p, (int *)nullptr), &x);
}

TEST(AtomicTest, LoadAcquireStoreRelease) {
  int v = 0;
  smp_store_release(&v, 42);
  EXPECT_EQ(smp_load_acquire(&v), 42);
  long l = 0;
  smp_store_mb(l, 7L);
  EXPECT_EQ(READ_ONCE(l), 7L);
  atomic_t a = ATOMIC_INIT(3);
  EXPECT_EQ(atomic_cond_read_acquire(&a, VAL == 3), 3);
  EXPECT_EQ(smp_cond_load_relaxed(&v, VAL > 40), 42);
}

TEST(AtomicTest, ConcurrentCounterIsExact) {
  const unsigned threads = uk::testing::StressThreads();
  const int per_thread = 20000;
  atomic_t a = ATOMIC_INIT(0);
  atomic64_t b = ATOMIC64_INIT(0);
  atomic_long_t c = ATOMIC_LONG_INIT(0);
  atomic_t zero_hits = ATOMIC_INIT(0);
  std::vector<std::thread> ts;
  for (unsigned t = 0; t < threads; t++) {
    ts.emplace_back([&] {
      for (int i = 0; i < per_thread; i++) {
        atomic_inc(&a);
        atomic64_add_return(2, &b);
        long o = atomic_long_read(&c);
        while (!atomic_long_try_cmpxchg(&c, &o, o + 3)) {
        }
      }
    });
  }
  for (auto &t : ts) t.join();
  EXPECT_EQ(atomic_read(&a), (int)threads * per_thread);
  EXPECT_EQ(atomic64_read(&b), 2LL * threads * per_thread);
  EXPECT_EQ(atomic_long_read(&c), 3L * threads * per_thread);

  // dec_and_test fires exactly once across all threads.
  ts.clear();
  for (unsigned t = 0; t < threads; t++) {
    ts.emplace_back([&] {
      for (int i = 0; i < per_thread; i++)
        if (atomic_dec_and_test(&a)) atomic_inc(&zero_hits);
    });
  }
  for (auto &t : ts) t.join();
  EXPECT_EQ(atomic_read(&a), 0);
  EXPECT_EQ(atomic_read(&zero_hits), 1);
}

TEST(AtomicTest, MessagePassingReleaseAcquire) {
  // The producer fills a payload with plain stores and publishes a sequence
  // number with smp_store_release(); the consumer's smp_load_acquire() of
  // that number must make the whole payload visible. Under TSan any missing
  // edge is reported as a data race on the payload.
  struct Msg {
    long a, b, c;
  };
  const int rounds = 2000;
  Msg msg{};
  int seq = 0;
  int ack = 0;
  std::thread producer([&] {
    for (int i = 1; i <= rounds; i++) {
      msg.a = i;
      msg.b = 2L * i;
      msg.c = 3L * i;
      smp_store_release(&seq, i);  // pairs with the consumer's load_acquire
      // wait for the consumer to be done with this round
      while (smp_load_acquire(&ack) != i)
        std::this_thread::yield();  // pairs with its release
    }
  });
  int bad = 0;
  for (int i = 1; i <= rounds; i++) {
    while (smp_load_acquire(&seq) != i)
      std::this_thread::yield();  // pairs with producer's release
    if (msg.a != i || msg.b != 2L * i || msg.c != 3L * i) bad++;
    smp_store_release(&ack, i);
  }
  producer.join();
  EXPECT_EQ(bad, 0);
}

}  // namespace
