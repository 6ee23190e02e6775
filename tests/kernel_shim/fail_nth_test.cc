// SPDX-License-Identifier: GPL-2.0-only
// current->fail_nth (uk::fail_nth_write()/fail_nth_read(), the kernel's
// /proc/self/fail-nth): the n-th fault-injection call of this task fails,
// through every allocation path (kmalloc, kmem_cache, percpu), and then the
// counter is spent; and mempool_alloc() falling back to its reserve.
#include <gtest/gtest.h>

#include <thread>

#include <uk/linux/errno.h>
#include <uk/linux/fault-inject.h>
#include <uk/linux/mempool.h>
#include <uk/linux/percpu.h>
#include <uk/linux/slab.h>

namespace {

class FailNthTest : public ::testing::Test {
 protected:
  void TearDown() override { uk::fail_nth_write(0); }
};

TEST_F(FailNthTest, TheNthKmallocFailsThenTheCounterIsSpent) {
  void *p[4];
  ASSERT_EQ(uk::fail_nth_write(3), 0);
  p[0] = kmalloc(32, GFP_KERNEL);
  EXPECT_EQ(uk::fail_nth_read(), 2U);
  p[1] = kzalloc(32, GFP_KERNEL);
  p[2] = kvmalloc(32, GFP_KERNEL);
  p[3] = kmalloc(32, GFP_KERNEL);
  EXPECT_NE(p[0], nullptr);
  EXPECT_NE(p[1], nullptr);
  EXPECT_EQ(p[2], nullptr);
  EXPECT_NE(p[3], nullptr);  // spent: no more failures
  EXPECT_EQ(uk::fail_nth_read(), 0U);
  for (void *q : p) kfree(q);
}

TEST_F(FailNthTest, CoversCachesAndPercpu) {
  struct kmem_cache *c = kmem_cache_create("fail_nth_test", 64, 0, 0, nullptr);
  ASSERT_NE(c, nullptr);
  long before = uk::slab_nr_allocated(c);
  ASSERT_EQ(uk::fail_nth_write(1), 0);
  EXPECT_EQ(kmem_cache_alloc(c, GFP_KERNEL), nullptr);
  EXPECT_EQ(uk::slab_nr_allocated(c), before);

  size_t pcpu = uk::percpu_bytes_in_use();
  ASSERT_EQ(uk::fail_nth_write(1), 0);
  EXPECT_EQ(__alloc_percpu_gfp(16, 8, GFP_KERNEL), nullptr);
  EXPECT_EQ(uk::percpu_bytes_in_use(), pcpu);
  kmem_cache_destroy(c);
}

TEST_F(FailNthTest, NoFailIsNeverFailedAndNotCounted) {
  ASSERT_EQ(uk::fail_nth_write(1), 0);
  void *p = kmalloc(16, GFP_KERNEL | __GFP_NOFAIL);
  EXPECT_NE(p, nullptr);
  EXPECT_EQ(uk::fail_nth_read(), 1U);
  kfree(p);
}

TEST_F(FailNthTest, OnlyTheWritingTaskIsCounted) {
  ASSERT_EQ(uk::fail_nth_write(1), 0);
  void *other = nullptr;
  std::thread t([&] { other = kmalloc(16, GFP_KERNEL); });
  t.join();
  EXPECT_NE(other, nullptr);
  EXPECT_EQ(uk::fail_nth_read(), 1U);
  kfree(other);
}

TEST_F(FailNthTest, ValuesAboveIntMaxAreRefused) {
  EXPECT_EQ(uk::fail_nth_write(1UL << 31), -EINVAL);
  EXPECT_EQ(uk::fail_nth_read(), 0U);
}

TEST_F(FailNthTest, MempoolFallsBackToItsReserve) {
  struct kmem_cache *c = kmem_cache_create("fail_nth_pool", 64, 0, 0, nullptr);
  ASSERT_NE(c, nullptr);
  mempool_t pool;
  ASSERT_EQ(mempool_init_slab_pool(&pool, 2, c), 0);
  EXPECT_EQ(uk::slab_nr_allocated(c), 2);

  // The slab refuses; the reserve gives an element.
  ASSERT_EQ(uk::fail_nth_write(1), 0);
  void *a = mempool_alloc(&pool, GFP_KERNEL);
  EXPECT_NE(a, nullptr);
  EXPECT_EQ(pool.curr_nr, 1);
  ASSERT_EQ(uk::fail_nth_write(1), 0);
  void *b = mempool_alloc(&pool, GFP_ATOMIC);
  EXPECT_NE(b, nullptr);
  EXPECT_EQ(pool.curr_nr, 0);
  // An atomic caller with the slab refusing and the reserve empty: NULL.
  ASSERT_EQ(uk::fail_nth_write(1), 0);
  EXPECT_EQ(mempool_alloc(&pool, GFP_ATOMIC), nullptr);
  uk::fail_nth_write(0);
  // Freed elements refill the reserve first.
  mempool_free(a, &pool);
  mempool_free(b, &pool);
  EXPECT_EQ(pool.curr_nr, 2);
  mempool_exit(&pool);
  EXPECT_EQ(uk::slab_nr_allocated(c), 0);
  kmem_cache_destroy(c);
}

// Failing init leaves nothing behind, whichever allocation failed.
TEST_F(FailNthTest, MempoolInitFailsCleanly) {
  struct kmem_cache *c = kmem_cache_create("fail_nth_init", 64, 0, 0, nullptr);
  ASSERT_NE(c, nullptr);
  long kmalloc_before = uk::kmalloc_nr_allocated();
  for (unsigned n = 1; n <= 4; n++) {
    mempool_t pool;
    ASSERT_EQ(uk::fail_nth_write(n), 0);
    EXPECT_EQ(mempool_init_slab_pool(&pool, 3, c), -ENOMEM) << n;
    EXPECT_EQ(uk::slab_nr_allocated(c), 0) << n;
    EXPECT_EQ(uk::kmalloc_nr_allocated(), kmalloc_before) << n;
  }
  kmem_cache_destroy(c);
}

}  // namespace
