/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The 2012 radix tree (include/linux/radix-tree.h as of v3.4): height-based
 * nodes, three tags, RCU readers, and the bit-optimized chunk iterator of
 * commit 78c1d78488a3 ("radix-tree: introduce bit-optimized iterator").
 *
 * RADIX_TREE_MAP_SHIFT is a compile-time constant: 6 (64-slot nodes) unless
 * the translation units are built with -DUKERN_RADIX_TREE_MAP_SHIFT=3, the
 * kernel test harness's deep-tree setting. Every file of one program must
 * agree on it.
 *
 * Two gang-lookup engines live side by side: the iterator-based ones under
 * the kernel's names (v3.4) and the per-call descent of v3.3 (__lookup,
 * __lookup_tag) with a _v33 suffix, so benchmarks and differential tests can
 * compare them in one binary.
 *
 * Shim notes: slot and tag words that RCU readers load concurrently are
 * accessed with relaxed/acquire atomics (READ_ONCE, rcu_dereference_raw) and
 * written with WRITE_ONCE/rcu_assign_pointer, which on x86 compile to the
 * kernel's plain moves but keep ThreadSanitizer informed. One exception:
 * radix_tree_next_slot()'s per-slot NULL test stays a plain load, as in the
 * kernel, marked with data_race() (see there why).
 *
 * Upstream: include/linux/radix-tree.h @ v3.4
 */
#ifndef UK_LINUX_RADIX_TREE_H
#define UK_LINUX_RADIX_TREE_H

#include <uk/linux/bitops.h>
#include <uk/linux/compiler.h>
#include <uk/linux/find.h>
#include <uk/linux/gfp.h>
#include <uk/linux/kernel.h>
#include <uk/linux/preempt.h>
#include <uk/linux/printk.h>
#include <uk/linux/rcupdate.h>
#include <uk/linux/types.h>

/*
 * Low bit of root->rnode set: it points to a node. Without it rnode is the
 * single item at index 0. A data slot with the bit set was moved by a shrink:
 * RCU readers holding that slot must retry (radix_tree_deref_retry()).
 */
#define RADIX_TREE_INDIRECT_PTR 1
/* Entries with bit 1 set are not pointers (shmem swap entries). */
#define RADIX_TREE_EXCEPTIONAL_ENTRY 2
#define RADIX_TREE_EXCEPTIONAL_SHIFT 2

static inline int radix_tree_is_indirect_ptr(void *ptr)
{
	return (int)((unsigned long)ptr & RADIX_TREE_INDIRECT_PTR);
}

static inline void *ptr_to_indirect(void *ptr)
{
	return (void *)((unsigned long)ptr | RADIX_TREE_INDIRECT_PTR);
}

static inline void *indirect_to_ptr(void *ptr)
{
	return (void *)((unsigned long)ptr & ~RADIX_TREE_INDIRECT_PTR);
}

#ifndef UKERN_RADIX_TREE_MAP_SHIFT
#define UKERN_RADIX_TREE_MAP_SHIFT 6
#endif

#define RADIX_TREE_MAP_SHIFT UKERN_RADIX_TREE_MAP_SHIFT
#define RADIX_TREE_MAP_SIZE (1UL << RADIX_TREE_MAP_SHIFT)
#define RADIX_TREE_MAP_MASK (RADIX_TREE_MAP_SIZE - 1)
#define RADIX_TREE_MAX_TAGS 3
#define RADIX_TREE_TAG_LONGS ((RADIX_TREE_MAP_SIZE + BITS_PER_LONG - 1) / BITS_PER_LONG)
#define RADIX_TREE_INDEX_BITS (8 /* CHAR_BIT */ * sizeof(unsigned long))
#define RADIX_TREE_MAX_PATH DIV_ROUND_UP(RADIX_TREE_INDEX_BITS, RADIX_TREE_MAP_SHIFT)
/* Enough nodes for one insertion that builds a whole path, twice over. */
#define RADIX_TREE_PRELOAD_SIZE (RADIX_TREE_MAX_PATH * 2 - 1)

static_assert(RADIX_TREE_MAP_SHIFT >= 2 && RADIX_TREE_MAP_SHIFT <= 6,
	      "the iterator's tag word covers at most BITS_PER_LONG slots per chunk");

