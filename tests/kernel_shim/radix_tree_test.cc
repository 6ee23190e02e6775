// SPDX-License-Identifier: GPL-2.0-only
// Single-threaded radix-tree checks, after tools/testing/radix-tree's
// main.c, tag_check.c and regression2/3.c: tags (single, extend, contract,
// thrash) with a recursive consistency verifier, gang lookups around 2^30,
// 2^31, 0xffff0000 and 0xfffffffe, dynamic height, big gang, the iterator,
// and a differential test of the v3.3 and v3.4 gang lookup engines.
#include <gtest/gtest.h>

#include <uk/linux/errno.h>
#include <uk/linux/fault-inject.h>
#include <uk/linux/find.h>
#include <uk/linux/preempt.h>
#include <uk/linux/radix-tree.h>

#include <algorithm>
#include <map>
#include <set>
#include <vector>

#include "radix_tree_testlib.h"
#include "testmain.h"

namespace radix_test {
namespace {

constexpr unsigned long kMapSize = RADIX_TREE_MAP_SIZE;

TEST_F(RadixTreeTest, FindNextBitMatchesGeneric) {
  unsigned long words[RADIX_TREE_TAG_LONGS];
  for (int round = 0; round < 2000; round++) {
    for (auto &w : words) w = rng() & rng();
    words[0] &= ~0UL >> (BITS_PER_LONG - kMapSize);  // bits past the map stay 0
    if (round % 7 == 0) std::fill(std::begin(words), std::end(words), 0UL);
    for (unsigned long off = 0; off <= kMapSize; off++) {
      ASSERT_EQ(radix_tree_find_next_bit(words, RADIX_TREE_MAP_SIZE, off),
                find_next_bit(words, kMapSize, off))
          << "offset " << off;
    }
  }
}

TEST_F(RadixTreeTest, InsertLookupDeleteBasics) {
  EXPECT_EQ(radix_tree_lookup(&tree, 0), nullptr);
  EXPECT_EQ(radix_tree_delete(&tree, 0), nullptr);
  EXPECT_EQ(radix_tree_delete(&tree, 12345), nullptr);

  // A lone item at index 0 lives in the root pointer.
  ASSERT_EQ(item_insert(&tree, 0), 0);
  EXPECT_EQ(tree.height, 0u);
  EXPECT_EQ(radix_tree_lookup_slot(&tree, 0),
            reinterpret_cast<void **>(&tree.rnode));
  EXPECT_EQ(item_insert(&tree, 0), -EEXIST);
  item_check_absent(&tree, 1);

  ASSERT_EQ(item_insert(&tree, 44), 0);
  EXPECT_EQ(item_insert(&tree, 44), -EEXIST);
  item_check_present(&tree, 0);
  item_check_present(&tree, 44);
  item_check_absent(&tree, 43);

  // The slot interface: replace in place.
  void **slot = radix_tree_lookup_slot(&tree, 44);
  ASSERT_NE(slot, nullptr);
  Item *old = static_cast<Item *>(radix_tree_deref_slot(slot));
  Item *repl = item_create(44);
  radix_tree_replace_slot(slot, repl);
  EXPECT_EQ(radix_tree_lookup(&tree, 44), repl);
  delete old;

  ASSERT_EQ(item_insert(&tree, ~0UL), 0);
  EXPECT_EQ(tree.height, (unsigned)RADIX_TREE_MAX_PATH);
  item_check_present(&tree, ~0UL);
  item_check_absent(&tree, ~0UL - 1);
  EXPECT_TRUE(item_delete(&tree, ~0UL));
  EXPECT_FALSE(item_delete(&tree, ~0UL));
  EXPECT_EQ(tree.height,
            44 < kMapSize ? 1u : 2u);  // shrank back to what 44 needs
  verify_all_tags(&tree);
}

TEST_F(RadixTreeTest, AddAndCheck) {
  ASSERT_EQ(item_insert(&tree, 44), 0);
  item_check_present(&tree, 44);
  item_check_absent(&tree, 43);
  EXPECT_EQ(item_kill_tree(&tree), 1u);
}

TEST_F(RadixTreeTest, DynamicHeightCheck) {
  ASSERT_EQ(item_insert(&tree, 2), 0);
  EXPECT_EQ(tree.height, 1u);
  ASSERT_EQ(item_insert(&tree, 0), 0);
  EXPECT_EQ(tree.height, 1u);
  ASSERT_EQ(item_insert(&tree, kMapSize - 1), 0);
  EXPECT_EQ(tree.height, 1u);
  ASSERT_EQ(item_insert(&tree, kMapSize), 0);
  EXPECT_EQ(tree.height, 2u);
  ASSERT_EQ(item_insert(&tree, kMapSize * kMapSize), 0);
  EXPECT_EQ(tree.height, 3u);

  EXPECT_TRUE(item_delete(&tree, kMapSize * kMapSize));
  EXPECT_EQ(tree.height, 2u);
  EXPECT_TRUE(item_delete(&tree, kMapSize));
  EXPECT_EQ(tree.height, 1u);
  EXPECT_TRUE(item_delete(&tree, 2));
  EXPECT_EQ(tree.height, 1u);
  EXPECT_TRUE(item_delete(&tree, kMapSize - 1));
  EXPECT_EQ(tree.height, 0u);  // only index 0 left: back in the root pointer
  EXPECT_FALSE(radix_tree_is_indirect_ptr(tree.rnode));
  item_check_present(&tree, 0);
  EXPECT_TRUE(item_delete(&tree, 0));
  EXPECT_EQ(tree.height, 0u);
  EXPECT_EQ(tree.rnode, nullptr);
}

TEST_F(RadixTreeTest, TagCheckSingle) {
  const unsigned long indices[] = {0,    1,         kMapSize - 1, kMapSize,
                                   1000, 1UL << 20, ~0UL};
  for (unsigned long index : indices) {
    SCOPED_TRACE(index);
    ASSERT_EQ(item_insert(&tree, index), 0);
    EXPECT_EQ(radix_tree_tag_get(&tree, index, 0), 0);
    EXPECT_FALSE(radix_tree_tagged(&tree, 0));
    EXPECT_NE(radix_tree_tag_set(&tree, index, 0), nullptr);
    EXPECT_EQ(radix_tree_tag_get(&tree, index, 0), 1);
    EXPECT_EQ(radix_tree_tag_get(&tree, index, 1), 0);
    EXPECT_TRUE(radix_tree_tagged(&tree, 0));
    EXPECT_FALSE(radix_tree_tagged(&tree, 1));
    verify_all_tags(&tree);

    void *results[4];
    EXPECT_EQ(radix_tree_gang_lookup_tag(&tree, results, 0, 4, 0), 1u);
    EXPECT_EQ(radix_tree_gang_lookup_tag_v33(&tree, results, 0, 4, 0), 1u);
    EXPECT_EQ(radix_tree_gang_lookup_tag(&tree, results, 0, 4, 1), 0u);
    EXPECT_EQ(radix_tree_gang_lookup_tag_v33(&tree, results, 0, 4, 1), 0u);

    EXPECT_NE(radix_tree_tag_clear(&tree, index, 0), nullptr);
    EXPECT_EQ(radix_tree_tag_get(&tree, index, 0), 0);
    EXPECT_FALSE(radix_tree_tagged(&tree, 0));
    verify_all_tags(&tree);

    // Deleting a tagged item clears its tags all the way up.
    radix_tree_tag_set(&tree, index, 2);
    EXPECT_TRUE(item_delete(&tree, index));
    EXPECT_FALSE(radix_tree_tagged(&tree, 2));
    verify_all_tags(&tree);
    // Clearing a tag on an absent index is harmless.
    EXPECT_EQ(radix_tree_tag_clear(&tree, index, 2), nullptr);
  }
}

// Tags survive the tree growing above them.
TEST_F(RadixTreeTest, TagCheckExtend) {
  ASSERT_EQ(item_insert(&tree, 0), 0);
  radix_tree_tag_set(&tree, 0, 0);
  ASSERT_EQ(item_insert(&tree, 5), 0);
  radix_tree_tag_set(&tree, 5, 1);
  ASSERT_EQ(item_insert(&tree, 1UL << 20), 0);
  ASSERT_EQ(item_insert(&tree, 1UL << 40), 0);
  EXPECT_EQ(radix_tree_tag_get(&tree, 0, 0), 1);
  EXPECT_EQ(radix_tree_tag_get(&tree, 5, 1), 1);
  EXPECT_EQ(radix_tree_tag_get(&tree, 5, 0), 0);
  EXPECT_EQ(radix_tree_tag_get(&tree, 1UL << 20, 0), 0);
  EXPECT_TRUE(radix_tree_tagged(&tree, 0));
  EXPECT_TRUE(radix_tree_tagged(&tree, 1));
  EXPECT_FALSE(radix_tree_tagged(&tree, 2));
  verify_all_tags(&tree);
}

// Tags survive the tree shrinking, down to the root-pointer-only tree.
TEST_F(RadixTreeTest, TagCheckContract) {
  ASSERT_EQ(item_insert(&tree, 15), 0);
  ASSERT_EQ(item_insert(&tree, 1UL << 20), 0);
  radix_tree_tag_set(&tree, 15, 0);
  EXPECT_TRUE(item_delete(&tree, 1UL << 20));
  EXPECT_EQ(tree.height, 15 < kMapSize ? 1u : 2u);
  EXPECT_EQ(radix_tree_tag_get(&tree, 15, 0), 1);
  EXPECT_TRUE(radix_tree_tagged(&tree, 0));
  verify_all_tags(&tree);
  EXPECT_TRUE(item_delete(&tree, 15));

  ASSERT_EQ(item_insert(&tree, 0), 0);
  radix_tree_tag_set(&tree, 0, 1);
  ASSERT_EQ(item_insert(&tree, 1UL << 30), 0);
  radix_tree_tag_set(&tree, 1UL << 30, 1);
  EXPECT_TRUE(item_delete(&tree, 1UL << 30));
  EXPECT_EQ(tree.height, 0u);
  EXPECT_EQ(radix_tree_tag_get(&tree, 0, 1), 1);
  EXPECT_TRUE(radix_tree_tagged(&tree, 1));
  verify_all_tags(&tree);
  void *results[2];
  EXPECT_EQ(radix_tree_gang_lookup_tag(&tree, results, 0, 2, 1), 1u);
  EXPECT_EQ(radix_tree_gang_lookup_tag_v33(&tree, results, 0, 2, 1), 1u);
  radix_tree_tag_clear(&tree, 0, 1);
  EXPECT_FALSE(radix_tree_tagged(&tree, 1));
}

// The harness's simple_checks: a dense range, two tags, range copies.
TEST_F(RadixTreeTest, SimpleTagChecks) {
  const unsigned long n = 10000;
  for (unsigned long i = 0; i < n; i++) {
    ASSERT_EQ(item_insert(&tree, i), 0);
    if (i % 2 == 0) radix_tree_tag_set(&tree, i, 0);
    if (i % 3 == 0) radix_tree_tag_set(&tree, i, 1);
  }
  verify_all_tags(&tree);
  for (unsigned long i = 0; i < n; i++) {
    ASSERT_EQ(radix_tree_tag_get(&tree, i, 0), i % 2 == 0);
    ASSERT_EQ(radix_tree_tag_get(&tree, i, 1), i % 3 == 0);
  }

  // Copy tag 0 to tag 2 on [100, 5000], in batches of 7.
  unsigned long first = 100, total = 0, got;
  while ((got = radix_tree_range_tag_if_tagged(&tree, &first, 5000, 7, 0, 2)) >
         0) {
    EXPECT_LE(got, 7u);
    total += got;
    if (first > 5000) break;
  }
  EXPECT_EQ(total, (5000 - 100) / 2 + 1);
  for (unsigned long i = 0; i < n; i++)
    ASSERT_EQ(radix_tree_tag_get(&tree, i, 2),
              i % 2 == 0 && i >= 100 && i <= 5000)
        << i;
  verify_all_tags(&tree);

  for (unsigned long i = 0; i < n; i += 2) radix_tree_tag_clear(&tree, i, 0);
  EXPECT_FALSE(radix_tree_tagged(&tree, 0));
  verify_all_tags(&tree);
}

// The harness's thrash_tags: random inserts/deletes/tags against a shadow
// array, verified index by index and by full tagged scans.
TEST_F(RadixTreeTest, ThrashTags) {
  const unsigned long kSize = 1UL << 14;
  std::vector<int> present(kSize, 0);
  std::vector<std::array<int, RADIX_TREE_MAX_TAGS>> tags(kSize, {0, 0, 0});
  unsigned long batch = 1;

  for (int round = 0; round < 24; round++) {
    for (unsigned long op = 0; op < batch; op++) {
      unsigned long i = rng() % kSize;
      unsigned tag = rng() % RADIX_TREE_MAX_TAGS;
      switch (rng() % 4) {
        case 0:
          ASSERT_EQ(item_insert(&tree, i), present[i] ? -EEXIST : 0);
          present[i] = 1;
          break;
        case 1:
          ASSERT_EQ(item_delete(&tree, i), !!present[i]);
          present[i] = 0;
          tags[i] = {0, 0, 0};
          break;
        case 2:
          if (present[i]) {
            radix_tree_tag_set(&tree, i, tag);
            tags[i][tag] = 1;
          }
          break;
        default:
          radix_tree_tag_clear(&tree, i, tag);
          tags[i][tag] = 0;
          break;
      }
    }
    batch = batch * 127 % 20011 + 1;

    std::array<unsigned long, RADIX_TREE_MAX_TAGS> ntagged{};
    for (unsigned long i = 0; i < kSize; i++) {
      if (present[i])
        item_check_present(&tree, i);
      else
        ASSERT_EQ(radix_tree_lookup(&tree, i), nullptr);
      for (unsigned tag = 0; tag < RADIX_TREE_MAX_TAGS; tag++) {
        ASSERT_EQ(radix_tree_tag_get(&tree, i, tag), tags[i][tag])
            << i << " tag " << tag;
        ntagged[tag] += tags[i][tag];
      }
    }
    verify_all_tags(&tree);
    for (unsigned tag = 0; tag < RADIX_TREE_MAX_TAGS; tag++) {
      Item *items[14];
      unsigned long seen = 0, next = 0, n;
      while ((n = radix_tree_gang_lookup_tag(
                  &tree, reinterpret_cast<void **>(items), next, 14, tag)) >
             0) {
        for (unsigned long k = 0; k < n; k++)
          ASSERT_TRUE(tags[items[k]->index][tag]);
        seen += n;
        next = items[n - 1]->index + 1;
      }
      EXPECT_EQ(seen, ntagged[tag]) << "tag " << tag;
    }
  }
}

// Gang lookups over a contiguous block around @middle, in chunks of @chunk
// starting every @hop indices, then full scans (the harness's __gang_check).
void GangCheck(radix_tree_root *root, unsigned long middle, long down, long up,
               unsigned chunk, unsigned hop) {
  SCOPED_TRACE(testing::Message() << "middle " << std::hex << middle);
  for (long idx = -down; idx < up; idx++)
    ASSERT_EQ(item_insert(root, middle + idx), 0);
  item_check_absent(root, middle - down - 1);
  for (long idx = -down; idx < up; idx++)
    item_check_present(root, middle + idx);
  item_check_absent(root, middle + up);

  const unsigned long start = middle - down, nr = down + up;
  std::vector<Item *> items(chunk);
  for (int engine = 0; engine < 2; engine++) {
    auto lookup = engine ? radix_tree_gang_lookup_v33 : radix_tree_gang_lookup;
    for (unsigned long i = 0; i < nr; i += hop) {
      unsigned expect = std::min<unsigned long>(chunk, nr - i);
      unsigned n = lookup(root, reinterpret_cast<void **>(items.data()),
                          start + i, chunk);
      ASSERT_EQ(n, expect) << "engine " << engine << " at " << start + i;
      for (unsigned j = 0; j < n; j++)
        ASSERT_EQ(items[j]->index, start + i + j);
    }
    // Full scan from 0: every item once, in order.
    unsigned long next = 0, seen = 0;
    unsigned n;
    while ((n = lookup(root, reinterpret_cast<void **>(items.data()), next,
                       chunk)) > 0) {
      for (unsigned j = 0; j < n; j++)
        ASSERT_EQ(items[j]->index, start + seen + j);
      seen += n;
      next = items[n - 1]->index + 1;
      if (next == 0) break;
    }
    EXPECT_EQ(seen, nr);
    if (start + nr != 0) {
      EXPECT_EQ(lookup(root, reinterpret_cast<void **>(items.data()),
                       start + nr, chunk),
                0u);
    }
  }
  item_kill_tree(root);
}

TEST_F(RadixTreeTest, GangCheck) {
  GangCheck(&tree, 1UL << 30, 128, 128, 35, 2);
  GangCheck(&tree, 1UL << 31, 128, 128, 32, 32);
  GangCheck(&tree, 1UL << 31, 128, 128, 32, 100);
  GangCheck(&tree, 1UL << 31, 128, 128, 17, 7);
  GangCheck(&tree, 0xffff0000UL, 0, 65536, 17, 7);
  GangCheck(&tree, 0xfffffffeUL, 1, 1, 17, 7);
  GangCheck(&tree, ~0UL - 200, 100, 201, 13, 5);  // up to the very last index
}

// Random blocks across a 2^33 range, checked against a shadow set.
TEST_F(RadixTreeTest, BigGangCheck) {
  for (int round = 0; round < 3; round++) {
    std::set<unsigned long> shadow;
    for (int block = 0; block < 6; block++) {
      unsigned long base = rng() % (1UL << 33);
      unsigned long len = 1 + rng() % 2000;
      for (unsigned long i = base; i < base + len; i++) {
        int err = item_insert(&tree, i);
        ASSERT_EQ(err, shadow.count(i) ? -EEXIST : 0);
        shadow.insert(i);
      }
    }
    std::vector<Item *> items(64);
    for (int q = 0; q < 300; q++) {
      unsigned long start = rng() % (1UL << 33);
      unsigned chunk = 1 + rng() % 64;
      auto it = shadow.lower_bound(start);
      for (int engine = 0; engine < 2; engine++) {
        auto lookup =
            engine ? radix_tree_gang_lookup_v33 : radix_tree_gang_lookup;
        unsigned n = lookup(&tree, reinterpret_cast<void **>(items.data()),
                            start, chunk);
        auto jt = it;
        for (unsigned j = 0; j < n; j++, ++jt) {
          ASSERT_NE(jt, shadow.end());
          ASSERT_EQ(items[j]->index, *jt);
        }
        unsigned expect =
            std::min<size_t>(chunk, std::distance(it, shadow.end()));
        ASSERT_EQ(n, expect) << "engine " << engine;
      }
    }
    EXPECT_EQ(item_kill_tree(&tree), shadow.size());
  }
}

// regression2: tagging a range with nothing tagged in it must not set the
// root tag, or a later tagged lookup spins after extension and deletes.
TEST_F(RadixTreeTest, Regression2RangeTagKeepsRootTagHonest) {
  const unsigned long max_slots = kMapSize;
  const unsigned kDirty = 0, kToWrite = 2;
  for (unsigned long i = 0; i < max_slots; i++)
    ASSERT_EQ(item_insert(&tree, i), 0);
  radix_tree_tag_set(&tree, max_slots - 1, kDirty);

  unsigned long start = 0;
  EXPECT_EQ(radix_tree_range_tag_if_tagged(&tree, &start, max_slots - 2, 1,
                                           kDirty, kToWrite),
            0u);
  EXPECT_FALSE(radix_tree_tagged(&tree, kToWrite));
  verify_all_tags(&tree);

  ASSERT_EQ(item_insert(&tree, max_slots), 0);
  radix_tree_tag_clear(&tree, max_slots - 1, kDirty);
  for (long i = max_slots - 1; i >= 0; i--) EXPECT_TRUE(item_delete(&tree, i));
  verify_all_tags(&tree);

  void **slots[RADIX_TREE_MAP_SIZE];
  EXPECT_EQ(
      radix_tree_gang_lookup_tag_slot(&tree, slots, 1, max_slots - 2, kToWrite),
      0u);
  EXPECT_EQ(radix_tree_gang_lookup_tag_slot_v33(&tree, slots, 1, max_slots - 2,
                                                kToWrite),
            0u);
}

// regression3: retry/next inside the iterators while the single-entry tree
// grows under them (empty chunk, NULL slot) must terminate and see both.
TEST_F(RadixTreeTest, Regression3IterRetryWhileGrowing) {
  for (int kind = 0; kind < 3; kind++) {
    SCOPED_TRACE(kind);
    ASSERT_EQ(item_insert(&tree, 0), 0);
    radix_tree_tag_set(&tree, 0, 0);
    bool first = true;
    std::vector<unsigned long> seen;
    radix_tree_iter iter;
    void **slot;
    auto body = [&]() -> bool {  // true: retry
      if (first) {
        EXPECT_EQ(item_insert(&tree, 1), 0);
        radix_tree_tag_set(&tree, 1, 0);
        first = false;
      }
      void *p = radix_tree_deref_slot(slot);
      if (radix_tree_deref_retry(p)) return true;
      seen.push_back(iter.index);
      return false;
    };
    int guard = 0;
    if (kind == 0) {
      radix_tree_for_each_tagged(slot, &tree, &iter, 0, 0) {
        ASSERT_LT(++guard, 10);
        if (body()) {
          slot = radix_tree_iter_retry(&iter);
          continue;
        }
      }
    } else if (kind == 1) {
      radix_tree_for_each_slot(slot, &tree, &iter, 0) {
        ASSERT_LT(++guard, 10);
        if (body()) {
          slot = radix_tree_iter_retry(&iter);
          continue;
        }
      }
    } else {
      radix_tree_for_each_contig(slot, &tree, &iter, 0) {
        ASSERT_LT(++guard, 10);
        if (body()) {
          slot = radix_tree_iter_retry(&iter);
          continue;
        }
      }
    }
    EXPECT_EQ(seen, (std::vector<unsigned long>{0, 1}));
    item_kill_tree(&tree);

    // radix_tree_iter_next() inside a walk: goes on after the current index.
    for (unsigned long i = 0; i < 3 * kMapSize; i++)
      ASSERT_EQ(item_insert(&tree, i), 0);
    unsigned long count = 0;
    radix_tree_for_each_slot(slot, &tree, &iter, 0) {
      count++;
      slot = radix_tree_iter_next(&iter);
    }
    EXPECT_EQ(count, 3 * kMapSize);
    item_kill_tree(&tree);
  }
}

// The iterator against a shadow set: slots, tagged, contig, chunk bounds.
TEST_F(RadixTreeTest, IteratorsMatchShadow) {
  std::set<unsigned long> shadow, tagged;
  for (int i = 0; i < 3000; i++) {
    unsigned long index = rng() % 20000;
    if (i % 3 == 0) index += (rng() % 4) << 40;
    if (item_insert(&tree, index) == 0) shadow.insert(index);
    if (rng() % 3 == 0) {
      radix_tree_tag_set(&tree, index, 1);
      tagged.insert(index);
    }
  }
  for (unsigned long i = 5000; i < 5300; i++) {
    if (item_insert(&tree, i) == 0) shadow.insert(i);
  }
  radix_tree_iter iter;
  void **slot;
  for (int q = 0; q < 60; q++) {
    unsigned long start = q == 0 ? 0 : rng() % 25000;
    std::vector<unsigned long> got,
        want(shadow.lower_bound(start), shadow.end());
    radix_tree_for_each_slot(slot, &tree, &iter, start) {
      ASSERT_EQ(static_cast<Item *>(radix_tree_deref_slot(slot))->index,
                iter.index);
      got.push_back(iter.index);
    }
    EXPECT_EQ(got, want);

    got.clear();
    want.assign(tagged.lower_bound(start), tagged.end());
    radix_tree_for_each_tagged(slot, &tree, &iter, start, 1) {
      ASSERT_EQ(static_cast<Item *>(radix_tree_deref_slot(slot))->index,
                iter.index);
      got.push_back(iter.index);
    }
    EXPECT_EQ(got, want);

    got.clear();
    want.clear();
    for (unsigned long i = start; shadow.count(i); i++) want.push_back(i);
    radix_tree_for_each_contig(slot, &tree, &iter, start)
        got.push_back(iter.index);
    EXPECT_EQ(got, want) << "contig from " << start;
  }
  // Chunks never leave one leaf, and tagged chunks fit one word.
  for (unsigned flags : {0u, RADIX_TREE_ITER_TAGGED | 1u}) {
    unsigned long visited = 0;
    radix_tree_for_each_chunk(slot, &tree, &iter, 0, flags) {
      ASSERT_GT(radix_tree_chunk_size(&iter), 0u);
      ASSERT_LE(radix_tree_chunk_size(&iter), RADIX_TREE_MAP_SIZE);
      ASSERT_EQ(iter.index >> RADIX_TREE_MAP_SHIFT,
                (iter.next_index - 1) >> RADIX_TREE_MAP_SHIFT);
      radix_tree_for_each_chunk_slot(slot, &iter, flags) visited++;
    }
    EXPECT_EQ(visited, flags ? tagged.size() : shadow.size());
  }
}

TEST_F(RadixTreeTest, IteratorStopsAtTopOfIndexSpace) {
  for (unsigned long i = ~0UL - 3; i != 0; i++)
    ASSERT_EQ(item_insert(&tree, i), 0);
  radix_tree_tag_set(&tree, ~0UL, 0);
  radix_tree_iter iter;
  void **slot;
  unsigned long n = 0;
  radix_tree_for_each_slot(slot, &tree, &iter, ~0UL - 10) {
    ASSERT_LT(++n, 10u);
  }
  EXPECT_EQ(n, 4u);
  n = 0;
  radix_tree_for_each_tagged(slot, &tree, &iter, 0, 0) {
    EXPECT_EQ(iter.index, ~0UL);
    ASSERT_LT(++n, 10u);
  }
  EXPECT_EQ(n, 1u);
  n = 0;
  radix_tree_for_each_contig(slot, &tree, &iter, ~0UL - 3) ASSERT_LT(++n, 10u);
  EXPECT_EQ(n, 4u);
  void *results[8];
  EXPECT_EQ(radix_tree_gang_lookup(&tree, results, ~0UL - 1, 8), 2u);
  EXPECT_EQ(radix_tree_gang_lookup_v33(&tree, results, ~0UL - 1, 8), 2u);
  EXPECT_EQ(radix_tree_gang_lookup_tag(&tree, results, 5, 8, 0), 1u);
  EXPECT_EQ(radix_tree_gang_lookup_tag_v33(&tree, results, 5, 8, 0), 1u);
}

// Both engines return the same thing for every gang lookup on random trees.
TEST_F(RadixTreeTest, EnginesAgree) {
  for (int round = 0; round < 12; round++) {
    unsigned long span = 1UL << (4 + rng() % 30);
    unsigned long base = round % 3 == 0 ? ~0UL - span : (rng() % 4) << 35;
    int n = 1 + rng() % 1500;
    for (int i = 0; i < n; i++) {
      unsigned long index = base + rng() % span;
      if (item_insert(&tree, index) == 0) {
        for (unsigned tag = 0; tag < RADIX_TREE_MAX_TAGS; tag++)
          if (rng() % (2 + tag * 5) == 0) radix_tree_tag_set(&tree, index, tag);
      }
    }
    void *a[70], *b[70];
    void **sa[70], **sb[70];
    unsigned long ia[70], ib[70];
    for (int q = 0; q < 300; q++) {
      unsigned long start = q % 5 == 0 ? 0 : base + rng() % span;
      unsigned max = rng() % 70;
      unsigned tag = rng() % RADIX_TREE_MAX_TAGS;
      unsigned na = radix_tree_gang_lookup(&tree, a, start, max);
      unsigned nb = radix_tree_gang_lookup_v33(&tree, b, start, max);
      ASSERT_EQ(na, nb);
      ASSERT_TRUE(std::equal(a, a + na, b));
      na = radix_tree_gang_lookup_slot(&tree, sa, ia, start, max);
      nb = radix_tree_gang_lookup_slot_v33(&tree, sb, ib, start, max);
      ASSERT_EQ(na, nb);
      ASSERT_TRUE(std::equal(sa, sa + na, sb));
      ASSERT_TRUE(std::equal(ia, ia + na, ib));
      na = radix_tree_gang_lookup_tag(&tree, a, start, max, tag);
      nb = radix_tree_gang_lookup_tag_v33(&tree, b, start, max, tag);
      ASSERT_EQ(na, nb) << "tag " << tag;
      ASSERT_TRUE(std::equal(a, a + na, b));
      na = radix_tree_gang_lookup_tag_slot(&tree, sa, start, max, tag);
      nb = radix_tree_gang_lookup_tag_slot_v33(&tree, sb, start, max, tag);
      ASSERT_EQ(na, nb);
      ASSERT_TRUE(std::equal(sa, sa + na, sb));
    }
    verify_all_tags(&tree);
    item_kill_tree(&tree);
  }
}

// copy_tag_check: copy tag 0 to 1 and 2 over random ranges, then verify.
TEST_F(RadixTreeTest, CopyTagCheck) {
  std::map<unsigned long, bool> shadow;  // index -> tag 0
  for (int i = 0; i < 20000; i++) {
    unsigned long index = rng() % 100000;
    if (item_insert(&tree, index) == 0) {
      bool t = rng() % 2;
      if (t) radix_tree_tag_set(&tree, index, 0);
      shadow[index] = t;
    }
  }
  unsigned long lo = rng() % 50000, hi = lo + rng() % 50000;
  unsigned long first = lo;
  unsigned long tagged =
      radix_tree_range_tag_if_tagged(&tree, &first, hi, ~0UL, 0, 1);
  EXPECT_EQ(first, hi + 1);
  unsigned long expect = 0;
  for (auto &[index, t] : shadow) {
    bool want = t && index >= lo && index <= hi;
    expect += want;
    ASSERT_EQ(radix_tree_tag_get(&tree, index, 1), want) << index;
  }
  EXPECT_EQ(tagged, expect);
  // Several rounds of 100 reach the same result.
  first = lo;
  unsigned long total = 0, got;
  while (first <= hi && (got = radix_tree_range_tag_if_tagged(&tree, &first, hi,
                                                              100, 0, 2)) > 0)
    total += got;
  EXPECT_EQ(total, expect);
  for (auto &[index, t] : shadow)
    ASSERT_EQ(radix_tree_tag_get(&tree, index, 2),
              radix_tree_tag_get(&tree, index, 1));
  verify_all_tags(&tree);
}

TEST_F(RadixTreeTest, NextAndPrevHole) {
  for (unsigned long i = 10; i < 20; i++) ASSERT_EQ(item_insert(&tree, i), 0);
  EXPECT_EQ(radix_tree_next_hole(&tree, 10, 100), 20u);
  EXPECT_EQ(radix_tree_next_hole(&tree, 10, 5), 15u);
  EXPECT_EQ(radix_tree_next_hole(&tree, 5, 100), 5u);
  EXPECT_EQ(radix_tree_prev_hole(&tree, 19, 100), 9u);
  EXPECT_EQ(radix_tree_prev_hole(&tree, 19, 3), 16u);
}

// Preloading: preemption stays off until preload_end(), and a preloaded
// insert into a GFP_ATOMIC tree succeeds even when the allocator fails.
TEST_F(RadixTreeTest, PreloadAndEnomem) {
  radix_tree_root atomic_tree;
  INIT_RADIX_TREE(&atomic_tree, GFP_ATOMIC);

  ASSERT_EQ(radix_tree_preload(GFP_KERNEL), 0);
  EXPECT_EQ(preempt_count(), 1);
  setup_fault_attr(&failslab, "1,100,0,-1");
  uk::failslab_set_cache_filter("radix_tree_node");
  EXPECT_EQ(item_insert(&atomic_tree, ~0UL), 0);  // a full path from the pool
  radix_tree_preload_end();
  EXPECT_EQ(preempt_count(), 0);

  // No pool, no memory: -ENOMEM and nothing leaks.
  drain_preloads();
  EXPECT_EQ(item_insert(&atomic_tree, 12345), -ENOMEM);
  EXPECT_EQ(item_insert(&tree, 1UL << 50), -ENOMEM);
  EXPECT_EQ(tree.rnode, nullptr);
  EXPECT_EQ(radix_tree_preload(GFP_KERNEL), -ENOMEM);
  EXPECT_EQ(preempt_count(), 0);  // a failed preload leaves preemption on
  setup_fault_attr(&failslab, "1,0,0,0");
  uk::failslab_set_cache_filter(nullptr);

  item_check_present(&atomic_tree, ~0UL);
  item_check_absent(&atomic_tree, 12345);
  ASSERT_EQ(radix_tree_maybe_preload(GFP_ATOMIC), 0);
  EXPECT_EQ(preempt_count(), 1);
  radix_tree_preload_end();
  item_kill_tree(&atomic_tree);
}

}  // namespace
}  // namespace radix_test
