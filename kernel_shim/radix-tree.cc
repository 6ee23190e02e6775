// SPDX-License-Identifier: GPL-2.0-only
/*
 * lib/radix-tree.c as of v3.4: the height-based radix tree with tags, RCU
 * readers, per-CPU node preloading, and the bit-optimized chunk iterator
 * (78c1d78488a3) with the gang lookups rewritten on top of it (cebbd29e1c2f).
 * The v3.3 gang lookup engine (__lookup/__lookup_tag) follows at the end
 * under _v33 names, for side-by-side benchmarks and differential tests.
 *
 * Locking, as in the kernel: modifications (insert, delete, tag set/clear,
 * preload use) are serialised by the caller; lookups, tag_get, tagged, the
 * iterator and the gang lookups may run under rcu_read_lock() alone, with
 * the caller coping with results that a concurrent writer makes stale.
 *
 * Upstream: lib/radix-tree.c @ v3.4
 */
#include <uk/linux/radix-tree.h>

#include <uk/linux/bitops.h>
#include <uk/linux/errno.h>
#include <uk/linux/kernel.h>
#include <uk/linux/percpu.h>
#include <uk/linux/preempt.h>
#include <uk/linux/rcupdate.h>
#include <uk/linux/slab.h>
#include <uk/linux/smp.h>

#include <array>

namespace
{

constexpr unsigned long maxindex_of_height(unsigned int height)
{
	unsigned int width = height * RADIX_TREE_MAP_SHIFT;
	int shift = (int)RADIX_TREE_INDEX_BITS - (int)width;

	if (shift < 0)
		return ~0UL;
	if (shift >= (int)BITS_PER_LONG)
		return 0UL;
	return ~0UL >> shift;
}

constexpr std::array<unsigned long, RADIX_TREE_MAX_PATH + 1> make_height_to_maxindex()
{
	std::array<unsigned long, RADIX_TREE_MAX_PATH + 1> a{};

	for (unsigned int i = 0; i < a.size(); i++)
		a[i] = maxindex_of_height(i);
	return a;
}

} // namespace

/* Largest index storable at each height (the kernel fills this at boot). */
static constexpr std::array<unsigned long, RADIX_TREE_MAX_PATH + 1> height_to_maxindex =
	make_height_to_maxindex();

/* Nodes handed out ahead of time, so insertions under a spinlock cannot fail. */
struct radix_tree_preload {
	int nr;
	struct radix_tree_node *nodes[RADIX_TREE_PRELOAD_SIZE];
};
static DEFINE_PER_CPU(struct radix_tree_preload, radix_tree_preloads);

static void radix_tree_node_ctor(void *node)
{
	memset(node, 0, sizeof(struct radix_tree_node));
}

/*
 * The kernel creates radix_tree_node_cachep in radix_tree_init() at boot; a
 * user-mode program has no boot, so the first user creates it.
 */
static struct kmem_cache *radix_tree_node_cachep_get(void)
{
	static struct kmem_cache *cachep =
		kmem_cache_create("radix_tree_node", sizeof(struct radix_tree_node), 0,
				  SLAB_PANIC | SLAB_RECLAIM_ACCOUNT, radix_tree_node_ctor);
	return cachep;
}
#define radix_tree_node_cachep (radix_tree_node_cachep_get())

namespace uk
{
struct kmem_cache *radix_tree_node_cache()
{
	return radix_tree_node_cachep;
}

unsigned long radix_tree_maxindex(unsigned int height)
{
	return height_to_maxindex[height];
}
} // namespace uk

static inline gfp_t root_gfp_mask(struct radix_tree_root *root)
{
	return root->gfp_mask & __GFP_BITS_MASK;
}

/*
 * Node tag words: written only by the (serialised) writer, read by RCU
 * readers, hence the single-copy-atomic load/store pairs below.
 */
static inline void tag_set(struct radix_tree_node *node, unsigned int tag, int offset)
{
	unsigned long *word = &node->tags[tag][BIT_WORD(offset)];

	WRITE_ONCE(*word, READ_ONCE(*word) | BIT_MASK(offset));
}

static inline void tag_clear(struct radix_tree_node *node, unsigned int tag, int offset)
{
	unsigned long *word = &node->tags[tag][BIT_WORD(offset)];

	WRITE_ONCE(*word, READ_ONCE(*word) & ~BIT_MASK(offset));
}

static inline int tag_get(struct radix_tree_node *node, unsigned int tag, int offset)
{
	return (READ_ONCE(node->tags[tag][BIT_WORD(offset)]) >> (offset % BITS_PER_LONG)) & 1;
}

static inline void root_tag_set(struct radix_tree_root *root, unsigned int tag)
{
	WRITE_ONCE(root->gfp_mask,
		   READ_ONCE(root->gfp_mask) | (gfp_t)(1 << (tag + __GFP_BITS_SHIFT)));
}

