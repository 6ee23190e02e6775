// SPDX-License-Identifier: GPL-2.0-only
// RCU readers racing radix-tree writers, after tools/testing/radix-tree's
// regression1 (find_get_pages vs. grow/shrink), regression4 (lookup of a
// stable index while the tree grows and shrinks around it) and
// iteration_check (tagged and untagged iterators with retry/next while
// items are added, tagged and removed). Writers serialise on a spinlock and
// preload, as the page cache does; readers take rcu_read_lock() only.
// Bounded by iterations and a deadline; sized by StressThreads().
#include <gtest/gtest.h>

#include <uk/linux/preempt.h>
#include <uk/linux/radix-tree.h>
#include <uk/linux/rcupdate.h>
#include <uk/linux/spinlock.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <random>
#include <thread>
#include <vector>

#include "radix_tree_testlib.h"
#include "testmain.h"

namespace radix_test {
namespace {

using Clock = std::chrono::steady_clock;

#ifdef UK_TSAN
constexpr int kWriterIters = 3000;
#else
constexpr int kWriterIters = 30000;
#endif
constexpr auto kDeadline = std::chrono::seconds(3);

constexpr unsigned long kMaxObjs =
    4 * RADIX_TREE_MAP_SIZE * RADIX_TREE_MAP_SIZE;
// Items that outlive every reader: only the tree's nodes are RCU-freed here.
Item objs[kMaxObjs];

struct ObjsInit {
  ObjsInit() {
    for (unsigned long i = 0; i < kMaxObjs; i++) objs[i].index = i;
  }
} objs_init;

class RadixTreeRcuTest : public RadixTreeTest {
 protected:
  void SetUp() override {
    RadixTreeTest::SetUp();
    INIT_RADIX_TREE(&tree, GFP_ATOMIC);
    spin_lock_init(&lock);
  }

  // Writers: preload outside the lock, then insert under it.
  int locked_insert(unsigned long index) {
    int err = radix_tree_preload(GFP_KERNEL);
    if (err) return err;
    spin_lock(&lock);
    err = radix_tree_insert(&tree, index, &objs[index]);
    if (!err && index % 2 == 0) radix_tree_tag_set(&tree, index, 0);
    spin_unlock(&lock);
    radix_tree_preload_end();
    return err;
  }

  void *locked_delete(unsigned long index) {
    spin_lock(&lock);
    void *p = radix_tree_delete(&tree, index);
    spin_unlock(&lock);
    return p;
  }

  // The items are static: empty the tree without freeing them.
  void remove_all() {
    for (unsigned long i = 0; i < kMaxObjs; i++) radix_tree_delete(&tree, i);
    EXPECT_EQ(tree.rnode, nullptr);
  }

  static unsigned readers() {
    unsigned n = uk::testing::StressThreads();
    return n > 1 ? n - 1 : 1;
  }

