// SPDX-License-Identifier: GPL-2.0-only
// mm/mempool.c (kernel_shim/mempool.cc): the reserve under allocations and
// frees from several threads at once.
#include <gtest/gtest.h>

#include <algorithm>
#include <thread>
#include <vector>

#include <uk/linux/fault-inject.h>
#include <uk/linux/mempool.h>
#include <uk/linux/slab.h>

#include "testmain.h"

namespace {

// Threads take elements from the reserve (the slab refusing, fail-nth) and
// from the slab, and free them, all at once: mempool_free() looks at
// curr_nr without the lock while the others change it under the lock. No
// element is lost (the reserve ends full and the slab holds only it), and
// the tsan preset sees no data race on curr_nr.
TEST(MempoolTest, ReserveTakenAndRefilledFromSeveralThreads) {
  struct kmem_cache *c = kmem_cache_create("mempool_test", 64, 0, 0, nullptr);
  ASSERT_NE(c, nullptr);
  const int kMin = 4;
  mempool_t pool;
  ASSERT_EQ(mempool_init_slab_pool(&pool, kMin, c), 0);
  const unsigned nthr = std::max(2u, uk::testing::StressThreads());
  std::vector<std::thread> th;
  for (unsigned t = 0; t < nthr; t++)
    th.emplace_back([&pool] {
      for (int i = 0; i < 5000; i++) {
        uk::fail_nth_write(1);  // the slab refuses: the reserve gives
        void *a = mempool_alloc(&pool, GFP_ATOMIC);
        uk::fail_nth_write(0);
        void *b = mempool_alloc(&pool, GFP_ATOMIC);
        mempool_free(a, &pool);
        mempool_free(b, &pool);
      }
    });
  for (auto &t : th) t.join();
  EXPECT_EQ(pool.curr_nr, kMin);
  EXPECT_EQ(uk::slab_nr_allocated(c), kMin);
  mempool_exit(&pool);
  EXPECT_EQ(uk::slab_nr_allocated(c), 0);
  kmem_cache_destroy(c);
}

}  // namespace