static inline void root_tag_clear(struct radix_tree_root *root, unsigned int tag)
{
	WRITE_ONCE(root->gfp_mask,
		   READ_ONCE(root->gfp_mask) & (gfp_t) ~(1 << (tag + __GFP_BITS_SHIFT)));
}

static inline void root_tag_clear_all(struct radix_tree_root *root)
{
	WRITE_ONCE(root->gfp_mask, READ_ONCE(root->gfp_mask) & __GFP_BITS_MASK);
}

static inline int root_tag_get(struct radix_tree_root *root, unsigned int tag)
{
	return (int)(READ_ONCE(root->gfp_mask) & (1 << (tag + __GFP_BITS_SHIFT)));
}

/* Whether any slot of @node carries @tag. */
static inline int any_tag_set(struct radix_tree_node *node, unsigned int tag)
{
	for (int idx = 0; idx < (int)RADIX_TREE_TAG_LONGS; idx++) {
		if (READ_ONCE(node->tags[tag][idx]))
			return 1;
	}
	return 0;
}

static inline unsigned long radix_tree_maxindex(unsigned int height)
{
	return height_to_maxindex[height];
}

static struct radix_tree_node *radix_tree_node_alloc(struct radix_tree_root *root)
{
	struct radix_tree_node *ret = NULL;
	gfp_t gfp_mask = root_gfp_mask(root);

	if (!gfpflags_allow_blocking(gfp_mask)) {
		struct radix_tree_preload *rtp;

		/*
		 * The caller cannot sleep: it either preloaded (and so runs
		 * with preemption off on this CPU) or takes its chances with
		 * an atomic allocation below.
		 */
		rtp = this_cpu_ptr(&radix_tree_preloads);
		if (rtp->nr) {
			ret = rtp->nodes[rtp->nr - 1];
			rtp->nodes[rtp->nr - 1] = NULL;
			rtp->nr--;
		}
	}
	if (ret == NULL)
		ret = kmem_cache_alloc(radix_tree_node_cachep, gfp_mask);

	BUG_ON(radix_tree_is_indirect_ptr(ret));
	return ret;
}

static void radix_tree_node_rcu_free(struct rcu_head *head)
{
	struct radix_tree_node *node = container_of(head, struct radix_tree_node, rcu_head);

	/*
	 * Only slot 0 and tag bit 0 can still be set (a shrink leaves them
	 * for the readers that may still walk through this node); the cache
	 * hands out clean nodes.
	 */
	for (int i = 0; i < RADIX_TREE_MAX_TAGS; i++)
		tag_clear(node, i, 0);
	node->slots[0] = NULL;
	node->count = 0;
	kmem_cache_free(radix_tree_node_cachep, node);
}

static inline void radix_tree_node_free(struct radix_tree_node *node)
{
	call_rcu(&node->rcu_head, radix_tree_node_rcu_free);
}

int radix_tree_preload(gfp_t gfp_mask)
{
	struct radix_tree_preload *rtp;
	struct radix_tree_node *node;
	int ret = -ENOMEM;

	preempt_disable();
	rtp = this_cpu_ptr(&radix_tree_preloads);
	while (rtp->nr < (int)ARRAY_SIZE(rtp->nodes)) {
		/* Allocate with preemption on: the allocation may sleep. */
		preempt_enable();
		node = kmem_cache_alloc(radix_tree_node_cachep, gfp_mask);
		if (node == NULL)
			goto out;
		preempt_disable();
		/* We may be on another CPU now. */
		rtp = this_cpu_ptr(&radix_tree_preloads);
		if (rtp->nr < (int)ARRAY_SIZE(rtp->nodes))
			rtp->nodes[rtp->nr++] = node;
		else
			kmem_cache_free(radix_tree_node_cachep, node);
	}
	ret = 0;
out:
	return ret;
}

int radix_tree_maybe_preload(gfp_t gfp_mask)
{
	if (gfpflags_allow_blocking(gfp_mask))
		return radix_tree_preload(gfp_mask);
	/* Keep preload_end() balanced for callers that cannot preload. */
	preempt_disable();
	return 0;
}

int radix_tree_cpu_dead(unsigned int cpu)
{
	struct radix_tree_preload *rtp = &per_cpu(radix_tree_preloads, cpu);

	while (rtp->nr) {
		kmem_cache_free(radix_tree_node_cachep, rtp->nodes[rtp->nr - 1]);
		rtp->nodes[rtp->nr - 1] = NULL;
		rtp->nr--;
	}
	return 0;
}

void radix_tree_init(void)
{
	(void)radix_tree_node_cachep;
}