  radix_tree_root tree;
  spinlock_t lock;
};

// regression1: find_get_pages() by gang_lookup_slot + deref_slot +
// deref_retry while index 0/1 are inserted and deleted (the tree grows to a
// node and shrinks back into the root pointer). Every lookup must finish.
TEST_F(RadixTreeRcuTest, Regression1FindGetPages) {
  std::atomic<bool> done{false};
  std::atomic<long> retries{0}, found{0};
  const auto deadline = Clock::now() + kDeadline;

  std::thread writer([&] {
    for (int i = 0; i < kWriterIters && Clock::now() < deadline; i++) {
      ASSERT_EQ(locked_insert(0), 0);
      ASSERT_EQ(locked_insert(1), 0);
      ASSERT_EQ(locked_delete(1), &objs[1]);
      ASSERT_EQ(locked_delete(0), &objs[0]);
    }
    EXPECT_EQ(preempt_count(), 0);
    done.store(true);
  });
  std::vector<std::thread> rs;
  for (unsigned t = 0; t < readers(); t++) {
    rs.emplace_back([&, t] {
      void **slots[2];
      unsigned long indices[2];
      while (!done.load()) {
        long restarts = 0;
        rcu_read_lock();
      restart:
        unsigned n =
            (t % 2)
                ? radix_tree_gang_lookup_slot_v33(&tree, slots, indices, 0, 2)
                : radix_tree_gang_lookup_slot(&tree, slots, indices, 0, 2);
        for (unsigned i = 0; i < n; i++) {
          Item *p = static_cast<Item *>(radix_tree_deref_slot(slots[i]));
          if (!p) continue;
          if (radix_tree_deref_retry(p)) {
            retries.fetch_add(1, std::memory_order_relaxed);
            if (++restarts > 1000000) {
              ADD_FAILURE() << "find_get_pages does not terminate";
              break;
            }
            goto restart;
          }
          EXPECT_TRUE(p == &objs[0] || p == &objs[1]);
          EXPECT_EQ(p->index, indices[i]);
          found.fetch_add(1, std::memory_order_relaxed);
        }
        rcu_read_unlock();
      }
    });
  }
  writer.join();
  for (auto &r : rs) r.join();
  EXPECT_EQ(tree.rnode, nullptr);
  printf("regression1: %ld found, %ld retries\n", found.load(), retries.load());
}

// regression4: index 0 is always present while index 1 comes and goes.
TEST_F(RadixTreeRcuTest, LookupVsGrowAndShrink) {
  ASSERT_EQ(locked_insert(0), 0);
  std::atomic<bool> done{false};
  const auto deadline = Clock::now() + kDeadline;

  std::thread writer([&] {
    for (int i = 0; i < kWriterIters && Clock::now() < deadline; i++) {
      unsigned long far =
          i % 3 == 0 ? RADIX_TREE_MAP_SIZE * RADIX_TREE_MAP_SIZE + 1 : 1;
      ASSERT_EQ(locked_insert(far), 0);
      ASSERT_EQ(locked_delete(far), &objs[far]);
    }
    done.store(true);
  });
  std::vector<std::thread> rs;
  for (unsigned t = 0; t < readers(); t++) {
    rs.emplace_back([&] {
      void *results[1];
      while (!done.load()) {
        rcu_read_lock();
        ASSERT_EQ(radix_tree_lookup(&tree, 0), &objs[0]);
        ASSERT_EQ(radix_tree_tag_get(&tree, 0, 0), 1);
        void **slot = radix_tree_lookup_slot(&tree, 0);
        ASSERT_NE(slot, nullptr);
        void *p = radix_tree_deref_slot(slot);
        if (!radix_tree_deref_retry(p)) {
          ASSERT_EQ(p, &objs[0]);
        }
        ASSERT_EQ(radix_tree_gang_lookup(&tree, results, 0, 1), 1u);
        ASSERT_EQ(results[0], &objs[0]);
        ASSERT_EQ(radix_tree_gang_lookup_v33(&tree, results, 0, 1), 1u);
        ASSERT_EQ(results[0], &objs[0]);
        ASSERT_EQ(radix_tree_gang_lookup_tag(&tree, results, 0, 1, 0), 1u);
        ASSERT_EQ(results[0], &objs[0]);
        rcu_read_unlock();
      }
    });
  }
  writer.join();
  for (auto &r : rs) r.join();
  remove_all();
}

// iteration_check: tagged and untagged RCU walks with retry and random
// iter_next (dropping RCU between chunks), while an adder inserts and tags
// and a remover deletes. Every slot seen holds the item for its index.
TEST_F(RadixTreeRcuTest, IterationCheck) {
  constexpr unsigned long kItems =
      3 * RADIX_TREE_MAP_SIZE * RADIX_TREE_MAP_SIZE / 2;
  std::atomic<int> writers_left{2};
  std::atomic<long> visited{0};
  std::atomic<long> loops{0};
  const auto deadline = Clock::now() + kDeadline;
  const unsigned seed = Seed();

  std::atomic<unsigned> started{0};
  const unsigned nreaders = readers();
  auto wait_for_readers = [&] {
    while (started.load() < nreaders) std::this_thread::yield();
  };
  const int passes = std::max<int>(40, kWriterIters / (int)kItems);
  // Writers keep going until the readers have met items a few times.
  constexpr long kMinWalks = 50;

  std::thread adder([&] {
    wait_for_readers();
    for (int pass = 0;
         Clock::now() < deadline && (pass < passes || loops.load() < kMinWalks);
         pass++) {
      for (unsigned long i = 0; i < kItems; i++) {
        int err = locked_insert(i);
        ASSERT_TRUE(err == 0 || err == -EEXIST) << err;
      }
    }
    writers_left.fetch_sub(1);
  });
  std::thread remover([&] {
    std::mt19937 rng(seed);
    wait_for_readers();
    for (long i = 0; Clock::now() < deadline &&
                     (i < passes * (long)kItems || loops.load() < kMinWalks);
         i++) {
      void *p = locked_delete(rng() % kItems);
      if (p) {
        ASSERT_LT(static_cast<Item *>(p)->index, kItems);
      }
    }
    writers_left.fetch_sub(1);
  });
  std::vector<std::thread> rs;
  for (unsigned t = 0; t < nreaders; t++) {
    rs.emplace_back([&, t] {
      std::mt19937 rng(seed + t);
      const bool tagged = t % 2 == 0;
      started.fetch_add(1);
      while (writers_left.load() > 0) {
        radix_tree_iter iter;
        void **slot;
        long n = 0;
        rcu_read_lock();
        auto visit = [&]() -> int {  // 1: retry, 2: resume later
          Item *p = static_cast<Item *>(radix_tree_deref_slot(slot));
          if (!p) return 0;
          if (radix_tree_deref_retry(p)) return 1;
          EXPECT_EQ(p->index, iter.index);
          n++;
          return rng() % 50 == 0 ? 2 : 0;
        };
        if (tagged) {
          radix_tree_for_each_tagged(slot, &tree, &iter, 0, 0) {
            int r = visit();
            if (r == 1) {
              slot = radix_tree_iter_retry(&iter);
              continue;
            }
            if (r == 2) {
              slot = radix_tree_iter_next(&iter);
              rcu_read_unlock();
              rcu_read_lock();
            }
          }
        } else {
          radix_tree_for_each_slot(slot, &tree, &iter, 0) {
            int r = visit();
            if (r == 1) {
              slot = radix_tree_iter_retry(&iter);
              continue;
            }
            if (r == 2) {
              slot = radix_tree_iter_next(&iter);
              rcu_read_unlock();
              rcu_read_lock();
            }
          }
        }
        rcu_read_unlock();
        visited.fetch_add(n, std::memory_order_relaxed);
        if (n) loops++;  // walks that met items while the writers ran
      }
      EXPECT_EQ(preempt_count(), 0);
    });
  }
  adder.join();
  remover.join();
  for (auto &r : rs) r.join();
  printf("iteration_check: %ld walks, %ld slots\n", loops.load(),
         visited.load());
  EXPECT_GT(visited.load(), 0);
  verify_all_tags(&tree);
  remove_all();
}

}  // namespace
}  // namespace radix_test
