// SPDX-License-Identifier: GPL-2.0-only
// slab.h (kmalloc family, kmem_cache, leak counters) and failslab.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include <uk/linux/fault-inject.h>
#include <uk/linux/kernel.h>
#include <uk/linux/slab.h>
#include <uk/linux/spinlock.h>

#include "testmain.h"

namespace {

long Warns() { return __atomic_load_n(&uk::warn_count, __ATOMIC_RELAXED); }

bool AllZero(const void *p, size_t n) {
  const unsigned char *c = static_cast<const unsigned char *>(p);
  for (size_t i = 0; i < n; i++)
    if (c[i]) return false;
  return true;
}

class SlabTest : public ::testing::Test {
 protected:
  void SetUp() override { kmalloc_base_ = uk::kmalloc_nr_allocated(); }
  void TearDown() override {
    // failslab back to off, so nothing else is affected.
    failslab.probability = 0;
    failslab.interval = 1;
    atomic_set(&failslab.times, 0);
    atomic_set(&failslab.space, 0);
    uk::failslab_set_cache_filter(nullptr);
    EXPECT_EQ(uk::kmalloc_nr_allocated(), kmalloc_base_)
        << "kmalloc objects leaked";
  }
  long kmalloc_base_ = 0;
};

TEST_F(SlabTest, KmallocFamily) {
  char *p = kmalloc(100, GFP_KERNEL);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(uk::kmalloc_nr_allocated(), kmalloc_base_ + 1);
  EXPECT_GE(ksize(p), 100u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % ARCH_KMALLOC_MINALIGN, 0u);
  memset(p, 0xaa, 100);
  kfree(p);
  EXPECT_EQ(uk::kmalloc_nr_allocated(), kmalloc_base_);

  // kzalloc zeroes, even when the block is reused.
  for (int i = 0; i < 10; i++) {
    char *q = kmalloc(256, GFP_KERNEL);
    memset(q, 0x5c, 256);
    kfree(q);
    q = kzalloc(256, GFP_KERNEL);
    ASSERT_TRUE(AllZero(q, 256));
    kfree(q);
  }
  int *arr = kcalloc(1000, sizeof(int), GFP_KERNEL);
  ASSERT_NE(arr, nullptr);
  EXPECT_TRUE(AllZero(arr, 1000 * sizeof(int)));
  kfree(arr);
  EXPECT_EQ(kcalloc(SIZE_MAX / 2, 4, GFP_KERNEL), nullptr);  // overflow
  EXPECT_EQ(kmalloc_array(SIZE_MAX / 8 + 1, 8, GFP_KERNEL), nullptr);
  long *la = kmalloc_array(16, sizeof(long), GFP_KERNEL);
  ASSERT_NE(la, nullptr);
  for (int i = 0; i < 16; i++) la[i] = i;
  kfree(la);

  kfree(nullptr);
  void *z = kmalloc(0, GFP_KERNEL);
  EXPECT_EQ(z, ZERO_SIZE_PTR);
  EXPECT_TRUE(ZERO_OR_NULL_PTR(z));
  kfree(z);  // a no-op
  EXPECT_EQ(ksize(z), 0u);
  EXPECT_EQ(kmalloc(KMALLOC_MAX_SIZE + 1, GFP_KERNEL | __GFP_NOWARN), nullptr);

  void *v = kvmalloc(1 << 20, GFP_KERNEL);
  ASSERT_NE(v, nullptr);
  memset(v, 1, 1 << 20);
  kvfree(v);
  void *vz = kvzalloc(4096, GFP_KERNEL);
  EXPECT_TRUE(AllZero(vz, 4096));
  kvfree(vz);
  void *vc = kvcalloc(10, 10, GFP_KERNEL);
  EXPECT_TRUE(AllZero(vc, 100));
  kvfree(vc);
  EXPECT_EQ(uk::kmalloc_nr_allocated(), kmalloc_base_);
}

TEST_F(SlabTest, Krealloc) {
  char *p = krealloc(nullptr, 16, GFP_KERNEL);  // NULL: a plain kmalloc
  ASSERT_NE(p, nullptr);
  for (int i = 0; i < 16; i++) p[i] = static_cast<char>(i + 1);
  char *g = krealloc(p, 4096, GFP_KERNEL);
  ASSERT_NE(g, nullptr);
  for (int i = 0; i < 16; i++) ASSERT_EQ(g[i], i + 1);
  EXPECT_GE(ksize(g), 4096u);
  EXPECT_EQ(uk::kmalloc_nr_allocated(), kmalloc_base_ + 1);  // old one freed
  char *s = krealloc(g, 8, GFP_KERNEL);  // shrink: same block, contents kept
  EXPECT_EQ(s, g);
  for (int i = 0; i < 8; i++) ASSERT_EQ(s[i], i + 1);
  // __GFP_ZERO zeroes the grown part.
  size_t old = ksize(s);
  ASSERT_LT(old, 100000u);
  char *z = krealloc(s, 100000, GFP_KERNEL | __GFP_ZERO);
  ASSERT_NE(z, nullptr);
  for (int i = 0; i < 8; i++) ASSERT_EQ(z[i], i + 1);
  EXPECT_TRUE(AllZero(z + old, 100000 - old));
  void *zero = krealloc(z, 0, GFP_KERNEL);  // frees
  EXPECT_EQ(zero, ZERO_SIZE_PTR);
  EXPECT_EQ(uk::kmalloc_nr_allocated(), kmalloc_base_);
  EXPECT_EQ(krealloc_array(nullptr, SIZE_MAX / 2, 4, GFP_KERNEL), nullptr);
}

TEST_F(SlabTest, StrdupMemdup) {
  char *s = kstrdup("hello, kernel", GFP_KERNEL);
  ASSERT_NE(s, nullptr);
  EXPECT_STREQ(s, "hello, kernel");
  kfree(s);
  EXPECT_EQ(kstrdup(nullptr, GFP_KERNEL), nullptr);
  char *n = kstrndup("abcdef", 3, GFP_KERNEL);
  EXPECT_STREQ(n, "abc");
  kfree(n);
  const unsigned char src[5] = {1, 0, 2, 0, 3};
  unsigned char *d = kmemdup(src, sizeof(src), GFP_KERNEL);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(memcmp(d, src, sizeof(src)), 0);
  EXPECT_NE(d, src);
  kfree_sensitive(d);
  kfree_sensitive(nullptr);
}

struct Obj {
  int magic;
  char data[60];
};

std::atomic<int> ctor_calls{0};
void ObjCtor(void *p) {
  static_cast<Obj *>(p)->magic = 0x1234;
  ctor_calls++;
}

TEST_F(SlabTest, KmemCacheLifecycleAndCounters) {
  struct kmem_cache *c =
      kmem_cache_create("test_obj", sizeof(Obj), 0, 0, ObjCtor);
  ASSERT_NE(c, nullptr);
  EXPECT_STREQ(uk::kmem_cache_name(c), "test_obj");
  EXPECT_EQ(kmem_cache_size(c), sizeof(Obj));
  EXPECT_EQ(uk::slab_nr_allocated(c), 0);
  int calls = ctor_calls.load();
  std::vector<Obj *> objs;
  for (int i = 0; i < 100; i++) {
    Obj *o = kmem_cache_alloc(c, GFP_KERNEL);
    ASSERT_NE(o, nullptr);
    EXPECT_EQ(o->magic, 0x1234);
    objs.push_back(o);
  }
  EXPECT_EQ(ctor_calls.load(), calls + 100);
  EXPECT_EQ(uk::slab_nr_allocated(c), 100);
  EXPECT_EQ(uk::slab_nr_tallocated(c), 100);
  long total_before = uk::slab_total_allocated();
  EXPECT_GE(total_before, 100);
  for (Obj *o : objs) kmem_cache_free(c, o);
  EXPECT_EQ(uk::slab_nr_allocated(c), 0);
  EXPECT_EQ(uk::slab_nr_tallocated(c), 100);
  EXPECT_EQ(uk::slab_total_allocated(), total_before - 100);
  kmem_cache_free(c, nullptr);

  // Zeroed allocation without a ctor.
  struct kmem_cache *z = KMEM_CACHE(Obj, 0);
  ASSERT_NE(z, nullptr);
  EXPECT_STREQ(uk::kmem_cache_name(z), "Obj");
  for (int i = 0; i < 10; i++) {
    Obj *o = kmem_cache_alloc(z, GFP_KERNEL);
    memset(o, 0xff, sizeof(*o));
    kmem_cache_free(z, o);
    o = kmem_cache_zalloc(z, GFP_KERNEL);
    ASSERT_TRUE(AllZero(o, sizeof(*o)));
    kmem_cache_free(z, o);
  }
  // Bulk.
  void *bulk[16];
  EXPECT_EQ(kmem_cache_alloc_bulk(z, GFP_KERNEL, 16, bulk), 16);
  EXPECT_EQ(uk::slab_nr_allocated(z), 16);
  kmem_cache_free_bulk(z, 16, bulk);
  EXPECT_EQ(uk::slab_nr_allocated(z), 0);
  EXPECT_EQ(kmem_cache_shrink(z), 0);
  kmem_cache_destroy(z);
  kmem_cache_destroy(c);
  kmem_cache_destroy(nullptr);
}

TEST_F(SlabTest, CountersSurviveThreadExit) {
  struct kmem_cache *c = kmem_cache_create("xthread", 32, 0, 0, nullptr);
  ASSERT_NE(c, nullptr);
  std::vector<void *> from_threads(4);
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; t++) {
    ts.emplace_back([&, t] {
      void *keep = kmem_cache_alloc(c, GFP_KERNEL);
      for (int i = 0; i < 50; i++)
        kmem_cache_free(c, kmem_cache_alloc(c, GFP_KERNEL));
      from_threads[t] = keep;
    });
  }
  for (auto &t : ts) t.join();
  // The threads are gone; their counts are not.
  EXPECT_EQ(uk::slab_nr_allocated(c), 4);
  EXPECT_EQ(uk::slab_nr_tallocated(c), 4 + 4 * 50);
  for (void *p : from_threads)
    kmem_cache_free(c, p);  // freed by another thread
  EXPECT_EQ(uk::slab_nr_allocated(c), 0);
  kmem_cache_destroy(c);
  // A new cache reusing the slot starts from zero.
  struct kmem_cache *d = kmem_cache_create("xthread2", 32, 0, 0, nullptr);
  EXPECT_EQ(uk::slab_nr_allocated(d), 0);
  EXPECT_EQ(uk::slab_nr_tallocated(d), 0);
  kmem_cache_destroy(d);
}