/* Adds levels on top until @index fits. */
static int radix_tree_extend(struct radix_tree_root *root, unsigned long index)
{
	struct radix_tree_node *node;
	struct radix_tree_node *slot;
	unsigned int height;
	int tag;

	height = root->height + 1;
	while (index > radix_tree_maxindex(height))
		height++;

	if (root->rnode == NULL) {
		root->height = height;
		goto out;
	}

	do {
		unsigned int newheight;

		if (!(node = radix_tree_node_alloc(root)))
			return -ENOMEM;

		/* The old root becomes slot 0: its tags summarise into bit 0. */
		for (tag = 0; tag < RADIX_TREE_MAX_TAGS; tag++) {
			if (root_tag_get(root, tag))
				tag_set(node, tag, 0);
		}

		newheight = root->height + 1;
		node->height = newheight;
		node->count = 1;
		node->parent = NULL;
		slot = root->rnode;
		if (newheight > 1) {
			slot = (struct radix_tree_node *)indirect_to_ptr(slot);
			slot->parent = node;
		}
		node->slots[0] = slot;
		node = (struct radix_tree_node *)ptr_to_indirect(node);
		/* Publishes the node's contents; pairs with rcu_dereference_raw() in readers. */
		rcu_assign_pointer(root->rnode, node);
		root->height = newheight;
	} while (height > root->height);
out:
	return 0;
}

int radix_tree_insert(struct radix_tree_root *root, unsigned long index, void *item)
{
	struct radix_tree_node *node = NULL, *slot;
	unsigned int height, shift;
	int offset;
	int error;

	BUG_ON(radix_tree_is_indirect_ptr(item));

	if (index > radix_tree_maxindex(root->height)) {
		error = radix_tree_extend(root, index);
		if (error)
			return error;
	}

	slot = (struct radix_tree_node *)indirect_to_ptr(root->rnode);

	height = root->height;
	shift = (height - 1) * RADIX_TREE_MAP_SHIFT;

	offset = 0;
	while (height > 0) {
		if (slot == NULL) {
			if (!(slot = radix_tree_node_alloc(root)))
				return -ENOMEM;
			slot->height = height;
			slot->parent = node;
			/* Publish the initialised node: pairs with readers' rcu_dereference_raw(). */
			if (node) {
				rcu_assign_pointer(node->slots[offset], slot);
				node->count++;
			} else {
				rcu_assign_pointer(root->rnode,
						   (struct radix_tree_node *)ptr_to_indirect(slot));
			}
		}

		offset = (index >> shift) & RADIX_TREE_MAP_MASK;
		node = slot;
		slot = (struct radix_tree_node *)node->slots[offset];
		shift -= RADIX_TREE_MAP_SHIFT;
		height--;
	}

	if (slot != NULL)
		return -EEXIST;

	if (node) {
		node->count++;
		/* Publishes the item: pairs with rcu_dereference() in radix_tree_deref_slot(). */
		rcu_assign_pointer(node->slots[offset], item);
		BUG_ON(tag_get(node, 0, offset));
		BUG_ON(tag_get(node, 1, offset));
		BUG_ON(tag_get(node, 2, offset));
	} else {
		rcu_assign_pointer(root->rnode, (struct radix_tree_node *)item);
		BUG_ON(root_tag_get(root, 0));
		BUG_ON(root_tag_get(root, 1));
		BUG_ON(root_tag_get(root, 2));
	}

	return 0;
}

/* The lookup walk: the item itself, or (is_slot) the slot that holds it. */
static void *radix_tree_lookup_element(struct radix_tree_root *root, unsigned long index,
				       int is_slot)
{
	unsigned int height, shift;
	struct radix_tree_node *node, **slot;

	node = rcu_dereference_raw(root->rnode);
	if (node == NULL)
		return NULL;

	if (!radix_tree_is_indirect_ptr(node)) {
		if (index > 0)
			return NULL;
		return is_slot ? (void *)&root->rnode : (void *)node;
	}
	node = (struct radix_tree_node *)indirect_to_ptr(node);

	/* The node's own height, not root->height: it is stable under RCU. */
	height = node->height;
	if (index > radix_tree_maxindex(height))
		return NULL;

	shift = (height - 1) * RADIX_TREE_MAP_SHIFT;

	do {
		slot = (struct radix_tree_node **)(node->slots +
						   ((index >> shift) & RADIX_TREE_MAP_MASK));
		node = rcu_dereference_raw(*slot);
		if (node == NULL)
			return NULL;

		shift -= RADIX_TREE_MAP_SHIFT;
		height--;
	} while (height > 0);

	return is_slot ? (void *)slot : indirect_to_ptr(node);
}

void **radix_tree_lookup_slot(struct radix_tree_root *root, unsigned long index)
{
	return (void **)radix_tree_lookup_element(root, index, 1);
}

void *radix_tree_lookup(struct radix_tree_root *root, unsigned long index)
{
	return radix_tree_lookup_element(root, index, 0);
}

