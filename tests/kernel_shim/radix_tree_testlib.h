// SPDX-License-Identifier: GPL-2.0-only
// Helpers shared by the radix-tree tests: the kernel harness's item_* and
// verify_tag_consistency, plus the fixture that checks for leaks.
#ifndef UKERN_TESTS_KERNEL_SHIM_RADIX_TREE_TESTLIB_H_
#define UKERN_TESTS_KERNEL_SHIM_RADIX_TREE_TESTLIB_H_

#include <gtest/gtest.h>

#include <uk/linux/preempt.h>
#include <uk/linux/radix-tree.h>
#include <uk/linux/rcupdate.h>
#include <uk/linux/slab.h>
#include <uk/linux/smp.h>

#include <cstdio>
#include <random>

#include "testmain.h"

namespace radix_test {

struct Item {
  unsigned long index;
};

inline Item *item_create(unsigned long index) { return new Item{index}; }

// Inserts a fresh item at @index; the kernel's -errno on failure.
inline int item_insert(radix_tree_root *root, unsigned long index) {
  Item *item = item_create(index);
  int err = radix_tree_insert(root, index, item);
  if (err) delete item;
  return err;
}

// Deletes and frees the item at @index; false if there was none. Only for
// trees without concurrent readers (the item is freed at once).
inline bool item_delete(radix_tree_root *root, unsigned long index) {
  Item *item = static_cast<Item *>(radix_tree_delete(root, index));
  if (!item) return false;
  EXPECT_EQ(item->index, index);
  delete item;
  return true;
}

inline void item_check_present(radix_tree_root *root, unsigned long index) {
  Item *item = static_cast<Item *>(radix_tree_lookup(root, index));
  ASSERT_NE(item, nullptr) << "index " << index;
  EXPECT_EQ(item->index, index);
}

inline void item_check_absent(radix_tree_root *root, unsigned long index) {
  EXPECT_EQ(radix_tree_lookup(root, index), nullptr) << "index " << index;
}

// Deletes every item, freeing it; returns how many there were.
inline unsigned long item_kill_tree(radix_tree_root *root) {
  Item *items[32];
  unsigned long total = 0;
  unsigned int n;

  while ((n = radix_tree_gang_lookup(root, reinterpret_cast<void **>(items), 0,
                                     32)) > 0) {
    for (unsigned int i = 0; i < n; i++) {
      unsigned long index = items[i]->index;
      EXPECT_TRUE(item_delete(root, index));
      total++;
    }
  }
  // root->height may stay up after an insert that failed with -ENOMEM on an
  // empty tree (radix_tree_extend() raised it without nodes), as in v3.4.
  EXPECT_EQ(root->rnode, nullptr);
  return total;
}

inline bool node_tag_bit(const radix_tree_node *node, unsigned tag,
                         unsigned long offset) {
  return (node->tags[tag][offset / BITS_PER_LONG] >> (offset % BITS_PER_LONG)) &
         1;
}

// Checks a subtree: interior tag bit <=> child has some tag bit; leaf tag
// bit => slot occupied; heights and counts. Returns whether any slot of
// @node is tagged.
inline bool verify_node(radix_tree_node *node, unsigned tag, unsigned height,
                        int *errors) {
  bool any = false;
  unsigned count = 0;

  if (node->height != height) (*errors)++;
  for (unsigned long i = 0; i < RADIX_TREE_MAP_SIZE; i++) {
    bool bit = node_tag_bit(node, tag, i);
    void *s = node->slots[i];

    if (s) count++;
    if (height > 1) {
      if (s) {
        bool child = verify_node(static_cast<radix_tree_node *>(s), tag,
                                 height - 1, errors);
        if (child != bit) (*errors)++;
      } else if (bit) {
        (*errors)++;
      }
    } else if (bit && !s) {
      (*errors)++;
    }
    any |= bit;
  }
  if (count != node->count) (*errors)++;
  return any;
}

// Whole-tree version, including the root tag. 0 on success.
inline int verify_tag_consistency(radix_tree_root *root, unsigned tag) {
  int errors = 0;
  void *rnode = root->rnode;

  if (radix_tree_is_indirect_ptr(rnode)) {
    auto *node = static_cast<radix_tree_node *>(indirect_to_ptr(rnode));
    if (node->height != root->height) errors++;
    bool any = verify_node(node, tag, node->height, &errors);
    if (any != !!radix_tree_tagged(root, tag)) errors++;
  } else if (!rnode) {
    if (radix_tree_tagged(root, tag)) errors++;
  }
  return errors;
}

inline void verify_all_tags(radix_tree_root *root) {
  for (unsigned tag = 0; tag < RADIX_TREE_MAX_TAGS; tag++)
    EXPECT_EQ(verify_tag_consistency(root, tag), 0) << "tag " << tag;
}

// Frees the preloaded nodes of every CPU (the harness's radix_tree_cpu_dead).
inline void drain_preloads() {
  for (unsigned int cpu = 0; cpu < nr_cpu_ids; cpu++) radix_tree_cpu_dead(cpu);
}

inline unsigned Seed() {
  static unsigned seed = [] {
    unsigned s = std::random_device{}();
    if (const char *env = getenv("UKERN_RADIX_SEED"))
      s = strtoul(env, nullptr, 0);
    fprintf(stderr, "radix tree tests: random seed %u (UKERN_RADIX_SEED)\n", s);
    return s;
  }();
  return seed;
}

// Every test starts from an empty GFP_KERNEL tree and must leave no node
// allocated (after rcu_barrier()) and preemption enabled.
class RadixTreeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    radix_tree_init();
    INIT_RADIX_TREE(&tree, GFP_KERNEL);
    rng.seed(Seed());
  }

  void TearDown() override {
    item_kill_tree(&tree);
    rcu_barrier();
    drain_preloads();
    EXPECT_EQ(uk::slab_nr_allocated(uk::radix_tree_node_cache()), 0);
    EXPECT_EQ(preempt_count(), 0);
  }

  radix_tree_root tree;
  std::mt19937_64 rng;
};

}  // namespace radix_test

#endif  // UKERN_TESTS_KERNEL_SHIM_RADIX_TREE_TESTLIB_H_