TEST_F(SlabTest, AlignmentHonoured) {
  struct kmem_cache *hw =
      kmem_cache_create("hw", 24, 0, SLAB_HWCACHE_ALIGN, nullptr);
  struct kmem_cache *a128 = kmem_cache_create("a128", 40, 128, 0, nullptr);
  struct kmem_cache *small = kmem_cache_create("small", 3, 0, 0, nullptr);
  std::vector<void *> ps;
  for (int i = 0; i < 32; i++) {
    void *p = kmem_cache_alloc(hw, GFP_KERNEL);
    void *q = kmem_cache_alloc(a128, GFP_KERNEL);
    void *s = kmem_cache_alloc(small, GFP_KERNEL);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(q) % 128, 0u);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(s) % sizeof(void *), 0u);
    memset(p, 1, 24);
    memset(q, 1, 40);
    memset(s, 1, 3);
    kmem_cache_free(hw, p);
    kmem_cache_free(a128, q);
    kmem_cache_free(small, s);
  }
  kmem_cache_destroy(hw);
  kmem_cache_destroy(a128);
  kmem_cache_destroy(small);
}

TEST_F(SlabTest, DestroyWithLiveObjectsWarns) {
  struct kmem_cache *c = kmem_cache_create("leaky", 16, 8, 0, nullptr);
  void *p = kmem_cache_alloc(c, GFP_KERNEL);
  ASSERT_NE(p, nullptr);
  uk::testing::AllowWarnings();
  long before = Warns();
  kmem_cache_destroy(c);
  EXPECT_EQ(Warns(), before + 1);
  free(p);  // the backend is malloc-compatible (jemalloc or libc)
}