void *radix_tree_tag_set(struct radix_tree_root *root, unsigned long index, unsigned int tag)
{
	unsigned int height, shift;
	struct radix_tree_node *slot;

	height = root->height;
	BUG_ON(index > radix_tree_maxindex(height));

	slot = (struct radix_tree_node *)indirect_to_ptr(root->rnode);
	shift = (height - 1) * RADIX_TREE_MAP_SHIFT;

	while (height > 0) {
		int offset;

		offset = (index >> shift) & RADIX_TREE_MAP_MASK;
		if (!tag_get(slot, tag, offset))
			tag_set(slot, tag, offset);
		slot = (struct radix_tree_node *)slot->slots[offset];
		BUG_ON(slot == NULL);
		shift -= RADIX_TREE_MAP_SHIFT;
		height--;
	}

	if (slot && !root_tag_get(root, tag))
		root_tag_set(root, tag);

	return slot;
}

void *radix_tree_tag_clear(struct radix_tree_root *root, unsigned long index, unsigned int tag)
{
	struct radix_tree_node *node = NULL;
	struct radix_tree_node *slot = NULL;
	unsigned int height, shift;
	int offset = 0;

	height = root->height;
	if (index > radix_tree_maxindex(height))
		goto out;

	shift = height * RADIX_TREE_MAP_SHIFT;
	slot = (struct radix_tree_node *)indirect_to_ptr(root->rnode);

	while (shift) {
		if (slot == NULL)
			goto out;

		shift -= RADIX_TREE_MAP_SHIFT;
		offset = (index >> shift) & RADIX_TREE_MAP_MASK;
		node = slot;
		slot = (struct radix_tree_node *)slot->slots[offset];
	}

	if (slot == NULL)
		goto out;

	/* Clear upwards while the level below has no other tagged slot. */
	while (node) {
		if (!tag_get(node, tag, offset))
			goto out;
		tag_clear(node, tag, offset);
		if (any_tag_set(node, tag))
			goto out;

		index >>= RADIX_TREE_MAP_SHIFT;
		offset = index & RADIX_TREE_MAP_MASK;
		node = node->parent;
	}

	if (root_tag_get(root, tag))
		root_tag_clear(root, tag);

out:
	return slot;
}

int radix_tree_tag_get(struct radix_tree_root *root, unsigned long index, unsigned int tag)
{
	unsigned int height, shift;
	struct radix_tree_node *node;

	if (!root_tag_get(root, tag))
		return 0;

	node = rcu_dereference_raw(root->rnode);
	if (node == NULL)
		return 0;

	if (!radix_tree_is_indirect_ptr(node))
		return (index == 0);
	node = (struct radix_tree_node *)indirect_to_ptr(node);

	height = node->height;
	if (index > radix_tree_maxindex(height))
		return 0;

	shift = (height - 1) * RADIX_TREE_MAP_SHIFT;

	for (;;) {
		int offset;

		if (node == NULL)
			return 0;

		offset = (index >> shift) & RADIX_TREE_MAP_MASK;
		if (!tag_get(node, tag, offset))
			return 0;
		if (height == 1)
			return 1;
		node = (struct radix_tree_node *)rcu_dereference_raw(node->slots[offset]);
		shift -= RADIX_TREE_MAP_SHIFT;
		height--;
	}
}