/* Root tags live in root->gfp_mask above the allocation flags. */
#ifndef __GFP_BITS_SHIFT
#define __GFP_BITS_SHIFT 25
#endif
#define __GFP_BITS_MASK ((gfp_t)((1u << __GFP_BITS_SHIFT) - 1))
static_assert(__GFP_BITS_SHIFT + RADIX_TREE_MAX_TAGS <= 32, "root tags must fit in gfp_t");

struct radix_tree_node {
	unsigned int height; /* from the bottom: leaves are 1 */
	unsigned int count;  /* non-NULL slots */
	union {
		struct radix_tree_node *parent; /* while linked: for tag/delete ascent */
		struct rcu_head rcu_head;	/* once unlinked: for call_rcu() */
	};
	void __rcu *slots[RADIX_TREE_MAP_SIZE];
	unsigned long tags[RADIX_TREE_MAX_TAGS][RADIX_TREE_TAG_LONGS];
};

struct radix_tree_root {
	unsigned int height;
	gfp_t gfp_mask;
	struct radix_tree_node __rcu *rnode;
};

/* clang-format off */
#define RADIX_TREE_INIT(mask) { .height = 0, .gfp_mask = (mask), .rnode = NULL }
/* clang-format on */
#define RADIX_TREE(name, mask) struct radix_tree_root name = RADIX_TREE_INIT(mask)
#define INIT_RADIX_TREE(root, mask)        \
	do {                               \
		(root)->height = 0;        \
		(root)->gfp_mask = (mask); \
		(root)->rnode = NULL;      \
	} while (0)

/* True when the tree holds no item (a later kernel's helper; v3.4 tests rnode). */
static inline bool radix_tree_empty(const struct radix_tree_root *root)
{
	return root->rnode == NULL;
}

/*
 * Slot access for RCU readers: radix_tree_deref_slot() under rcu_read_lock(),
 * then radix_tree_deref_retry() on the result (a shrink may have moved the
 * item: restart the lookup). Writers use the _protected form and
 * radix_tree_replace_slot().
 */
static inline void *radix_tree_deref_slot(void **pslot)
{
	return rcu_dereference(*pslot);
}

#define radix_tree_deref_slot_protected(pslot, treelock) \
	rcu_dereference_protected(*(pslot), lockdep_is_held(treelock))

static inline int radix_tree_deref_retry(void *arg)
{
	return unlikely((unsigned long)arg & RADIX_TREE_INDIRECT_PTR);
}

static inline int radix_tree_exceptional_entry(void *arg)
{
	return (int)((unsigned long)arg & RADIX_TREE_EXCEPTIONAL_ENTRY);
}

static inline int radix_tree_exception(void *arg)
{
	return unlikely((unsigned long)arg &
			(RADIX_TREE_INDIRECT_PTR | RADIX_TREE_EXCEPTIONAL_ENTRY));
}

static inline void radix_tree_replace_slot(void **pslot, void *item)
{
	BUG_ON(radix_tree_is_indirect_ptr(item));
	/* Publishes @item's contents; pairs with rcu_dereference() in readers. */
	rcu_assign_pointer(*pslot, item);
}

void radix_tree_init(void);
int radix_tree_insert(struct radix_tree_root *root, unsigned long index, void *item);
void *radix_tree_lookup(struct radix_tree_root *root, unsigned long index);
void **radix_tree_lookup_slot(struct radix_tree_root *root, unsigned long index);
void *radix_tree_delete(struct radix_tree_root *root, unsigned long index);
unsigned int radix_tree_gang_lookup(struct radix_tree_root *root, void **results,
				    unsigned long first_index, unsigned int max_items);
unsigned int radix_tree_gang_lookup_slot(struct radix_tree_root *root, void ***results,
					 unsigned long *indices, unsigned long first_index,
					 unsigned int max_items);
unsigned long radix_tree_next_hole(struct radix_tree_root *root, unsigned long index,
				   unsigned long max_scan);
unsigned long radix_tree_prev_hole(struct radix_tree_root *root, unsigned long index,
				   unsigned long max_scan);