TEST_F(SlabTest, FailslabFailsExactlyTimesInTheChosenCache) {
  struct kmem_cache *mine = kmem_cache_create("mycache", 64, 0, 0, nullptr);
  struct kmem_cache *other = kmem_cache_create("othercache", 64, 0, 0, nullptr);
  failslab.verbose = 0;
  failslab.probability = 100;
  failslab.interval = 1;
  atomic_set(&failslab.space, 0);
  atomic_set(&failslab.times, 3);
  uk::failslab_set_cache_filter("mycache");

  // Other caches and kmalloc are unaffected while mycache still has
  // failures to give.
  void *o = kmem_cache_alloc(other, GFP_KERNEL);
  EXPECT_NE(o, nullptr);
  void *k = kmalloc(64, GFP_KERNEL);
  EXPECT_NE(k, nullptr);
  // __GFP_NOFAIL never fails and does not use up a failure.
  void *nf = kmem_cache_alloc(mine, GFP_KERNEL | __GFP_NOFAIL);
  EXPECT_NE(nf, nullptr);

  int failed = 0;
  std::vector<void *> got;
  for (int i = 0; i < 10; i++) {
    void *p = kmem_cache_alloc(mine, GFP_KERNEL);
    if (!p) {
      failed++;
      EXPECT_LT(i, 3) << "failure after the first three";
    } else {
      got.push_back(p);
    }
  }
  EXPECT_EQ(failed, 3);
  EXPECT_EQ(atomic_read(&failslab.times), 0);
  EXPECT_EQ(uk::slab_nr_allocated(mine), 8);  // failed ones are not counted
  for (void *p : got) kmem_cache_free(mine, p);
  kmem_cache_free(mine, nf);
  kmem_cache_free(other, o);
  kfree(k);
  kmem_cache_destroy(mine);
  kmem_cache_destroy(other);
}