void **radix_tree_next_chunk(struct radix_tree_root *root, struct radix_tree_iter *iter,
			     unsigned flags)
{
	unsigned shift, tag = flags & RADIX_TREE_ITER_TAG_MASK;
	struct radix_tree_node *rnode, *node;
	unsigned long index, offset;

	if ((flags & RADIX_TREE_ITER_TAGGED) && !root_tag_get(root, tag))
		return NULL;

	/*
	 * next_index 0 after a non-zero index: the last chunk ended at ~0UL
	 * and the increment wrapped. A chunk never spans more than one leaf,
	 * so next_index cannot wrap past a whole chunk in one step.
	 */
	index = iter->next_index;
	if (!index && iter->index)
		return NULL;

	rnode = rcu_dereference_raw(root->rnode);
	if (radix_tree_is_indirect_ptr(rnode)) {
		rnode = (struct radix_tree_node *)indirect_to_ptr(rnode);
	} else if (rnode && !index) {
		/* A lone item at index 0 lives in the root pointer itself. */
		iter->index = 0;
		iter->next_index = 1;
		iter->tags = 1;
		return (void **)&root->rnode;
	} else {
		return NULL;
	}

restart:
	shift = (rnode->height - 1) * RADIX_TREE_MAP_SHIFT;
	offset = index >> shift;

	/* Beyond what this tree can hold. */
	if (offset >= RADIX_TREE_MAP_SIZE)
		return NULL;

	node = rnode;
	while (1) {
		if ((flags & RADIX_TREE_ITER_TAGGED) ? !tag_get(node, tag, offset)
						     : !READ_ONCE(node->slots[offset])) {
			/* A hole at this level: skip to the next candidate slot. */
			if (flags & RADIX_TREE_ITER_CONTIG)
				return NULL;

			if (flags & RADIX_TREE_ITER_TAGGED) {
				offset = radix_tree_find_next_bit(node->tags[tag],
								  RADIX_TREE_MAP_SIZE, offset + 1);
			} else {
				while (++offset < RADIX_TREE_MAP_SIZE) {
					if (READ_ONCE(node->slots[offset]))
						break;
				}
			}
			index &= ~((RADIX_TREE_MAP_SIZE << shift) - 1);
			index += offset << shift;
			/* Wrapped past ~0UL. */
			if (!index)
				return NULL;
			/* This node is exhausted: look again from the top. */
			if (offset == RADIX_TREE_MAP_SIZE)
				goto restart;
		}

		if (!shift)
			break;

		node = (struct radix_tree_node *)rcu_dereference_raw(node->slots[offset]);
		/* Deleted under us: look again from the top. */
		if (node == NULL)
			goto restart;
		shift -= RADIX_TREE_MAP_SHIFT;
		offset = (index >> shift) & RADIX_TREE_MAP_MASK;
	}

	iter->index = index;
	iter->next_index = (index | RADIX_TREE_MAP_MASK) + 1;

	if (flags & RADIX_TREE_ITER_TAGGED) {
		unsigned tag_long, tag_bit;

		tag_long = offset / BITS_PER_LONG;
		tag_bit = offset % BITS_PER_LONG;
		iter->tags = READ_ONCE(node->tags[tag][tag_long]) >> tag_bit;
		/* A chunk's tags fit one word: clip it if the node has more. */
		if (tag_long < RADIX_TREE_TAG_LONGS - 1) {
			if (tag_bit)
				iter->tags |= READ_ONCE(node->tags[tag][tag_long + 1])
					      << (BITS_PER_LONG - tag_bit);
			iter->next_index = index + BITS_PER_LONG;
		}
	}

	return node->slots + offset;
}

unsigned long radix_tree_range_tag_if_tagged(struct radix_tree_root *root,
					     unsigned long *first_indexp, unsigned long last_index,
					     unsigned long nr_to_tag, unsigned int iftag,
					     unsigned int settag)
{
	struct radix_tree_iter iter;
	void **slot;
	unsigned long tagged = 0;
	unsigned long next = *first_indexp;

	if (last_index < *first_indexp || !nr_to_tag)
		return 0;

	/*
	 * Setting tags one index at a time sets the root tag only when an
	 * item really got tagged (the regression2 rule).
	 */
	radix_tree_for_each_tagged (slot, root, &iter, *first_indexp, iftag) {
		if (iter.index > last_index)
			break;
		radix_tree_tag_set(root, iter.index, settag);
		next = iter.index + 1;
		if (++tagged >= nr_to_tag)
			break;
	}
	if (tagged < nr_to_tag || next == 0)
		next = last_index + 1;
	*first_indexp = next;
	return tagged;
}

unsigned int radix_tree_gang_lookup(struct radix_tree_root *root, void **results,
				    unsigned long first_index, unsigned int max_items)
{
	struct radix_tree_iter iter;
	void **slot;
	unsigned int ret = 0;

	if (unlikely(!max_items))
		return 0;

	radix_tree_for_each_slot (slot, root, &iter, first_index) {
		results[ret] = rcu_dereference_raw(*slot);
		/*
		 * An indirect pointer here: the slot was the root pointer of a
		 * single-item tree that grew under us (now a node), or an
		 * item moved by a shrink. Look this index up again. (v3.4
		 * stripped the bit and could return a node as an item; this is
		 * the v4.5 fix, 46437f9a554f "radix-tree: fix race in gang
		 * lookup".)
		 */
		if (radix_tree_is_indirect_ptr(results[ret])) {
			slot = radix_tree_iter_retry(&iter);
			continue;
		}
		if (!results[ret])
			continue;
		if (++ret == max_items)
			break;
	}

	return ret;
}

unsigned int radix_tree_gang_lookup_slot(struct radix_tree_root *root, void ***results,
					 unsigned long *indices, unsigned long first_index,
					 unsigned int max_items)
{
	struct radix_tree_iter iter;
	void **slot;
	unsigned int ret = 0;

	if (unlikely(!max_items))
		return 0;

	radix_tree_for_each_slot (slot, root, &iter, first_index) {
		results[ret] = slot;
		if (indices)
			indices[ret] = iter.index;
		if (++ret == max_items)
			break;
	}

	return ret;
}

