// SPDX-License-Identifier: GPL-2.0-only
// gfp.h's page allocator: alloc_pages() and its relatives, the pool.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include <uk/linux/fault-inject.h>
#include <uk/linux/gfp.h>
#include <uk/linux/kernel.h>
#include <uk/shim/cmdline.h>

#include "testmain.h"

namespace {

bool AllZero(const void *p, size_t n) {
  const unsigned char *c = static_cast<const unsigned char *>(p);
  for (size_t i = 0; i < n; i++)
    if (c[i]) return false;
  return true;
}

class PageAllocTest : public ::testing::Test {
 protected:
  void SetUp() override { base_ = uk::page_alloc_nr_allocated(); }
  void TearDown() override {
    failslab.probability = 0;
    failslab.interval = 1;
    atomic_set(&failslab.times, 0);
    uk::failslab_set_cache_filter(nullptr);
    EXPECT_EQ(uk::page_alloc_nr_allocated(), base_) << "pages leaked";
  }
  long base_ = 0;
};

TEST_F(PageAllocTest, OrdersAlignedAndWritable) {
  for (unsigned int order = 0; order <= MAX_PAGE_ORDER; order++) {
    struct page *pg = alloc_pages(GFP_KERNEL, order);
    ASSERT_NE(pg, nullptr) << "order " << order;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(pg) % PAGE_SIZE, 0u);
    EXPECT_EQ(uk::page_alloc_nr_allocated(), base_ + (1L << order));
    memset(pg, 0xa5, PAGE_SIZE << order);
    __free_pages(pg, order);
    EXPECT_EQ(uk::page_alloc_nr_allocated(), base_);
  }
}

TEST_F(PageAllocTest, ZeroOnReuse) {
  // A freed page comes back dirty; __GFP_ZERO and get_zeroed_page() still
  // hand out zeroes.
  for (int i = 0; i < 200; i++) {
    unsigned long a = __get_free_page(GFP_KERNEL);
    ASSERT_NE(a, 0u);
    memset(reinterpret_cast<void *>(a), 0x5c, PAGE_SIZE);
    free_page(a);
    unsigned long z = get_zeroed_page(GFP_KERNEL);
    ASSERT_NE(z, 0u);
    EXPECT_TRUE(AllZero(reinterpret_cast<void *>(z), PAGE_SIZE));
    free_page(z);
    struct page *pg = alloc_pages(GFP_KERNEL | __GFP_ZERO, 2);
    ASSERT_NE(pg, nullptr);
    EXPECT_TRUE(AllZero(pg, PAGE_SIZE << 2));
    memset(pg, 0x77, PAGE_SIZE << 2);
    __free_pages(pg, 2);
  }
  free_page(0);
  __free_pages(nullptr, 0);
}

TEST_F(PageAllocTest, DistinctPages) {
  std::vector<unsigned long> v;
  for (int i = 0; i < 1000; i++) {
    unsigned long a = __get_free_page(GFP_KERNEL);
    ASSERT_NE(a, 0u);
    *reinterpret_cast<int *>(a) = i;
    v.push_back(a);
  }
  for (int i = 0; i < 1000; i++) EXPECT_EQ(*reinterpret_cast<int *>(v[i]), i);
  for (unsigned long a : v) free_page(a);
}

TEST_F(PageAllocTest, OverMaxOrderFails) {
  EXPECT_EQ(alloc_pages(GFP_KERNEL | __GFP_NOWARN, MAX_PAGE_ORDER + 1),
            nullptr);
}

TEST_F(PageAllocTest, Failslab) {
  uk::failslab_set_cache_filter("page_alloc");
  failslab.probability = 100;
  atomic_set(&failslab.times, 1);
  EXPECT_EQ(alloc_pages(GFP_NOIO, 0), nullptr);
  struct page *pg = alloc_pages(GFP_NOIO, 0);  // times spent
  EXPECT_NE(pg, nullptr);
  __free_page(pg);
}