TEST_F(SlabTest, FailslabWithoutFilterHitsKmalloc) {
  failslab.verbose = 0;
  failslab.probability = 100;
  failslab.interval = 2;  // every second eligible call
  failslab.count = 0;
  atomic_set(&failslab.times, 2);
  uk::failslab_set_cache_filter(nullptr);
  std::vector<bool> ok;
  for (int i = 0; i < 6; i++) {
    void *p = kmalloc(32, GFP_KERNEL);
    ok.push_back(p != nullptr);
    kfree(p);
  }
  EXPECT_EQ(ok, (std::vector<bool>{true, false, true, false, true, true}));
  failslab.interval = 1;
}

TEST_F(SlabTest, SetupFaultAttrParsing) {
  DECLARE_FAULT_ATTR(attr);
  attr.verbose = 0;
  ASSERT_EQ(setup_fault_attr(&attr, "1,100,0,2"), 1);
  EXPECT_EQ(attr.interval, 1u);
  EXPECT_EQ(attr.probability, 100u);
  EXPECT_EQ(atomic_read(&attr.space), 0);
  EXPECT_EQ(atomic_read(&attr.times), 2);
  EXPECT_TRUE(should_fail(&attr, 1));
  EXPECT_TRUE(should_fail(&attr, 1));
  EXPECT_FALSE(should_fail(&attr, 1));  // times used up

  EXPECT_EQ(setup_fault_attr(&attr, "garbage"), 0);
  EXPECT_EQ(setup_fault_attr(&attr, "1,2"), 0);
  EXPECT_EQ(attr.probability, 100u);  // unchanged by a bad string

  // space: the first bytes pass.
  ASSERT_EQ(setup_fault_attr(&attr, "1,100,100,-1"), 1);
  EXPECT_FALSE(should_fail(&attr, 60));
  EXPECT_EQ(atomic_read(&attr.space), 40);
  EXPECT_TRUE(should_fail(&attr, 60));
  EXPECT_TRUE(should_fail(&attr, 60));  // times -1: no limit
  EXPECT_EQ(atomic_read(&attr.times), -1);

  // probability 0 never fails; 50 fails some, not all (deterministic seed).
  ASSERT_EQ(setup_fault_attr(&attr, "1,0,0,-1"), 1);
  for (int i = 0; i < 100; i++) ASSERT_FALSE(should_fail(&attr, 1));
  ASSERT_EQ(setup_fault_attr(&attr, "1,50,0,-1"), 1);
  int fails = 0;
  for (int i = 0; i < 1000; i++) fails += should_fail(&attr, 1);
  EXPECT_GT(fails, 350);
  EXPECT_LT(fails, 650);
}