unsigned int radix_tree_gang_lookup_tag(struct radix_tree_root *root, void **results,
					unsigned long first_index, unsigned int max_items,
					unsigned int tag)
{
	struct radix_tree_iter iter;
	void **slot;
	unsigned int ret = 0;

	if (unlikely(!max_items))
		return 0;

	radix_tree_for_each_tagged (slot, root, &iter, first_index, tag) {
		results[ret] = rcu_dereference_raw(*slot);
		/*
		 * An indirect pointer here: the slot was the root pointer of a
		 * single-item tree that grew under us (now a node), or an
		 * item moved by a shrink. Look this index up again. (v3.4
		 * stripped the bit and could return a node as an item; this is
		 * the v4.5 fix, 46437f9a554f "radix-tree: fix race in gang
		 * lookup".)
		 */
		if (radix_tree_is_indirect_ptr(results[ret])) {
			slot = radix_tree_iter_retry(&iter);
			continue;
		}
		if (!results[ret])
			continue;
		if (++ret == max_items)
			break;
	}

	return ret;
}

unsigned int radix_tree_gang_lookup_tag_slot(struct radix_tree_root *root, void ***results,
					     unsigned long first_index, unsigned int max_items,
					     unsigned int tag)
{
	struct radix_tree_iter iter;
	void **slot;
	unsigned int ret = 0;

	if (unlikely(!max_items))
		return 0;

	radix_tree_for_each_tagged (slot, root, &iter, first_index, tag) {
		results[ret] = slot;
		if (++ret == max_items)
			break;
	}

	return ret;
}

unsigned long radix_tree_next_hole(struct radix_tree_root *root, unsigned long index,
				   unsigned long max_scan)
{
	for (unsigned long i = 0; i < max_scan; i++) {
		if (!radix_tree_lookup(root, index))
			break;
		index++;
		if (index == 0)
			break;
	}
	return index;
}

unsigned long radix_tree_prev_hole(struct radix_tree_root *root, unsigned long index,
				   unsigned long max_scan)
{
	for (unsigned long i = 0; i < max_scan; i++) {
		if (!radix_tree_lookup(root, index))
			break;
		index--;
		if (index == ~0UL)
			break;
	}
	return index;
}

/* While the root node has one child, in slot 0, that child becomes the root. */
static inline void radix_tree_shrink(struct radix_tree_root *root)
{
	while (root->height > 0) {
		struct radix_tree_node *to_free = root->rnode;
		struct radix_tree_node *newptr;

		BUG_ON(!radix_tree_is_indirect_ptr(to_free));
		to_free = (struct radix_tree_node *)indirect_to_ptr(to_free);

		if (to_free->count != 1)
			break;
		if (!to_free->slots[0])
			break;

		/*
		 * Readers may still be inside to_free; it stays intact (slot 0
		 * still points at the child) until the grace period ends.
		 */
		newptr = (struct radix_tree_node *)to_free->slots[0];
		if (root->height > 1) {
			newptr->parent = NULL;
			newptr = (struct radix_tree_node *)ptr_to_indirect(newptr);
		}
		WRITE_ONCE(root->rnode, newptr);
		root->height--;

		/*
		 * The item moved into the root pointer: a reader holding
		 * &to_free->slots[0] sees the indirect bit and retries
		 * (radix_tree_deref_retry()). Nothing new to publish, so a
		 * plain single-copy-atomic store is enough.
		 */
		if (root->height == 0)
			WRITE_ONCE(to_free->slots[0],
				   ptr_to_indirect(READ_ONCE(to_free->slots[0])));

		radix_tree_node_free(to_free);
	}
}

void *radix_tree_delete(struct radix_tree_root *root, unsigned long index)
{
	struct radix_tree_node *node = NULL;
	struct radix_tree_node *slot = NULL;
	struct radix_tree_node *to_free;
	unsigned int height, shift;
	int tag;
	int offset = 0;

	height = root->height;
	if (index > radix_tree_maxindex(height))
		goto out;

	slot = root->rnode;
	if (height == 0) {
		root_tag_clear_all(root);
		WRITE_ONCE(root->rnode, NULL);
		goto out;
	}
	slot = (struct radix_tree_node *)indirect_to_ptr(slot);
	shift = height * RADIX_TREE_MAP_SHIFT;

	do {
		if (slot == NULL)
			goto out;

		shift -= RADIX_TREE_MAP_SHIFT;
		offset = (index >> shift) & RADIX_TREE_MAP_MASK;
		node = slot;
		slot = (struct radix_tree_node *)slot->slots[offset];
	} while (shift);

	if (slot == NULL)
		goto out;

	for (tag = 0; tag < RADIX_TREE_MAX_TAGS; tag++) {
		if (tag_get(node, tag, offset))
			radix_tree_tag_clear(root, index, tag);
	}

	to_free = NULL;
	/* Climb back up, releasing each node this removal has left empty. */
	while (node) {
		WRITE_ONCE(node->slots[offset], NULL);
		node->count--;
		/* The child is unlinked now; free it after readers are done. */
		if (to_free)
			radix_tree_node_free(to_free);

		if (node->count) {
			if (node == indirect_to_ptr(root->rnode))
				radix_tree_shrink(root);
			goto out;
		}

		/* Nothing remains in this node: queue it for freeing, go up. */
		to_free = node;

		index >>= RADIX_TREE_MAP_SHIFT;
		offset = index & RADIX_TREE_MAP_MASK;
		node = node->parent;
	}

	root_tag_clear_all(root);
	root->height = 0;
	WRITE_ONCE(root->rnode, NULL);
	if (to_free)
		radix_tree_node_free(to_free);

out:
	return slot;
}

