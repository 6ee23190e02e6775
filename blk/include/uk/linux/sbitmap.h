/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The sbitmap API (include/linux/sbitmap.h), following the current
 * linux-block tree: per-word deferred clearing under swap_lock, per-CPU
 * allocation hints, shallow limits over the whole bitmap, and the
 * completion_cnt/wakeup_cnt wake-up scheme of sbitmap_queue.
 *
 * ukern addition: an sbitmap_queue can instead run the Linux 6.1 wake-up
 * scheme (per-waitqueue wait_cnt), chosen per queue with
 * sbitmap_queue_set_wake_scheme(); see blk/sbitmap.cc.
 *
 * Upstream: include/linux/sbitmap.h @ v6.12
 */
#ifndef UK_LINUX_SBITMAP_H
#define UK_LINUX_SBITMAP_H

#include <climits>

#include <uk/linux/atomic.h>
#include <uk/linux/bitmap.h>
#include <uk/linux/bitops.h>
#include <uk/linux/kernel.h>
#include <uk/linux/minmax.h>
#include <uk/linux/percpu.h>
#include <uk/linux/sched.h>
#include <uk/linux/slab.h>
#include <uk/linux/spinlock.h>
#include <uk/linux/wait.h>

struct seq_file;

/* One word of the bitmap. */
struct sbitmap_word {
	/* Bits in use (or freed but not yet moved back from @cleared). */
	unsigned long word;

	/* Bits freed and waiting to be cleared from @word, on their own line. */
	unsigned long cleared ____cacheline_aligned_in_smp;

	/* Makes "check @cleared, then fold it into @word" atomic. */
	raw_spinlock_t swap_lock;
} ____cacheline_aligned_in_smp;

struct sbitmap {
	/* Total bit count, summed over every word. */
	unsigned int depth;

	/* A full word holds 1 << @shift bits. */
	unsigned int shift;

	/* How many entries @map has (each one cacheline-aligned). */
	unsigned int map_nr;

	/* Hand bits out in rotation: each search resumes after the last bit taken. */
	bool round_robin;

	/* The words, @map_nr of them. */
	struct sbitmap_word *map;

	/* Per-CPU starting bit for the next allocation (NULL: no hints). */
	unsigned int __percpu *alloc_hint;
};

#define SBQ_WAIT_QUEUES 8
#define SBQ_WAKE_BATCH 8

/* Which wake-up algorithm an sbitmap_queue runs (ukern). */
enum sbq_wake_scheme {
	SBQ_WAKE_CURRENT = 0,  /* completion_cnt/wakeup_cnt (6.2+, as fixed in 6.5) */
	SBQ_WAKE_V61 = 1,      /* per-waitqueue wait_cnt, Linux 6.1 */
	SBQ_WAKE_V60 = 2,      /* per-waitqueue wait_cnt, Linux 4.x..6.0 */
	SBQ_WAKE_V61_NEXT = 3, /* 6.0 with 040b83fcecfb, without 48c033314f37 */
};

struct sbq_wait_state {
	/* Sleepers on this queue. */
	wait_queue_head_t wait;

	/* Per-queue schemes only (not SBQ_WAKE_CURRENT): counts down on frees; at zero this queue gets a wake-up. */
	atomic_t wait_cnt;
} ____cacheline_aligned_in_smp;

struct sbitmap_queue {
	/* The bitmap itself. */
	struct sbitmap sb;

	/* Number of freed bits that wake one batch of waiters. */
	unsigned int wake_batch;

	/* Index into @ws of the queue whose turn for a wake-up comes next. */
	atomic_t wake_index;

	/* SBQ_WAIT_QUEUES wait queues. */
	struct sbq_wait_state *ws;

	/* Number of registered waiters, over all @ws. */
	atomic_t ws_active;

	/* Lower bound on callers' shallow limits; wake_batch is sized from it. */
	unsigned int min_shallow_depth;

	/* Running total of frees reported to sbitmap_queue_wake_up(). */
	atomic_t completion_cnt;

	/* Running total of wake-ups handed out; grows by wake_batch at a time. */
	atomic_t wakeup_cnt;

	/* ukern: enum sbq_wake_scheme. */
	int wake_scheme;
};

/*
 * ukern test hooks, NULL in normal use. sbq_v61_wake_hook runs inside the
 * SBQ_WAKE_V61 wake-up between taking a queue's wait_cnt to zero and
 * resetting it; sbitmap_deferred_clear_hook runs inside
 * sbitmap_deferred_clear() between the xchg of ->cleared and the update of
 * ->word. sbitmap_deferred_clear_v610 selects the lockless deferred clear of
 * v5.11..v6.10 (the one that could lose a free bit) for tests.
 */