// Callers that race past the times == 0 test must not drive the count to
// -1 ("no limit"): the count stops at 0 however many of them fail at once.
// The race is timing-dependent: with a plain atomic_dec() this test caught
// it in about half of its runs on 2 vCPUs; with the fix it never fails.
TEST_F(SlabTest, FaultTimesNeverWrapToUnlimited) {
  DECLARE_FAULT_ATTR(attr);
  attr.verbose = 0;
  const unsigned nthr = std::max(2u, uk::testing::StressThreads());
  const int rounds = 20000;
  std::atomic<int> ready{0};
  std::atomic<int> round{-1};
  std::atomic<int> done{0};
  std::vector<std::thread> th;
  for (unsigned t = 0; t < nthr; t++)
    th.emplace_back([&] {
      for (int r = 0; r < rounds; r++) {
        ready.fetch_add(1);
        while (round.load(std::memory_order_acquire) < r)
          std::this_thread::yield();
        should_fail(&attr, 1);
        done.fetch_add(1);
      }
    });
  int wrapped = 0;
  for (int r = 0; r < rounds; r++) {
    while (ready.load() < static_cast<int>(nthr * (r + 1)))
      std::this_thread::yield();
    ASSERT_EQ(setup_fault_attr(&attr, "1,100,0,1"), 1);
    round.store(r, std::memory_order_release);
    while (done.load() < static_cast<int>(nthr * (r + 1)))
      std::this_thread::yield();
    if (atomic_read(&attr.times) != 0) wrapped++;
  }
  for (auto &t : th) t.join();
  EXPECT_EQ(wrapped, 0);
  EXPECT_FALSE(should_fail(&attr, 1));
}

TEST_F(SlabTest, BlockingAllocationUnderSpinlockWarns) {
  DEFINE_SPINLOCK(lock);
  long before = Warns();
  spin_lock(&lock);
  void *ok = kmalloc(32, GFP_ATOMIC);  // fine: does not sleep
  spin_unlock(&lock);
  EXPECT_EQ(Warns(), before);
  uk::testing::AllowWarnings();
  spin_lock(&lock);
  void *bad = kmalloc(32, GFP_KERNEL);
  spin_unlock(&lock);
  EXPECT_EQ(Warns(), before + 1);
  struct kmem_cache *c = kmem_cache_create("atomic_ctx", 32, 0, 0, nullptr);
  spin_lock(&lock);
  void *o = kmem_cache_alloc(c, GFP_KERNEL);
  spin_unlock(&lock);
  EXPECT_EQ(Warns(), before + 2);
  kmem_cache_free(c, o);
  kmem_cache_destroy(c);
  kfree(ok);
  kfree(bad);
}

}  // namespace