int radix_tree_tagged(struct radix_tree_root *root, unsigned int tag)
{
	return root_tag_get(root, tag);
}

/*
 * ---------------------------------------------------------------------------
 * The v3.3 gang lookup engine (before 78c1d78488a3 and cebbd29e1c2f).
 * ---------------------------------------------------------------------------
 */

/*
 * __lookup(): one descent from @slot (the root node) to the leaf that holds
 * @index or the next populated leaf of that descent, collecting up to
 * @max_items slot pointers from that single leaf. *@next_index says where
 * the caller's next descent starts (0 on wraparound).
 */
static unsigned int __lookup(struct radix_tree_node *slot, void ***results, unsigned long *indices,
			     unsigned long index, unsigned int max_items, unsigned long *next_index)
{
	unsigned int nr_found = 0;
	unsigned int shift, height;
	unsigned long i;

	height = slot->height;
	if (height == 0)
		goto out;
	shift = (height - 1) * RADIX_TREE_MAP_SHIFT;

	for (; height > 1; height--) {
		i = (index >> shift) & RADIX_TREE_MAP_MASK;
		for (;;) {
			if (READ_ONCE(slot->slots[i]) != NULL)
				break;
			index &= ~((1UL << shift) - 1);
			index += 1UL << shift;
			if (index == 0)
				goto out; /* wrapped */
			i++;
			if (i == RADIX_TREE_MAP_SIZE)
				goto out;
		}

		shift -= RADIX_TREE_MAP_SHIFT;
		slot = (struct radix_tree_node *)rcu_dereference_raw(slot->slots[i]);
		if (slot == NULL)
			goto out;
	}

	/* At the leaf: collect occupied slots from @index on, up to @max_items. */
	for (i = index & RADIX_TREE_MAP_MASK; i < RADIX_TREE_MAP_SIZE; i++) {
		if (READ_ONCE(slot->slots[i])) {
			results[nr_found] = &slot->slots[i];
			if (indices)
				indices[nr_found] = index;
			if (++nr_found == max_items) {
				index++;
				goto out;
			}
		}
		index++;
	}
out:
	*next_index = index;
	return nr_found;
}

unsigned int radix_tree_gang_lookup_v33(struct radix_tree_root *root, void **results,
					unsigned long first_index, unsigned int max_items)
{
	unsigned long max_index;
	struct radix_tree_node *node;
	unsigned long cur_index = first_index;
	unsigned int ret;

	node = rcu_dereference_raw(root->rnode);
	if (!node)
		return 0;

	if (!radix_tree_is_indirect_ptr(node)) {
		if (first_index > 0)
			return 0;
		results[0] = node;
		return 1;
	}
	node = (struct radix_tree_node *)indirect_to_ptr(node);

	max_index = radix_tree_maxindex(node->height);

	ret = 0;
	while (ret < max_items) {
		unsigned int nr_found, slots_found, i;
		unsigned long next_index;

		if (cur_index > max_index)
			break;
		slots_found = __lookup(node, (void ***)results + ret, NULL, cur_index,
				       max_items - ret, &next_index);
		/* Turn the slot pointers into items, dropping concurrently deleted ones. */
		nr_found = 0;
		for (i = 0; i < slots_found; i++) {
			void *item = rcu_dereference_raw(*(((void ***)results)[ret + i]));

			if (!item)
				continue;
			results[ret + nr_found] = indirect_to_ptr(item);
			nr_found++;
		}
		ret += nr_found;
		if (next_index == 0)
			break;
		cur_index = next_index;
	}

	return ret;
}

unsigned int radix_tree_gang_lookup_slot_v33(struct radix_tree_root *root, void ***results,
					     unsigned long *indices, unsigned long first_index,
					     unsigned int max_items)
{
	unsigned long max_index;
	struct radix_tree_node *node;
	unsigned long cur_index = first_index;
	unsigned int ret;

	node = rcu_dereference_raw(root->rnode);
	if (!node)
		return 0;

	if (!radix_tree_is_indirect_ptr(node)) {
		if (first_index > 0)
			return 0;
		results[0] = (void **)&root->rnode;
		if (indices)
			indices[0] = 0;
		return 1;
	}
	node = (struct radix_tree_node *)indirect_to_ptr(node);

	max_index = radix_tree_maxindex(node->height);

	ret = 0;
	while (ret < max_items) {
		unsigned int slots_found;
		unsigned long next_index;

		if (cur_index > max_index)
			break;
		slots_found = __lookup(node, results + ret, indices ? indices + ret : NULL,
				       cur_index, max_items - ret, &next_index);
		ret += slots_found;
		if (next_index == 0)
			break;
		cur_index = next_index;
	}

	return ret;
}