extern void (*sbq_v61_wake_hook)(struct sbitmap_queue *sbq, struct sbq_wait_state *ws);
extern void (*sbitmap_deferred_clear_hook)(struct sbitmap_word *map);
extern bool sbitmap_deferred_clear_v610;
/*
 * The enum sbq_wake_scheme that sbitmap_queue_init_node() gives new queues:
 * the parameter sbitmap.wake=v61|v60|v61next (sbitmap.deferred_clear=v610
 * sets the switch above).
 */
extern int sbitmap_queue_wake;

int sbitmap_init_node(struct sbitmap *sb, unsigned int depth, int shift, gfp_t flags, int node,
		      bool round_robin, bool alloc_hint);

/* Depth of word @index: full words, except possibly the last one. */
static inline unsigned int __map_depth(const struct sbitmap *sb, int index)
{
	if (index == sb->map_nr - 1)
		return sb->depth - (index << sb->shift);
	return 1U << sb->shift;
}

static inline void sbitmap_free(struct sbitmap *sb)
{
	free_percpu(sb->alloc_hint);
	kvfree(sb->map);
	sb->map = NULL;
}

void sbitmap_resize(struct sbitmap *sb, unsigned int depth);
int sbitmap_get(struct sbitmap *sb);
int sbitmap_get_shallow(struct sbitmap *sb, unsigned long shallow_depth);
bool sbitmap_any_bit_set(const struct sbitmap *sb);

#define SB_NR_TO_INDEX(sb, bitnr) ((bitnr) >> (sb)->shift)
#define SB_NR_TO_BIT(sb, bitnr) ((bitnr) & ((1U << (sb)->shift) - 1U))

typedef bool (*sb_for_each_fn)(struct sbitmap *, unsigned int, void *);

/*
 * Calls @fn for each busy bit, starting at @start and wrapping around, until
 * @fn returns false or every bit was looked at once.
 */
static inline void __sbitmap_for_each_set(struct sbitmap *sb, unsigned int start, sb_for_each_fn fn,
					  void *data)
{
	unsigned int index, nr, scanned = 0;

	if (start >= sb->depth)
		start = 0;
	index = SB_NR_TO_INDEX(sb, start);
	nr = SB_NR_TO_BIT(sb, start);

	while (scanned < sb->depth) {
		unsigned int depth =
			min_t(unsigned int, __map_depth(sb, index) - nr, sb->depth - scanned);
		unsigned long word;

		scanned += depth;
		word = READ_ONCE(sb->map[index].word) & ~READ_ONCE(sb->map[index].cleared);
		if (word) {
			/* @depth counts from @nr: turn it into an end bit. */
			depth += nr;
			for (;;) {
				nr = find_next_bit(&word, depth, nr);
				if (nr >= depth)
					break;
				if (!fn(sb, (index << sb->shift) + nr, data))
					return;
				nr++;
			}
		}
		nr = 0;
		if (++index >= sb->map_nr)
			index = 0;
	}
}

static inline void sbitmap_for_each_set (struct sbitmap *sb, sb_for_each_fn fn, void *data)
{
	__sbitmap_for_each_set(sb, 0, fn, data);
}

static inline unsigned long *__sbitmap_word(struct sbitmap *sb, unsigned int bitnr)
{
	return &sb->map[SB_NR_TO_INDEX(sb, bitnr)].word;
}

static inline void sbitmap_set_bit(struct sbitmap *sb, unsigned int bitnr)
{
	set_bit(SB_NR_TO_BIT(sb, bitnr), __sbitmap_word(sb, bitnr));
}

static inline void sbitmap_clear_bit(struct sbitmap *sb, unsigned int bitnr)
{
	clear_bit(SB_NR_TO_BIT(sb, bitnr), __sbitmap_word(sb, bitnr));
}

/* Frees a bit lazily: it is moved back to ->word by a later allocation. */
static inline void sbitmap_deferred_clear_bit(struct sbitmap *sb, unsigned int bitnr)
{
	unsigned long *addr = &sb->map[SB_NR_TO_INDEX(sb, bitnr)].cleared;

	/* The caller's smp_mb__before_atomic(), for TSan; pairs with the
	 * uk_tsan_acquire() after the xchg in sbitmap_deferred_clear(). */
	uk_tsan_release(addr);
	set_bit(SB_NR_TO_BIT(sb, bitnr), addr);
}

/* Frees @bitnr and makes it this CPU's next starting point. */
static inline void sbitmap_put(struct sbitmap *sb, unsigned int bitnr)
{
	sbitmap_deferred_clear_bit(sb, bitnr);

	if (likely(sb->alloc_hint && !sb->round_robin && bitnr < sb->depth))
		WRITE_ONCE(*raw_cpu_ptr(sb->alloc_hint), bitnr);
}