int radix_tree_preload(gfp_t gfp_mask);
int radix_tree_maybe_preload(gfp_t gfp_mask);
void *radix_tree_tag_set(struct radix_tree_root *root, unsigned long index, unsigned int tag);
void *radix_tree_tag_clear(struct radix_tree_root *root, unsigned long index, unsigned int tag);
int radix_tree_tag_get(struct radix_tree_root *root, unsigned long index, unsigned int tag);
unsigned int radix_tree_gang_lookup_tag(struct radix_tree_root *root, void **results,
					unsigned long first_index, unsigned int max_items,
					unsigned int tag);
unsigned int radix_tree_gang_lookup_tag_slot(struct radix_tree_root *root, void ***results,
					     unsigned long first_index, unsigned int max_items,
					     unsigned int tag);
unsigned long radix_tree_range_tag_if_tagged(struct radix_tree_root *root,
					     unsigned long *first_indexp, unsigned long last_index,
					     unsigned long nr_to_tag, unsigned int fromtag,
					     unsigned int totag);
int radix_tree_tagged(struct radix_tree_root *root, unsigned int tag);
/* Drains @cpu's preload pool (the kernel's CPU_DEAD notifier work). */
int radix_tree_cpu_dead(unsigned int cpu);

static inline void radix_tree_preload_end(void)
{
	preempt_enable();
}

/*
 * The v3.3 engine: one descent from the root per __lookup()/__lookup_tag()
 * call, tags scanned bit by bit. Same contracts as the functions above.
 */
unsigned int radix_tree_gang_lookup_v33(struct radix_tree_root *root, void **results,
					unsigned long first_index, unsigned int max_items);
unsigned int radix_tree_gang_lookup_slot_v33(struct radix_tree_root *root, void ***results,
					     unsigned long *indices, unsigned long first_index,
					     unsigned int max_items);
unsigned int radix_tree_gang_lookup_tag_v33(struct radix_tree_root *root, void **results,
					    unsigned long first_index, unsigned int max_items,
					    unsigned int tag);
unsigned int radix_tree_gang_lookup_tag_slot_v33(struct radix_tree_root *root, void ***results,
						 unsigned long first_index, unsigned int max_items,
						 unsigned int tag);

/*
 * struct radix_tree_iter - where a chunk iteration stands.
 * @index: position of the slot being visited
 * @next_index: one past the last index of the current chunk
 * @tags: for tagged iteration, the chunk's tag bits; bit 0 is @index
 */
struct radix_tree_iter {
	unsigned long index;
	unsigned long next_index;
	unsigned long tags;
};

#define RADIX_TREE_ITER_TAG_MASK 0x00FF /* the tag number */
#define RADIX_TREE_ITER_TAGGED 0x0100	/* visit tagged slots only */
#define RADIX_TREE_ITER_CONTIG 0x0200	/* end the walk at an empty slot */

/*
 * radix_tree_iter_init(): the first next_chunk() call starts at @start.
 * index 0 with next_index @start tells next_chunk() that a zero next_index
 * means "start at 0", not "wrapped past ~0UL".
 */
static __always_inline void **radix_tree_iter_init(struct radix_tree_iter *iter,
						   unsigned long start)
{
	iter->index = 0;
	iter->next_index = start;
	return NULL;
}

void **radix_tree_next_chunk(struct radix_tree_root *root, struct radix_tree_iter *iter,
			     unsigned flags);

/*
 * The next four are later (v4.5+) helpers for code that drops the lock or
 * restarts inside an iteration; the regression3-style tests use them.
 * radix_tree_iter_retry(): look at the current index again.
 */
static inline __must_check void **radix_tree_iter_retry(struct radix_tree_iter *iter)
{
	iter->next_index = iter->index;
	iter->tags = 0;
	return NULL;
}

/* radix_tree_iter_next(): go on after the current index (e.g. after a resched). */
static inline __must_check void **radix_tree_iter_next(struct radix_tree_iter *iter)
{
	iter->next_index = iter->index + 1;
	iter->tags = 0;
	return NULL;
}

#define radix_tree_iter_resume(slot, iter) radix_tree_iter_next(iter)

static __always_inline unsigned radix_tree_chunk_size(struct radix_tree_iter *iter)
{
	return (unsigned)(iter->next_index - iter->index);
}

/*
 * radix_tree_next_slot(): the next slot of the current chunk, or NULL at its
 * end (the caller then asks next_chunk() for more). @flags should be a
 * constant so that one branch survives inlining.
 */