TEST_F(PageAllocTest, PoolKeepsAndReserveBacks) {
#ifdef UKERN_SANITIZER
  GTEST_SKIP() << "sanitizer builds have no pool";
#else
  long mapped = uk::page_alloc_mapped_bytes();
  ASSERT_EQ(uk::page_alloc_reserve(4), 0);
  EXPECT_EQ(uk::page_alloc_mapped_bytes(), mapped + (4L << 20));
  // Pages freed past the thread's list go to the pool, up to pool_mb.
  std::vector<unsigned long> v;
  for (int i = 0; i < 512; i++) v.push_back(__get_free_page(GFP_KERNEL));
  long pooled = uk::page_alloc_nr_pooled();
  for (unsigned long a : v) free_page(a);
  EXPECT_GE(uk::page_alloc_nr_pooled(), pooled + 512 - 64);
  // Served from the pool: nothing more is mapped.
  mapped = uk::page_alloc_mapped_bytes();
  v.clear();
  for (int i = 0; i < 256; i++) v.push_back(__get_free_page(GFP_KERNEL));
  EXPECT_EQ(uk::page_alloc_mapped_bytes(), mapped);
  for (unsigned long a : v) free_page(a);
#endif
}

TEST_F(PageAllocTest, PastPoolLimitGoesBackAndReturns) {
#ifdef UKERN_SANITIZER
  GTEST_SKIP() << "sanitizer builds have no pool";
#else
  // With no pool, freed pages go back to the host; handed out again, they
  // are backed and zeroed by the host, and __GFP_ZERO still holds.
  ASSERT_EQ(uk::parse_cmdline("test", "page_alloc.pool_mb=0"), 0);
  std::vector<unsigned long> v;
  for (int i = 0; i < 256; i++) {
    unsigned long a = __get_free_page(GFP_KERNEL);
    ASSERT_NE(a, 0u);
    memset(reinterpret_cast<void *>(a), 0x33, PAGE_SIZE);
    v.push_back(a);
  }
  for (unsigned long a : v) free_page(a);
  struct page *big = alloc_pages(GFP_KERNEL, 3);
  ASSERT_NE(big, nullptr);
  memset(big, 0x44, PAGE_SIZE << 3);
  __free_pages(big, 3);
  v.clear();
  for (int i = 0; i < 256; i++) {
    unsigned long a = get_zeroed_page(GFP_KERNEL);
    ASSERT_NE(a, 0u);
    EXPECT_TRUE(AllZero(reinterpret_cast<void *>(a), PAGE_SIZE));
    v.push_back(a);
  }
  big = alloc_pages(GFP_KERNEL, 3);
  ASSERT_NE(big, nullptr);
  memset(big, 0x55, PAGE_SIZE << 3);
  __free_pages(big, 3);
  for (unsigned long a : v) free_page(a);
  EXPECT_EQ(uk::parse_cmdline("test", "page_alloc.pool_mb=64"), 0);
#endif
}

TEST_F(PageAllocTest, Threads) {
  // Pages move between threads: allocated on one, freed on another, and
  // the exiting threads' lists go back to the pool.
  const int n = 2 * static_cast<int>(std::thread::hardware_concurrency());
  std::vector<std::vector<unsigned long>> got(n);
  std::vector<std::thread> t;
  for (int i = 0; i < n; i++)
    t.emplace_back([&, i] {
      for (int k = 0; k < 300; k++) {
        unsigned long a = __get_free_page(GFP_KERNEL);
        if (!a) return;
        *reinterpret_cast<long *>(a) = i * 1000 + k;
        got[i].push_back(a);
      }
    });
  for (auto &th : t) th.join();
  t.clear();
  for (int i = 0; i < n; i++) {
    ASSERT_EQ(got[i].size(), 300u);
    for (int k = 0; k < 300; k++)
      EXPECT_EQ(*reinterpret_cast<long *>(got[i][k]), i * 1000L + k);
  }
  for (int i = 0; i < n; i++)
    t.emplace_back([&, i] {
      for (unsigned long a : got[(i + 1) % n]) free_page(a);
    });
  for (auto &th : t) th.join();
}

}  // namespace
