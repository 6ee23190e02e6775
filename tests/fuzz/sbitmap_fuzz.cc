// SPDX-License-Identifier: GPL-2.0-only
// lib/sbitmap.c: sequences of sbitmap and sbitmap_queue operations, each
// checked against a plain bitset of the allocated bits. A get must return a
// free bit below the depth (within its word's share of the shallow limit,
// which is over the whole map as in __map_depth_with_shallow()) and fail
// only when no such bit is free; the weight, "any bit set" (over whole
// words, as the kernel's) and a walk of the set bits must agree with the
// model after every step that calls sbitmap; resize keeps the allocated
// bits. Input: byte 0 picks sbitmap or sbitmap_queue and its flags, bytes
// 1-3 the depth and shift, then one operation per byte (with its operands
// after it).
#include <errno.h>

#include <algorithm>
#include <bitset>
#include <climits>
#include <vector>

#include <uk/linux/sbitmap.h>
#include <uk/linux/smp.h>
#include <uk/shim/cpu.h>

#include "fuzz_common.h"

namespace {

constexpr unsigned kMaxDepth = 1024;

struct Model {
  std::bitset<kMaxDepth + 1> set;
  unsigned depth = 0;
  unsigned max_depth = 0;

  unsigned Weight() const {
    return static_cast<unsigned>((set << (kMaxDepth + 1 - depth)).count());
  }
  // sbitmap_any_bit_set() looks at whole words, past the depth too.
  bool AnyInWords(unsigned shift, unsigned map_nr) const {
    unsigned end = std::min(map_nr << shift, kMaxDepth + 1);
    return (set << (kMaxDepth + 1 - end)).any();
  }
  // How many bits of word @w a limit of @shallow over the whole map lets a
  // get use: the word's share of it, the remainder going to the first words.
  unsigned WordLimit(unsigned shift, unsigned w, unsigned shallow) const {
    unsigned bits = 1U << shift;
    unsigned wd = std::min(bits, depth - w * bits);
    if (shallow >= depth) return wd;
    uint64_t share = uint64_t{wd} * shallow;
    unsigned rem = static_cast<unsigned>(share % depth);
    share /= depth;
    if (rem >= (w + 1) * wd) share++;
    return static_cast<unsigned>(share);
  }
  bool Allowed(unsigned shift, unsigned b, unsigned shallow) const {
    return b < depth &&
           (b & ((1U << shift) - 1)) < WordLimit(shift, b >> shift, shallow);
  }
  // A free bit that a get under @shallow may take.
  bool AnyFree(unsigned shift, unsigned shallow) const {
    for (unsigned i = 0; i < depth; i++)
      if (!set[i] && Allowed(shift, i, shallow)) return true;
    return false;
  }
};

struct WalkCtx {
  const Model *m;
  unsigned seen;
};

bool WalkOne(struct sbitmap *, unsigned int bitnr, void *data) {
  auto *w = static_cast<WalkCtx *>(data);
  if (bitnr >= w->m->depth || !w->m->set[bitnr])
    uk::fuzz::Finding("sbitmap_for_each_set() visits bit %u, not allocated",
                      bitnr);
  w->seen++;
  return true;
}

void CheckState(struct sbitmap *sb, const Model &m) {
  unsigned w = sbitmap_weight(sb), want = m.Weight();
  if (w != want)
    uk::fuzz::Finding("sbitmap_weight() %u, the model %u (depth %u)", w, want,
                      m.depth);
  if (sbitmap_any_bit_set(sb) != m.AnyInWords(sb->shift, sb->map_nr))
    uk::fuzz::Finding("sbitmap_any_bit_set() %d with %u bits allocated",
                      sbitmap_any_bit_set(sb), want);
  WalkCtx ctx{&m, 0};
  sbitmap_for_each_set(sb, WalkOne, &ctx);
  if (ctx.seen != want)
    uk::fuzz::Finding("sbitmap_for_each_set() visits %u bits, the model has %u",
                      ctx.seen, want);
}

// A got bit @r from a get whose in-word limit is @shallow.
// A round-robin get does not wrap round to the bits before its hint in the
// hint's word, so only the other gets must find every free bit (@exact).
void TakeGot(Model &m, struct sbitmap *sb, int r, unsigned shallow,
             const char *what, bool exact = true) {
  if (r < 0) {
    if (exact && m.AnyFree(sb->shift, shallow)) {
      for (unsigned i = 0; i < sb->map_nr; i++)
        fprintf(stderr, "word %u: %#lx cleared %#lx\n", i, sb->map[i].word,
                sb->map[i].cleared);
      uk::fuzz::Finding(
          "%s failed with a free bit (depth %u, weight %u, shift %u, shallow "
          "%u, map_nr %u)",
          what, m.depth, m.Weight(), sb->shift, shallow, sb->map_nr);
    }
    return;
  }
  unsigned b = static_cast<unsigned>(r);
  if (b >= m.depth || m.set[b] || !m.Allowed(sb->shift, b, shallow))
    uk::fuzz::Finding("%s gave bit %u (depth %u, allocated %d, shallow %u)",
                      what, b, m.depth, b < kMaxDepth ? int{m.set[b]} : -1,
                      shallow);
  m.set[b] = true;
}

// An allocated bit picked by @sel, or -1.
int PickSet(const Model &m, unsigned sel) {
  unsigned n = m.Weight();
  if (!n) return -1;
  sel %= n;
  for (unsigned i = 0; i < m.depth; i++)
    if (m.set[i] && sel-- == 0) return static_cast<int>(i);
  return -1;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static bool once = [] {
    uk::pin_thread_to_cpu(0);
    return true;
  }();
  (void)once;
  uk::fuzz::Input in(data, size);
  uint8_t mode = in.u8();
  bool queue = mode & 1, round_robin = mode & 2, hint = mode & 4;
  unsigned depth = in.u16() % (kMaxDepth + 1);
  int shift = static_cast<int>(in.u8() % 8) - 1;  // -1: the default
  Model m;
  struct sbitmap_queue sbq = {};
  struct sbitmap sb_plain = {};
  struct sbitmap *sb;
  int r;

  if (queue) {
    if (depth == 0) depth = 1;
    r = sbitmap_queue_init_node(&sbq, depth, shift, round_robin, GFP_KERNEL,
                                NUMA_NO_NODE);
    sb = &sbq.sb;
  } else {
    r = sbitmap_init_node(&sb_plain, depth, shift, GFP_KERNEL, NUMA_NO_NODE,
                          round_robin, hint);
    sb = &sb_plain;
  }
  if (r) uk::fuzz::Finding("init depth %u shift %d gave %d", depth, shift, r);
  unsigned bits = 1U << sb->shift;
  m.depth = m.max_depth = depth;

  for (int steps = 0; !in.empty() && steps < 256; steps++) {
    uint8_t op = in.u8();
    // A step that calls nothing of sbitmap leaves the map as the last check
    // saw it; every other step ends with the check.
    bool called = true;
    switch (op % 8) {
      case 0:
        if (queue)
          TakeGot(m, sb, __sbitmap_queue_get(&sbq), UINT_MAX,
                  "__sbitmap_queue_get()", !round_robin);
        else if (sb->alloc_hint)  // the gets need the per-CPU hints
          TakeGot(m, sb, sbitmap_get(sb), UINT_MAX, "sbitmap_get()",
                  !round_robin);
        else
          called = false;
        break;
      case 1: {
        if (!sb->alloc_hint) {
          called = false;
          break;
        }
        unsigned shallow = in.u8() % 2 ? in.u8() % (bits + 2) : in.u16() % 1100;
        if (queue) {
          sbitmap_queue_min_shallow_depth(&sbq, shallow);
          TakeGot(m, sb, sbitmap_queue_get_shallow(&sbq, shallow), shallow,
                  "sbitmap_queue_get_shallow()");
        } else {
          TakeGot(m, sb, sbitmap_get_shallow(sb, shallow), shallow,
                  "sbitmap_get_shallow()");
        }
        break;
      }
      case 2: {
        // Free an allocated bit: put (deferred), clear or the queue's clear.
        int b = PickSet(m, in.u8());
        if (b < 0) {
          called = false;
          break;
        }
        uint8_t how = in.u8();
        if (queue) {
          sbitmap_queue_clear(&sbq, b, how % nr_cpu_ids);
        } else if ((how & 1) && sb->alloc_hint) {
          sbitmap_put(sb, b);
        } else if (how & 2) {
          sbitmap_deferred_clear_bit(sb, b);
        } else {
          sbitmap_clear_bit(sb, b);
        }
        m.set[b] = false;
        break;
      }
      case 3: {
        // Resize within the allocated depth; allocated bits stay.
        unsigned d = m.max_depth ? in.u16() % (m.max_depth + 1) : 0;
        if (queue) {
          if (d == 0) d = 1;
          sbitmap_queue_resize(&sbq, d);
        } else {
          sbitmap_resize(sb, d);
        }
        m.depth = d;
        if (sb->depth != d)
          uk::fuzz::Finding("resize to %u left depth %u", d, sb->depth);
        break;
      }
      case 4: {
        if (!queue) {
          // Set a free bit by hand, as a caller that owns it (a bit whose
          // deferred clear is pending is not free to own that way).
          unsigned b = m.depth ? in.u16() % m.depth : 0;
          if (!m.depth || m.set[b] ||
              (sb->map[b >> sb->shift].cleared >> (b & (bits - 1)) & 1)) {
            called = false;
            break;
          }
          sbitmap_set_bit(sb, b);
          m.set[b] = true;
          break;
        }
        int nr = 1 + in.u8() % 32;
        unsigned offset = 0;
        unsigned long mask = __sbitmap_queue_get_batch(&sbq, nr, &offset);
        for (int i = 0; i < 64; i++) {
          if (!(mask >> i & 1)) continue;
          unsigned b = offset + i;
          if (i >= nr || b >= m.depth || m.set[b])
            uk::fuzz::Finding(
                "__sbitmap_queue_get_batch(%d) gave bit %u (mask %#lx, "
                "offset %u, depth %u)",
                nr, b, mask, offset, m.depth);
          m.set[b] = true;
        }
        break;
      }
      case 5: {
        if (!queue) {
          int b = PickSet(m, in.u8());
          if (b < 0)
            called = false;
          else if (!sbitmap_test_bit(sb, b))
            uk::fuzz::Finding("sbitmap_test_bit(%d) is 0 for an allocated bit",
                              b);
          break;
        }
        // Free a batch of allocated bits in one call.
        int tags[16];
        int n = 0, want = 1 + in.u8() % 16;
        while (n < want) {
          int b = PickSet(m, in.u8());
          if (b < 0) break;
          m.set[b] = false;
          tags[n++] = b;
        }
        if (n)
          sbitmap_queue_clear_batch(&sbq, 0, tags, n);
        else
          called = false;
        break;
      }
      case 6:
        called = queue;
        if (queue) {
          sbitmap_queue_recalculate_wake_batch(&sbq, 1 + in.u8() % 64);
          if (sbq.wake_batch < 1 || sbq.wake_batch > SBQ_WAKE_BATCH)
            uk::fuzz::Finding("wake_batch %u", sbq.wake_batch);
        }
        break;
      default:
        called = queue;
        if (queue) sbitmap_queue_wake_all(&sbq);
        break;
    }
    if (called) CheckState(sb, m);
  }
  if (queue)
    sbitmap_queue_free(&sbq);
  else
    sbitmap_free(sb);
  uk::fuzz::LeakSanitizerDue();
  return 0;
}
