// SPDX-License-Identifier: GPL-2.0-only
// lib/radix-tree.c (v3.4): sequences of insert, delete, lookup, tag
// set/clear/get, gang lookups (both engines, items, slots and tags), holes,
// range tagging and the chunk iterators, each checked against a std::map of
// index -> (item, tags); no step may WARN or sleep in atomic context. Indices come from classes that reach every height:
// small, near a power of two, near ~0UL, or any 64-bit value. After the
// sequence the tree is emptied; no node may stay allocated (checked on
// every 64th input: LeakCheckDue()).
#include <errno.h>

#include <iterator>
#include <map>
#include <vector>

#include <uk/linux/preempt.h>
#include <uk/linux/radix-tree.h>
#include <uk/linux/rcupdate.h>
#include <uk/linux/slab.h>

#include "fuzz_common.h"

namespace {

using uk::fuzz::Finding;

constexpr unsigned kTags = RADIX_TREE_MAX_TAGS;

struct Entry {
  void *item;
  unsigned tags;
};
using Model = std::map<unsigned long, Entry>;

unsigned long Index(uk::fuzz::Input &in) {
  uint8_t cls = in.u8();
  switch (cls % 5) {
    case 0:
      return in.u8();
    case 1: {  // 2^k - 2 .. 2^k + 1
      unsigned k = in.u8() % 64;
      return (1UL << k) + (in.u8() % 4) - 2;
    }
    case 2:
      return ~0UL - in.u8();
    case 3:
      return in.u16();
    default:
      return in.u64();
  }
}

void *NewItem() {
  static unsigned long seq;
  // Aligned so that neither the indirect nor the exceptional bit is set.
  return reinterpret_cast<void *>(++seq << 3);
}

// The first @max items at or after @first, with tag @tag (-1: any).
std::vector<std::pair<unsigned long, Entry>> ModelGang(const Model &m,
                                                       unsigned long first,
                                                       unsigned max, int tag) {
  std::vector<std::pair<unsigned long, Entry>> v;
  for (auto it = m.lower_bound(first); it != m.end() && v.size() < max; ++it)
    if (tag < 0 || (it->second.tags >> tag & 1)) v.push_back(*it);
  return v;
}

void CheckGang(const char *what, const Model &m, unsigned long first,
               unsigned max, int tag, unsigned n, void *const *items,
               const unsigned long *indices) {
  auto want = ModelGang(m, first, max, tag);
  if (n != want.size())
    Finding("%s(first %#lx, max %u, tag %d) gave %u items, the model %zu", what,
            first, max, tag, n, want.size());
  for (unsigned i = 0; i < n; i++) {
    if (items[i] != want[i].second.item)
      Finding(
          "%s(first %#lx, tag %d): item %u is %p, the model's %p (index %#lx)",
          what, first, tag, i, items[i], want[i].second.item, want[i].first);
    if (indices && indices[i] != want[i].first)
      Finding("%s(first %#lx): index %u is %#lx, the model's %#lx", what, first,
              i, indices[i], want[i].first);
  }
}

// The v3.3 engine returns the root item of a height-0 tree without looking
// at max_items, as v3.3 did: it is asked for one item at least.
void Gangs(radix_tree_root *root, const Model &m, unsigned long first,
           unsigned max, int tag) {
  void *items[64];
  unsigned max33 = max ? max : 1;
  void **slots[64];
  unsigned long indices[64];
  unsigned n;

  if (tag < 0) {
    n = radix_tree_gang_lookup(root, items, first, max);
    CheckGang("radix_tree_gang_lookup", m, first, max, -1, n, items, nullptr);
    n = radix_tree_gang_lookup_v33(root, items, first, max33);
    CheckGang("radix_tree_gang_lookup_v33", m, first, max33, -1, n, items,
              nullptr);
    n = radix_tree_gang_lookup_slot(root, slots, indices, first, max);
    for (unsigned i = 0; i < n; i++) items[i] = *slots[i];
    CheckGang("radix_tree_gang_lookup_slot", m, first, max, -1, n, items,
              indices);
    n = radix_tree_gang_lookup_slot_v33(root, slots, indices, first, max33);
    for (unsigned i = 0; i < n; i++) items[i] = *slots[i];
    CheckGang("radix_tree_gang_lookup_slot_v33", m, first, max33, -1, n, items,
              indices);
    return;
  }
  unsigned t = static_cast<unsigned>(tag);
  n = radix_tree_gang_lookup_tag(root, items, first, max, t);
  CheckGang("radix_tree_gang_lookup_tag", m, first, max, tag, n, items,
            nullptr);
  n = radix_tree_gang_lookup_tag_v33(root, items, first, max33, t);
  CheckGang("radix_tree_gang_lookup_tag_v33", m, first, max33, tag, n, items,
            nullptr);
  n = radix_tree_gang_lookup_tag_slot(root, slots, first, max, t);
  for (unsigned i = 0; i < n; i++) items[i] = *slots[i];
  CheckGang("radix_tree_gang_lookup_tag_slot", m, first, max, tag, n, items,
            nullptr);
  n = radix_tree_gang_lookup_tag_slot_v33(root, slots, first, max33, t);
  for (unsigned i = 0; i < n; i++) items[i] = *slots[i];
  CheckGang("radix_tree_gang_lookup_tag_slot_v33", m, first, max33, tag, n,
            items, nullptr);
}

// The iterators from @start: every slot, the tagged ones, a contiguous run.
void Iterate(radix_tree_root *root, const Model &m, unsigned long start,
             unsigned tag) {
  struct radix_tree_iter iter;
  void **slot;
  auto it = m.lower_bound(start);
  radix_tree_for_each_slot(slot, root, &iter, start) {
    if (it == m.end() || iter.index != it->first || *slot != it->second.item)
      Finding(
          "radix_tree_for_each_slot from %#lx: index %#lx, the model's %#lx",
          start, iter.index, it == m.end() ? 0UL : it->first);
    ++it;
  }
  if (it != m.end())
    Finding("radix_tree_for_each_slot from %#lx ends before index %#lx", start,
            it->first);

  it = m.lower_bound(start);
  radix_tree_for_each_tagged(slot, root, &iter, start, tag) {
    while (it != m.end() && !(it->second.tags >> tag & 1)) ++it;
    if (it == m.end() || iter.index != it->first || *slot != it->second.item)
      Finding("radix_tree_for_each_tagged(%u) from %#lx: index %#lx", tag,
              start, iter.index);
    ++it;
  }
  while (it != m.end() && !(it->second.tags >> tag & 1)) ++it;
  if (it != m.end())
    Finding("radix_tree_for_each_tagged(%u) from %#lx ends before %#lx", tag,
            start, it->first);

  unsigned long want = start;
  bool wrapped = false;
  radix_tree_for_each_contig(slot, root, &iter, start) {
    auto e = m.find(want);
    if (e == m.end() || iter.index != want || *slot != e->second.item)
      Finding("radix_tree_for_each_contig from %#lx: index %#lx, expected %#lx",
              start, iter.index, want);
    if (++want == 0) {
      wrapped = true;
      break;
    }
  }
  if (!wrapped && m.count(want))
    Finding("radix_tree_for_each_contig from %#lx stops before %#lx", start,
            want);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static bool once = [] {
    radix_tree_init();
    return true;
  }();
  (void)once;
  uk::fuzz::Input in(data, size);
  struct radix_tree_root root;
  Model m;

  long warns = uk::warn_count;

  INIT_RADIX_TREE(&root, GFP_KERNEL);
  for (int steps = 0; !in.empty() && steps < 256; steps++) {
    uint8_t op = in.u8();
    unsigned long idx = Index(in);
    unsigned tag = in.u8() % kTags;
    auto e = m.find(idx);
    bool present = e != m.end();

    switch (op % 12) {
      case 0:
      case 1: {
        void *item = NewItem();
        bool preload = op & 0x80;
        int r;
        if (preload) {
          // A caller that preloads inserts with preemption off, into a
          // tree whose mask cannot sleep, so that the nodes come from the
          // preload (a GFP_KERNEL tree allocates them, and may sleep).
          if (radix_tree_preload(GFP_KERNEL))
            Finding("radix_tree_preload() failed");
          gfp_t mask = root.gfp_mask & __GFP_BITS_MASK;
          root.gfp_mask = (root.gfp_mask & ~__GFP_BITS_MASK) | GFP_ATOMIC;
          r = radix_tree_insert(&root, idx, item);
          root.gfp_mask = (root.gfp_mask & ~__GFP_BITS_MASK) | mask;
          radix_tree_preload_end();
        } else {
          r = radix_tree_insert(&root, idx, item);
        }
        if (r != (present ? -EEXIST : 0))
          Finding("radix_tree_insert(%#lx) gave %d, present %d", idx, r,
                  present);
        if (!r) m[idx] = Entry{item, 0};
        break;
      }
      case 2: {
        void *r = radix_tree_delete(&root, idx);
        if (r != (present ? e->second.item : nullptr))
          Finding("radix_tree_delete(%#lx) gave %p, the model %p", idx, r,
                  present ? e->second.item : nullptr);
        if (present) m.erase(e);
        break;
      }
      case 3: {
        void *r = radix_tree_lookup(&root, idx);
        void **slot = radix_tree_lookup_slot(&root, idx);
        void *want = present ? e->second.item : nullptr;
        if (r != want || (slot ? *slot : nullptr) != want)
          Finding("radix_tree_lookup(%#lx) gave %p (slot %p), the model %p",
                  idx, r, slot ? *slot : nullptr, want);
        break;
      }
      case 4:
        if (present) {
          if (radix_tree_tag_set(&root, idx, tag) != e->second.item)
            Finding("radix_tree_tag_set(%#lx, %u) did not return the item", idx,
                    tag);
          e->second.tags |= 1U << tag;
        }
        break;
      case 5: {
        void *r = radix_tree_tag_clear(&root, idx, tag);
        if (r != (present ? e->second.item : nullptr))
          Finding("radix_tree_tag_clear(%#lx, %u) gave %p", idx, tag, r);
        if (present) e->second.tags &= ~(1U << tag);
        break;
      }
      case 6: {
        int r = radix_tree_tag_get(&root, idx, tag);
        int want = present ? (e->second.tags >> tag & 1) : 0;
        if (!!r != want)
          Finding("radix_tree_tag_get(%#lx, %u) gave %d, the model %d", idx,
                  tag, r, want);
        bool any = false;
        for (auto &[i, en] : m) any |= en.tags >> tag & 1;
        if (!!radix_tree_tagged(&root, tag) != any)
          Finding("radix_tree_tagged(%u) is %d, the model %d", tag,
                  radix_tree_tagged(&root, tag), any);
        break;
      }
      case 7:
        Gangs(&root, m, idx, in.u8() % 65, (op & 0x80) ? -1 : int(tag));
        break;
      case 8: {
        unsigned long max_scan = in.u8();
        unsigned long want = idx;
        bool next = op & 0x80;
        for (unsigned long i = 0; i < max_scan; i++) {
          if (!m.count(want)) break;
          if (next) {
            if (++want == 0) break;
          } else {
            if (--want == ~0UL) break;
          }
        }
        unsigned long r = next ? radix_tree_next_hole(&root, idx, max_scan)
                               : radix_tree_prev_hole(&root, idx, max_scan);
        if (r != want)
          Finding("radix_tree_%s_hole(%#lx, %lu) gave %#lx, the model %#lx",
                  next ? "next" : "prev", idx, max_scan, r, want);
        break;
      }
      case 9: {
        unsigned long last = Index(in), first = idx, nr = in.u8();
        unsigned to = in.u8() % kTags;
        unsigned long tagged = 0, next = first;
        if (!(last < first || !nr)) {
          for (auto it = m.lower_bound(first);
               it != m.end() && it->first <= last; ++it) {
            if (!(it->second.tags >> tag & 1)) continue;
            it->second.tags |= 1U << to;
            next = it->first + 1;
            if (++tagged >= nr) break;
          }
          if (tagged < nr || next == 0) next = last + 1;
        }
        unsigned long f = first;
        unsigned long r =
            radix_tree_range_tag_if_tagged(&root, &f, last, nr, tag, to);
        if (r != tagged || (!(last < first || !nr) && f != next))
          Finding(
              "radix_tree_range_tag_if_tagged(%#lx..%#lx, %lu, %u -> %u) gave "
              "%lu next %#lx, the model %lu next %#lx",
              first, last, nr, tag, to, r, f, tagged, next);
        break;
      }
      case 10:
        Iterate(&root, m, idx, tag);
        break;
      default:
        // Every item's every tag.
        for (auto &[i, en] : m)
          for (unsigned t = 0; t < kTags; t++)
            if (!!radix_tree_tag_get(&root, i, t) != (en.tags >> t & 1))
              Finding("item %#lx: tag %u is %d, the model %u", i, t,
                      radix_tree_tag_get(&root, i, t), en.tags >> t & 1);
        break;
    }
    if (preempt_count() != 0) Finding("preemption left disabled");
    if (uk::warn_count != warns)
      Finding("op %u at %#lx: a WARN or a sleep in atomic context (%ld)",
              op % 12, idx, uk::warn_count - warns);
  }
  for (auto &[i, en] : m)
    if (radix_tree_delete(&root, i) != en.item)
      Finding("emptying: radix_tree_delete(%#lx) did not give the item", i);
  if (root.rnode) Finding("the emptied tree keeps a root node");
  if (uk::fuzz::LeakCheckDue()) {
    rcu_barrier();
    int cpu;
    for_each_possible_cpu(cpu) radix_tree_cpu_dead(cpu);
    long live = uk::slab_nr_allocated(uk::radix_tree_node_cache());
    if (live != 0) Finding("%ld radix-tree nodes stay allocated", live);
  }
  return 0;
}