static __always_inline void **radix_tree_next_slot(void **slot, struct radix_tree_iter *iter,
						   unsigned flags)
{
	if (flags & RADIX_TREE_ITER_TAGGED) {
		iter->tags >>= 1;
		if (likely(iter->tags & 1ul)) {
			iter->index++;
			return slot + 1;
		}
		if (!(flags & RADIX_TREE_ITER_CONTIG) && likely(iter->tags)) {
			unsigned offset = __ffs(iter->tags);

			iter->tags >>= offset;
			iter->index += offset + 1;
			return slot + offset + 1;
		}
	} else {
		/*
		 * Signed, as in v4.5+: after radix_tree_iter_retry() the chunk
		 * is empty and there is nothing to step over.
		 */
		long count = radix_tree_chunk_size(iter);

		while (--count > 0) {
			slot++;
			iter->index++;
			/*
			 * A plain load, as in the kernel: only a hint that
			 * the slot is worth returning; the caller dereferences
			 * it properly. No READ_ONCE: g++ treats an atomic load
			 * as clobbering memory that escaped, and @iter escapes
			 * to next_chunk(), so iter->index would go through
			 * memory on every slot.
			 */
			if (likely(data_race(*slot)))
				return slot;
			if (flags & RADIX_TREE_ITER_CONTIG) {
				/* A hole ends a contiguous walk for good. */
				iter->next_index = 0;
				break;
			}
		}
	}
	return NULL;
}

#define radix_tree_for_each_chunk(slot, root, iter, start, flags) \
	for (slot = radix_tree_iter_init(iter, start);            \
	     (slot = radix_tree_next_chunk(root, iter, flags));)

#define radix_tree_for_each_chunk_slot(slot, iter, flags) \
	for (; slot; slot = radix_tree_next_slot(slot, iter, flags))

#define radix_tree_for_each_slot(slot, root, iter, start)           \
	for (slot = radix_tree_iter_init(iter, start);              \
	     slot || (slot = radix_tree_next_chunk(root, iter, 0)); \
	     slot = radix_tree_next_slot(slot, iter, 0))

#define radix_tree_for_each_contig(slot, root, iter, start)                              \
	for (slot = radix_tree_iter_init(iter, start);                                   \
	     slot || (slot = radix_tree_next_chunk(root, iter, RADIX_TREE_ITER_CONTIG)); \
	     slot = radix_tree_next_slot(slot, iter, RADIX_TREE_ITER_CONTIG))

#define radix_tree_for_each_tagged(slot, root, iter, start, tag)                                 \
	for (slot = radix_tree_iter_init(iter, start);                                           \
	     slot || (slot = radix_tree_next_chunk(root, iter, RADIX_TREE_ITER_TAGGED | (tag))); \
	     slot = radix_tree_next_slot(slot, iter, RADIX_TREE_ITER_TAGGED))

/*
 * radix_tree_find_next_bit(): find_next_bit() unrolled for a constant @size
 * (a node's tag bitmap). Bits at and beyond @size in the last word must be 0.
 */
static __always_inline unsigned long
radix_tree_find_next_bit(const unsigned long *addr, unsigned long size, unsigned long offset)
{
	if (!__builtin_constant_p(size))
		return find_next_bit(addr, size, offset);

	if (offset < size) {
		unsigned long tmp;

		addr += offset / BITS_PER_LONG;
		tmp = READ_ONCE(*addr) >> (offset % BITS_PER_LONG);
		if (tmp)
			return __ffs(tmp) + offset;
		offset = (offset + BITS_PER_LONG) & ~(BITS_PER_LONG - 1);
		while (offset < size) {
			tmp = READ_ONCE(*++addr);
			if (tmp)
				return __ffs(tmp) + offset;
			offset += BITS_PER_LONG;
		}
	}
	return size;
}

struct kmem_cache;

namespace uk
{
/* The node cache, for leak checks with uk::slab_nr_allocated(). */
struct kmem_cache *radix_tree_node_cache();
/* Largest index a tree of @height can hold (the kernel's height_to_maxindex). */
unsigned long radix_tree_maxindex(unsigned int height);
} // namespace uk

#endif /* UK_LINUX_RADIX_TREE_H */