static inline int sbitmap_test_bit(struct sbitmap *sb, unsigned int bitnr)
{
	return test_bit(SB_NR_TO_BIT(sb, bitnr), __sbitmap_word(sb, bitnr));
}

/* Default shift: spread small bitmaps over at least four words. */
static inline int sbitmap_calculate_shift(unsigned int depth)
{
	int shift = ilog2(BITS_PER_LONG);

	if (depth >= 4) {
		while ((4U << shift) > depth)
			shift--;
	}
	return shift;
}

void sbitmap_show(struct sbitmap *sb, struct seq_file *m);
unsigned int sbitmap_weight(const struct sbitmap *sb);
void sbitmap_bitmap_show(struct sbitmap *sb, struct seq_file *m);

int sbitmap_queue_init_node(struct sbitmap_queue *sbq, unsigned int depth, int shift,
			    bool round_robin, gfp_t flags, int node);

static inline void sbitmap_queue_free(struct sbitmap_queue *sbq)
{
	kfree(sbq->ws);
	sbitmap_free(&sbq->sb);
}

/* ukern: switch @sbq to another wake-up scheme (no waiters may be queued). */
void sbitmap_queue_set_wake_scheme(struct sbitmap_queue *sbq, enum sbq_wake_scheme scheme);

void sbitmap_queue_recalculate_wake_batch(struct sbitmap_queue *sbq, unsigned int users);
void sbitmap_queue_resize(struct sbitmap_queue *sbq, unsigned int depth);
int __sbitmap_queue_get(struct sbitmap_queue *sbq);
unsigned long __sbitmap_queue_get_batch(struct sbitmap_queue *sbq, int nr_tags,
					unsigned int *offset);
int sbitmap_queue_get_shallow(struct sbitmap_queue *sbq, unsigned int shallow_depth);

/* Allocates a bit and tells the caller which CPU to free it on. */
static inline int sbitmap_queue_get(struct sbitmap_queue *sbq, unsigned int *cpu)
{
	int nr;

	*cpu = get_cpu();
	nr = __sbitmap_queue_get(sbq);
	put_cpu();
	return nr;
}

void sbitmap_queue_min_shallow_depth(struct sbitmap_queue *sbq, unsigned int min_shallow_depth);
void sbitmap_queue_clear(struct sbitmap_queue *sbq, unsigned int nr, unsigned int cpu);
void sbitmap_queue_clear_batch(struct sbitmap_queue *sbq, int offset, int *tags, int nr_tags);

static inline int sbq_index_inc(int index)
{
	return (index + 1) & (SBQ_WAIT_QUEUES - 1);
}

/* Advances *@index unless somebody else already did. */
static inline void sbq_index_atomic_inc(atomic_t *index)
{
	int old = atomic_read(index);
	int new_index = sbq_index_inc(old);

	atomic_cmpxchg(index, old, new_index);
}

/* The wait queue for the next sleeper that uses *@wait_index. */
static inline struct sbq_wait_state *sbq_wait_ptr(struct sbitmap_queue *sbq, atomic_t *wait_index)
{
	struct sbq_wait_state *ws;

	ws = &sbq->ws[atomic_read(wait_index)];
	sbq_index_atomic_inc(wait_index);
	return ws;
}

void sbitmap_queue_wake_all(struct sbitmap_queue *sbq);
void sbitmap_queue_wake_up(struct sbitmap_queue *sbq, int nr);
void sbitmap_queue_show(struct sbitmap_queue *sbq, struct seq_file *m);

struct sbq_wait {
	struct sbitmap_queue *sbq; /* non-NULL: counted in sbq->ws_active */
	struct wait_queue_entry wait;
};

#define DEFINE_SBQ_WAIT(name) \
	struct sbq_wait name = {                                                     \
		.sbq = NULL,                                                         \
		.wait = {                                                            \
			.flags = 0,                                                  \
			.private_ = get_current(),                                          \
			.func = autoremove_wake_function,                            \
			.entry = LIST_HEAD_INIT((name).wait.entry),                  \
		},                                                                   \
	}

void sbitmap_prepare_to_wait(struct sbitmap_queue *sbq, struct sbq_wait_state *ws,
			     struct sbq_wait *sbq_wait, int state);
void sbitmap_finish_wait(struct sbitmap_queue *sbq, struct sbq_wait_state *ws,
			 struct sbq_wait *sbq_wait);
void sbitmap_add_wait_queue(struct sbitmap_queue *sbq, struct sbq_wait_state *ws,
			    struct sbq_wait *sbq_wait);
void sbitmap_del_wait_queue(struct sbq_wait *sbq_wait);

#endif /* UK_LINUX_SBITMAP_H */