/* __lookup() for tagged slots, testing the tag bitmaps one bit at a time. */
static unsigned int __lookup_tag(struct radix_tree_node *slot, void ***results, unsigned long index,
				 unsigned int max_items, unsigned long *next_index,
				 unsigned int tag)
{
	unsigned int nr_found = 0;
	unsigned int shift, height;

	height = slot->height;
	if (height == 0)
		goto out;
	shift = (height - 1) * RADIX_TREE_MAP_SHIFT;

	while (height > 0) {
		unsigned long i = (index >> shift) & RADIX_TREE_MAP_MASK;

		for (;;) {
			if (tag_get(slot, tag, i))
				break;
			index &= ~((1UL << shift) - 1);
			index += 1UL << shift;
			if (index == 0)
				goto out; /* wrapped */
			i++;
			if (i == RADIX_TREE_MAP_SIZE)
				goto out;
		}
		height--;
		if (height == 0) {
			/* At the leaf: collect slots that carry @tag. */
			unsigned long j = index & RADIX_TREE_MAP_MASK;

			for (; j < RADIX_TREE_MAP_SIZE; j++) {
				index++;
				if (!tag_get(slot, tag, j))
					continue;
				/*
				 * A lockless delete clears the slot before
				 * the tag: skip slots that are already empty.
				 */
				if (READ_ONCE(slot->slots[j])) {
					results[nr_found++] = &slot->slots[j];
					if (nr_found == max_items)
						goto out;
				}
			}
			break;
		}
		shift -= RADIX_TREE_MAP_SHIFT;
		slot = (struct radix_tree_node *)rcu_dereference_raw(slot->slots[i]);
		if (slot == NULL)
			break;
	}
out:
	*next_index = index;
	return nr_found;
}

unsigned int radix_tree_gang_lookup_tag_v33(struct radix_tree_root *root, void **results,
					    unsigned long first_index, unsigned int max_items,
					    unsigned int tag)
{
	struct radix_tree_node *node;
	unsigned long max_index;
	unsigned long cur_index = first_index;
	unsigned int ret;

	/* Nothing tagged anywhere. */
	if (!root_tag_get(root, tag))
		return 0;

	node = rcu_dereference_raw(root->rnode);
	if (!node)
		return 0;

	if (!radix_tree_is_indirect_ptr(node)) {
		if (first_index > 0)
			return 0;
		results[0] = node;
		return 1;
	}
	node = (struct radix_tree_node *)indirect_to_ptr(node);

	max_index = radix_tree_maxindex(node->height);

	ret = 0;
	while (ret < max_items) {
		unsigned int nr_found, slots_found, i;
		unsigned long next_index;

		if (cur_index > max_index)
			break;
		slots_found = __lookup_tag(node, (void ***)results + ret, cur_index,
					   max_items - ret, &next_index, tag);
		nr_found = 0;
		for (i = 0; i < slots_found; i++) {
			void *item = rcu_dereference_raw(*(((void ***)results)[ret + i]));

			if (!item)
				continue;
			results[ret + nr_found] = indirect_to_ptr(item);
			nr_found++;
		}
		ret += nr_found;
		if (next_index == 0)
			break;
		cur_index = next_index;
	}

	return ret;
}

unsigned int radix_tree_gang_lookup_tag_slot_v33(struct radix_tree_root *root, void ***results,
						 unsigned long first_index, unsigned int max_items,
						 unsigned int tag)
{
	struct radix_tree_node *node;
	unsigned long max_index;
	unsigned long cur_index = first_index;
	unsigned int ret;

	if (!root_tag_get(root, tag))
		return 0;

	node = rcu_dereference_raw(root->rnode);
	if (!node)
		return 0;

	if (!radix_tree_is_indirect_ptr(node)) {
		if (first_index > 0)
			return 0;
		results[0] = (void **)&root->rnode;
		return 1;
	}
	node = (struct radix_tree_node *)indirect_to_ptr(node);

	max_index = radix_tree_maxindex(node->height);

	ret = 0;
	while (ret < max_items) {
		unsigned int slots_found;
		unsigned long next_index;

		if (cur_index > max_index)
			break;
		slots_found = __lookup_tag(node, results + ret, cur_index, max_items - ret,
					   &next_index, tag);
		ret += slots_found;
		if (next_index == 0)
			break;
		cur_index = next_index;
	}

	return ret;
}
