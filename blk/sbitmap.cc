// SPDX-License-Identifier: GPL-2.0-only
/*
 * lib/sbitmap.c: scalable bitmaps and sbitmap_queue.
 *
 * Several wake-up schemes live here side by side. SBQ_WAKE_CURRENT is
 * today's (one completion counter and one wake-up counter per queue, batches
 * spread over the wait queues). The others count frees per wait queue
 * (wait_cnt) as older kernels did, in functions of their own so the current
 * code reads as upstream: SBQ_WAKE_V61 is Linux 6.1 (*_v61), SBQ_WAKE_V60 is
 * Linux 4.x..6.0 (*_v60), and SBQ_WAKE_V61_NEXT is the 6.0 code with
 * 040b83fcecfb and without 48c033314f37, as it stood on the way to 6.1
 * (*_v61next).
 *
 * Upstream: lib/sbitmap.c @ v6.12
 */
#define KBUILD_MODNAME "sbitmap"

#include <random>

#include <uk/linux/math64.h>
#include <uk/linux/moduleparam.h>
#include <uk/linux/sbitmap.h>
#include <uk/linux/seq_file.h>

void (*sbq_v61_wake_hook)(struct sbitmap_queue *sbq, struct sbq_wait_state *ws);
void (*sbitmap_deferred_clear_hook)(struct sbitmap_word *map);
bool sbitmap_deferred_clear_v610;
int sbitmap_queue_wake;

/*
 * The era switches as parameters, "sbitmap.wake=v61" (docs/params.md). The
 * names are in the order of enum sbq_wake_scheme.
 */
static const char *const sbitmap_wake_names[] = { "current", "v61", "v60", "v61next" };
module_param_enum(wake, sbitmap_queue_wake, sbitmap_wake_names, 0644);
MODULE_PARM_DESC(wake, "Wake-up scheme of every sbitmap_queue initialized after: current (6.2+), "
		       "v61 (6.1's per-queue wait_cnt), v60 (4.x-6.0, before 040b83fcecfb), "
		       "v61next (040b83fcecfb without 48c033314f37)");

static const char *const sbitmap_deferred_clear_names[] = { "current", "v610" };
module_param_enum(deferred_clear, sbitmap_deferred_clear_v610, sbitmap_deferred_clear_names, 0644);
MODULE_PARM_DESC(deferred_clear,
		 "sbitmap_deferred_clear(): current (6.11+), v610 (lockless, 5.11-6.10)");

/* Uniform in [0, ceil): what <linux/random.h> gives the kernel. */
static u32 get_random_u32_below(u32 ceil)
{
	static thread_local std::minstd_rand rng{ std::random_device{}() };

	return std::uniform_int_distribution<u32>(0, ceil - 1)(rng);
}

static int init_alloc_hint(struct sbitmap *sb, gfp_t flags)
{
	unsigned int depth = sb->depth;

	sb->alloc_hint = alloc_percpu_gfp(unsigned int, flags);
	if (!sb->alloc_hint)
		return -ENOMEM;

	if (depth && !sb->round_robin) {
		int i;

		for_each_possible_cpu (i)
			*per_cpu_ptr(sb->alloc_hint, i) = get_random_u32_below(depth);
	}
	return 0;
}

static inline unsigned int update_alloc_hint_before_get(struct sbitmap *sb, unsigned int depth)
{
	unsigned int hint;

	hint = this_cpu_read(*sb->alloc_hint);
	if (unlikely(hint >= depth)) {
		/* The map shrank under this CPU's hint: pick a new spot. */
		hint = depth ? get_random_u32_below(depth) : 0;
		this_cpu_write(*sb->alloc_hint, hint);
	}
	return hint;
}

static inline void update_alloc_hint_after_get(struct sbitmap *sb, unsigned int depth,
					       unsigned int hint, unsigned int nr)
{
	if (nr == (unsigned int)-1) {
		/* Nothing free: start from the beginning next time. */
		this_cpu_write(*sb->alloc_hint, 0);
	} else if (nr == hint || unlikely(sb->round_robin)) {
		/*
		 * The hint was used: step past it. The last bit is never
		 * a starting hint (upstream quirk, kept).
		 */
		hint = nr + 1;
		if (hint >= depth - 1)
			hint = 0;
		this_cpu_write(*sb->alloc_hint, hint);
	}
	/* Otherwise keep the hint: this CPU stays on its cacheline. */
}

/* v5.11..v6.10: no lock, so a racing caller can see ->cleared empty too early. */
static bool sbitmap_deferred_clear_v610_impl(struct sbitmap_word *map)
{
	unsigned long mask;

	if (!READ_ONCE(map->cleared))
		return false;

	mask = xchg(&map->cleared, 0);
	uk_tsan_acquire(&map->cleared); /* pairs with sbitmap_deferred_clear_bit() */
	if (unlikely(sbitmap_deferred_clear_hook))
		sbitmap_deferred_clear_hook(map);
	uk_tsan_release(&map->word); /* pairs with __sbitmap_get_word()'s acquire */
	atomic_long_andnot(mask, (atomic_long_t *)&map->word);
	return true;
}

/*
 * Folds ->cleared back into ->word. Returns true when the caller should
 * search the word again. The check of ->cleared and the update of both
 * words happen under swap_lock, so a caller that finds ->cleared empty
 * also sees the bits another caller just moved (the v6.11 fix).
 */
static inline bool sbitmap_deferred_clear(struct sbitmap_word *map, unsigned int depth,
					  unsigned int alloc_hint, bool wrap)
{
	unsigned long mask, word_mask;

	if (unlikely(sbitmap_deferred_clear_v610))
		return sbitmap_deferred_clear_v610_impl(map);

	guard(raw_spinlock_irqsave)(&map->swap_lock);

	if (!READ_ONCE(map->cleared)) {
		if (depth == 0)
			return false;

		word_mask = (~0UL) >> (BITS_PER_LONG - depth);
		/*
		 * Nothing deferred: retry only if there is a free bit the
		 * caller can reach. Without wrap it cannot go below
		 * @alloc_hint, so the bits below it do not count (else it
		 * would spin forever).
		 */
		if (!wrap && alloc_hint)
			word_mask &= ~((1UL << alloc_hint) - 1);

		return (READ_ONCE(map->word) & word_mask) != word_mask;
	}

	/* Take the freed bits, leaving ->cleared empty... */
	mask = xchg(&map->cleared, 0);
	/* pairs with the release in sbitmap_deferred_clear_bit() */
	uk_tsan_acquire(&map->cleared);
	if (unlikely(sbitmap_deferred_clear_hook))
		sbitmap_deferred_clear_hook(map);

	/*
	 * ...and release them in ->word. The release pairs with the acquire
	 * of test_and_set_bit_lock() in __sbitmap_get_word().
	 */
	uk_tsan_release(&map->word);
	atomic_long_andnot(mask, (atomic_long_t *)&map->word);
	BUILD_BUG_ON(sizeof(atomic_long_t) != sizeof(map->word));
	return true;
}

int sbitmap_init_node(struct sbitmap *sb, unsigned int depth, int shift, gfp_t flags, int node,
		      bool round_robin, bool alloc_hint)
{
	unsigned int bits_per_word;
	unsigned int i;

	if (shift < 0)
		shift = sbitmap_calculate_shift(depth);

	if (shift >= BITS_PER_LONG)
		return -EINVAL;
	bits_per_word = 1U << shift;
	if (bits_per_word > BITS_PER_LONG)
		return -EINVAL;

	sb->shift = shift;
	sb->depth = depth;
	sb->map_nr = DIV_ROUND_UP(sb->depth, bits_per_word);
	sb->round_robin = round_robin;

	if (depth == 0) {
		sb->map = NULL;
		return 0;
	}

	if (alloc_hint) {
		if (init_alloc_hint(sb, flags))
			return -ENOMEM;
	} else {
		sb->alloc_hint = NULL;
	}

	sb->map = kvzalloc(sb->map_nr * sizeof(*sb->map), flags);
	if (!sb->map) {
		free_percpu(sb->alloc_hint);
		sb->alloc_hint = NULL;
		return -ENOMEM;
	}

	for (i = 0; i < sb->map_nr; i++)
		raw_spin_lock_init(&sb->map[i].swap_lock);

	return 0;
}

void sbitmap_resize(struct sbitmap *sb, unsigned int depth)
{
	unsigned int bits_per_word = 1U << sb->shift;
	unsigned int i;

	/* Flush every deferred clear before the geometry changes. */
	for (i = 0; i < sb->map_nr; i++)
		sbitmap_deferred_clear(&sb->map[i], 0, 0, 0);

	sb->depth = depth;
	sb->map_nr = DIV_ROUND_UP(sb->depth, bits_per_word);
}

/*
 * Finds and takes a zero bit in one word, starting at @hint. With @wrap the
 * search goes round to bit 0 once. A lost race moves the start past the
 * contended bit (wrapping to 0 at depth - 1, like the hints do).
 */
static __always_inline int __sbitmap_get_word(unsigned long *word, unsigned long depth,
					      unsigned int hint, bool wrap)
{
	int nr;

	/* Starting at 0 already covers the whole word. */
	wrap = wrap && hint;

	for (;;) {
		nr = find_next_zero_bit(word, depth, hint);
		if (unlikely(nr >= (int)depth)) {
			if (hint && wrap) {
				hint = 0;
				continue;
			}
			return -1;
		}

		/*
		 * Acquire: pairs with smp_mb__before_atomic() in
		 * sbitmap_queue_clear(), so the previous owner's accesses to
		 * what the bit stands for happen before ours.
		 */
		if (!test_and_set_bit_lock(nr, word))
			break;

		hint = nr + 1;
		if (hint >= depth - 1)
			hint = 0;
	}
	return nr;
}

static __always_inline int sbitmap_find_bit_in_word(struct sbitmap_word *map, unsigned int depth,
						    unsigned int alloc_hint, bool wrap)
{
	int nr;

	do {
		nr = __sbitmap_get_word(&map->word, depth, alloc_hint, wrap);
		if (nr != -1)
			break;
		if (!sbitmap_deferred_clear(map, depth, alloc_hint, wrap))
			break;
	} while (1);

	return nr;
}

/*
 * Takes up to @nr_tags consecutive zero bits from the first free one on.
 * Returns the mask (relative to *@nr) of the bits this caller set: bits of
 * the run that someone else owns are missing, so it can be partial.
 */
static unsigned long sbitmap_find_bits_in_word(struct sbitmap_word *map, unsigned int map_depth,
					       int nr_tags, unsigned long *nr)
{
	unsigned long val, bit_nr, get_mask;

	for (;;) {
		val = READ_ONCE(map->word);
		/*
		 * Upstream's "full word" test: it compares against
		 * 2^(depth-1) - 1, not 2^depth - 1 (quirk, kept).
		 */
		if (val == (1UL << (map_depth - 1)) - 1) {
			if (!sbitmap_deferred_clear(map, 0, 0, 0))
				return 0;
			continue;
		}

		bit_nr = find_first_zero_bit(&val, map_depth);
		if (bit_nr + nr_tags <= map_depth)
			break;

		if (!sbitmap_deferred_clear(map, 0, 0, 0))
			return 0;
	}

	get_mask = ((1UL << nr_tags) - 1) << bit_nr;
	/* Fully ordered on success: the acquire side, as test_and_set_bit_lock(). */
	while (!atomic_long_try_cmpxchg((atomic_long_t *)&map->word, (long *)&val,
					(long)(get_mask | val)))
		;
	get_mask = (get_mask & ~val) >> bit_nr;

	*nr = bit_nr;
	return get_mask;
}

/* Depth of word @index under a limit of @shallow_depth over the whole map. */
static unsigned int __map_depth_with_shallow(const struct sbitmap *sb, int index,
					     unsigned int shallow_depth)
{
	u64 shallow_word_depth;
	unsigned int word_depth, reminder;

	word_depth = __map_depth(sb, index);
	if (shallow_depth >= sb->depth)
		return word_depth;

	shallow_word_depth = word_depth * shallow_depth;
	reminder = do_div(shallow_word_depth, sb->depth);

	/* Hand the rounding remainder out to the first words. */
	if (reminder >= (unsigned int)(index + 1) * word_depth)
		shallow_word_depth++;

	return (unsigned int)shallow_word_depth;
}

/*
 * Inlined into both callers, with the word search below it: with
 * __sbitmap_get()'s constant shallow depth the per-word depth needs no
 * division, and the common path (first word, first try) has no call.
 */
static __always_inline int sbitmap_find_bit(struct sbitmap *sb, unsigned int shallow_depth,
					    unsigned int index, unsigned int alloc_hint, bool wrap)
{
	unsigned int i;
	int nr = -1;

	for (i = 0; i < sb->map_nr; i++) {
		unsigned int depth = __map_depth_with_shallow(sb, index, shallow_depth);

		if (depth)
			nr = sbitmap_find_bit_in_word(&sb->map[index], depth, alloc_hint, wrap);
		if (nr != -1) {
			nr += index << sb->shift;
			break;
		}

		/* Later words are searched from their first bit. */
		alloc_hint = 0;
		if (++index >= sb->map_nr)
			index = 0;
	}
	return nr;
}

static int __sbitmap_get(struct sbitmap *sb, unsigned int alloc_hint)
{
	unsigned int index;

	index = SB_NR_TO_INDEX(sb, alloc_hint);

	/*
	 * Round-robin resumes right after the last bit; otherwise the hint
	 * only picks the word, and each word is searched from bit 0.
	 */
	if (sb->round_robin)
		alloc_hint = SB_NR_TO_BIT(sb, alloc_hint);
	else
		alloc_hint = 0;

	return sbitmap_find_bit(sb, UINT_MAX, index, alloc_hint, !sb->round_robin);
}

int sbitmap_get(struct sbitmap *sb)
{
	int nr;
	unsigned int hint, depth;

	if (WARN_ON_ONCE(unlikely(!sb->alloc_hint)))
		return -1;

	depth = READ_ONCE(sb->depth);
	hint = update_alloc_hint_before_get(sb, depth);
	nr = __sbitmap_get(sb, hint);
	update_alloc_hint_after_get(sb, depth, hint, nr);

	return nr;
}

static int __sbitmap_get_shallow(struct sbitmap *sb, unsigned int alloc_hint,
				 unsigned long shallow_depth)
{
	unsigned int index;

	index = SB_NR_TO_INDEX(sb, alloc_hint);
	alloc_hint = SB_NR_TO_BIT(sb, alloc_hint);

	return sbitmap_find_bit(sb, min_t(unsigned long, shallow_depth, UINT_MAX), index,
				alloc_hint, true);
}

/*
 * Like sbitmap_get(), but uses at most @shallow_depth bits of the whole
 * bitmap, spread proportionally over the words.
 */
int sbitmap_get_shallow(struct sbitmap *sb, unsigned long shallow_depth)
{
	int nr;
	unsigned int hint, depth;

	if (WARN_ON_ONCE(unlikely(!sb->alloc_hint)))
		return -1;

	depth = READ_ONCE(sb->depth);
	hint = update_alloc_hint_before_get(sb, depth);
	nr = __sbitmap_get_shallow(sb, hint, shallow_depth);
	update_alloc_hint_after_get(sb, depth, hint, nr);

	return nr;
}

bool sbitmap_any_bit_set(const struct sbitmap *sb)
{
	unsigned int i;

	for (i = 0; i < sb->map_nr; i++) {
		if (READ_ONCE(sb->map[i].word) & ~READ_ONCE(sb->map[i].cleared))
			return true;
	}
	return false;
}

static unsigned int __sbitmap_weight(const struct sbitmap *sb, bool set)
{
	unsigned int i, weight = 0;

	for (i = 0; i < sb->map_nr; i++) {
		const struct sbitmap_word *word = &sb->map[i];
		unsigned int word_depth = __map_depth(sb, i);
		unsigned long w = set ? READ_ONCE(word->word) : READ_ONCE(word->cleared);

		weight += bitmap_weight(&w, word_depth);
	}
	return weight;
}

static unsigned int sbitmap_cleared(const struct sbitmap *sb)
{
	return __sbitmap_weight(sb, false);
}

unsigned int sbitmap_weight(const struct sbitmap *sb)
{
	return __sbitmap_weight(sb, true) - sbitmap_cleared(sb);
}

void sbitmap_show(struct sbitmap *sb, struct seq_file *m)
{
	seq_printf(m, "depth=%u\n", sb->depth);
	seq_printf(m, "busy=%u\n", sbitmap_weight(sb));
	seq_printf(m, "cleared=%u\n", sbitmap_cleared(sb));
	seq_printf(m, "bits_per_word=%u\n", 1U << sb->shift);
	seq_printf(m, "map_nr=%u\n", sb->map_nr);
}

static inline void emit_byte(struct seq_file *m, unsigned int offset, u8 byte)
{
	if ((offset & 0xf) == 0) {
		if (offset != 0)
			seq_putc(m, '\n');
		seq_printf(m, "%08x:", offset);
	}
	if ((offset & 0x1) == 0)
		seq_putc(m, ' ');
	seq_printf(m, "%02x", byte);
}

/* Hex dump of the busy bits, packed across words into bytes. */
void sbitmap_bitmap_show(struct sbitmap *sb, struct seq_file *m)
{
	u8 byte = 0;
	unsigned int byte_bits = 0;
	unsigned int offset = 0;
	int i;

	for (i = 0; i < sb->map_nr; i++) {
		unsigned long word = READ_ONCE(sb->map[i].word);
		unsigned long cleared = READ_ONCE(sb->map[i].cleared);
		unsigned int word_bits = __map_depth(sb, i);

		word &= ~cleared;

		while (word_bits > 0) {
			unsigned int bits = min(8 - byte_bits, word_bits);

			byte |= (word & (BIT(bits) - 1)) << byte_bits;
			byte_bits += bits;
			if (byte_bits == 8) {
				emit_byte(m, offset, byte);
				byte = 0;
				byte_bits = 0;
				offset++;
			}
			word >>= bits;
			word_bits -= bits;
		}
	}
	if (byte_bits) {
		emit_byte(m, offset, byte);
		offset++;
	}
	if (offset)
		seq_putc(m, '\n');
}

static unsigned int sbq_calc_wake_batch(struct sbitmap_queue *sbq, unsigned int depth)
{
	return clamp_t(unsigned int, min(depth, sbq->min_shallow_depth) / SBQ_WAIT_QUEUES, 1,
		       SBQ_WAKE_BATCH);
}

/*
 * v6.1 (v4.17..v6.16): shallow-aware per word. Each word contributes at
 * most min(bits per word, min_shallow_depth) usable bits.
 */
static unsigned int sbq_calc_wake_batch_v61(struct sbitmap_queue *sbq, unsigned int depth)
{
	unsigned int wake_batch;
	unsigned int shallow_depth;

	shallow_depth = min(1U << sbq->sb.shift, sbq->min_shallow_depth);
	depth = ((depth >> sbq->sb.shift) * shallow_depth +
		 min(depth & ((1U << sbq->sb.shift) - 1), shallow_depth));
	wake_batch = clamp_t(unsigned int, depth / SBQ_WAIT_QUEUES, 1, SBQ_WAKE_BATCH);

	return wake_batch;
}

int sbitmap_queue_init_node(struct sbitmap_queue *sbq, unsigned int depth, int shift,
			    bool round_robin, gfp_t flags, int node)
{
	int ret;
	int i;

	ret = sbitmap_init_node(&sbq->sb, depth, shift, flags, node, round_robin, true);
	if (ret)
		return ret;

	sbq->wake_scheme = SBQ_WAKE_CURRENT;
	sbq->min_shallow_depth = UINT_MAX;
	sbq->wake_batch = sbq_calc_wake_batch(sbq, depth);
	atomic_set(&sbq->wake_index, 0);
	atomic_set(&sbq->ws_active, 0);
	atomic_set(&sbq->completion_cnt, 0);
	atomic_set(&sbq->wakeup_cnt, 0);

	sbq->ws = kzalloc_node(SBQ_WAIT_QUEUES * sizeof(*sbq->ws), flags, node);
	if (!sbq->ws) {
		sbitmap_free(&sbq->sb);
		return -ENOMEM;
	}

	for (i = 0; i < SBQ_WAIT_QUEUES; i++) {
		init_waitqueue_head(&sbq->ws[i].wait);
		atomic_set(&sbq->ws[i].wait_cnt, sbq->wake_batch);
	}

	if (unlikely(sbitmap_queue_wake != SBQ_WAKE_CURRENT))
		sbitmap_queue_set_wake_scheme(sbq, (enum sbq_wake_scheme)sbitmap_queue_wake);
	return 0;
}

void sbitmap_queue_set_wake_scheme(struct sbitmap_queue *sbq, enum sbq_wake_scheme scheme)
{
	int i;

	WARN_ON_ONCE(atomic_read(&sbq->ws_active));
	sbq->wake_scheme = scheme;
	/* Every per-queue wait_cnt scheme sizes its batches as 6.1 did. */
	if (scheme != SBQ_WAKE_CURRENT)
		sbq->wake_batch = sbq_calc_wake_batch_v61(sbq, sbq->sb.depth);
	else
		sbq->wake_batch = sbq_calc_wake_batch(sbq, sbq->sb.depth);
	for (i = 0; i < SBQ_WAIT_QUEUES; i++)
		atomic_set(&sbq->ws[i].wait_cnt, sbq->wake_batch);
	atomic_set(&sbq->completion_cnt, 0);
	atomic_set(&sbq->wakeup_cnt, 0);
	atomic_set(&sbq->wake_index, 0);
}

/*
 * v6.1: a new batch size also forces every queue's count to 1, so a shrink
 * cannot leave a queue waiting for more frees than can ever happen.
 */
static void __sbitmap_queue_update_wake_batch_v61(struct sbitmap_queue *sbq,
						  unsigned int wake_batch)
{
	int i;

	if (sbq->wake_batch != wake_batch) {
		WRITE_ONCE(sbq->wake_batch, wake_batch);
		/*
		 * Publish the new batch before the counts change: pairs with
		 * smp_mb__before_atomic() in __sbq_wake_up_v61().
		 */
		smp_mb();
		for (i = 0; i < SBQ_WAIT_QUEUES; i++) {
			struct sbq_wait_state *ws = &sbq->ws[i];

			atomic_set(&ws->wait_cnt, 1);
		}
	}
}

static void sbitmap_queue_update_wake_batch(struct sbitmap_queue *sbq, unsigned int depth)
{
	unsigned int wake_batch;

	if (sbq->wake_scheme != SBQ_WAKE_CURRENT) {
		__sbitmap_queue_update_wake_batch_v61(sbq, sbq_calc_wake_batch_v61(sbq, depth));
		return;
	}

	wake_batch = sbq_calc_wake_batch(sbq, depth);
	if (sbq->wake_batch != wake_batch)
		WRITE_ONCE(sbq->wake_batch, wake_batch);
}

void sbitmap_queue_recalculate_wake_batch(struct sbitmap_queue *sbq, unsigned int users)
{
	unsigned int wake_batch;
	unsigned int depth = (sbq->sb.depth + users - 1) / users;

	if (sbq->wake_scheme != SBQ_WAKE_CURRENT) {
		/* v6.1 kept batches of at least 4 on maps of 32 bits or more. */
		unsigned int min_batch = sbq->sb.depth >= (4 * SBQ_WAIT_QUEUES) ? 4 : 1;

		wake_batch = clamp_val(depth / SBQ_WAIT_QUEUES, min_batch, SBQ_WAKE_BATCH);
		__sbitmap_queue_update_wake_batch_v61(sbq, wake_batch);
		return;
	}

	wake_batch = clamp_val(depth / SBQ_WAIT_QUEUES, 1, SBQ_WAKE_BATCH);
	WRITE_ONCE(sbq->wake_batch, wake_batch);
}

void sbitmap_queue_resize(struct sbitmap_queue *sbq, unsigned int depth)
{
	sbitmap_queue_update_wake_batch(sbq, depth);
	sbitmap_resize(&sbq->sb, depth);
}

int __sbitmap_queue_get(struct sbitmap_queue *sbq)
{
	return sbitmap_get(&sbq->sb);
}

unsigned long __sbitmap_queue_get_batch(struct sbitmap_queue *sbq, int nr_tags,
					unsigned int *offset)
{
	struct sbitmap *sb = &sbq->sb;
	unsigned int hint, depth;
	unsigned long index;
	unsigned int i;

	if (unlikely(sb->round_robin))
		return 0;

	depth = READ_ONCE(sb->depth);
	hint = update_alloc_hint_before_get(sb, depth);

	index = SB_NR_TO_INDEX(sb, hint);

	for (i = 0; i < sb->map_nr; i++) {
		struct sbitmap_word *map = &sb->map[index];
		unsigned long get_mask, nr;
		unsigned int map_depth = __map_depth(sb, index);

		get_mask = sbitmap_find_bits_in_word(map, map_depth, nr_tags, &nr);
		if (get_mask) {
			*offset = nr + (index << sb->shift);
			update_alloc_hint_after_get(sb, depth, hint, *offset + nr_tags - 1);
			return get_mask;
		}

		if (++index >= sb->map_nr)
			index = 0;
	}

	return 0;
}

int sbitmap_queue_get_shallow(struct sbitmap_queue *sbq, unsigned int shallow_depth)
{
	/* The caller must have declared this limit for wake_batch's sake. */
	WARN_ON_ONCE(shallow_depth < sbq->min_shallow_depth);

	return sbitmap_get_shallow(&sbq->sb, shallow_depth);
}

void sbitmap_queue_min_shallow_depth(struct sbitmap_queue *sbq, unsigned int min_shallow_depth)
{
	sbq->min_shallow_depth = min_shallow_depth;
	sbitmap_queue_update_wake_batch(sbq, sbq->sb.depth);
}

/* Wakes up to @nr exclusive waiters, going round the queues. */
static void __sbitmap_queue_wake_up(struct sbitmap_queue *sbq, int nr)
{
	int i, wake_index, woken;

	if (!atomic_read(&sbq->ws_active))
		return;

	wake_index = atomic_read(&sbq->wake_index);
	for (i = 0; i < SBQ_WAIT_QUEUES; i++) {
		struct sbq_wait_state *ws = &sbq->ws[wake_index];

		/*
		 * Advance the index before examining this queue, for fairness:
		 * the next batch starts on another queue even if this one still
		 * has sleepers.
		 */
		wake_index = sbq_index_inc(wake_index);

		if (waitqueue_active(&ws->wait)) {
			woken = wake_up_nr(&ws->wait, nr);
			if (woken == nr)
				break;
			nr -= woken;
		}
	}

	if (wake_index != atomic_read(&sbq->wake_index))
		atomic_set(&sbq->wake_index, wake_index);
}

/* ---- Linux 6.1 wake-up (SBQ_WAKE_V61) ---- */

/* The first queue, from wake_index on, with sleepers and a non-zero count. */
static struct sbq_wait_state *sbq_wake_ptr_v61(struct sbitmap_queue *sbq)
{
	int i, wake_index;

	if (!atomic_read(&sbq->ws_active))
		return NULL;

	wake_index = atomic_read(&sbq->wake_index);
	for (i = 0; i < SBQ_WAIT_QUEUES; i++) {
		struct sbq_wait_state *ws = &sbq->ws[wake_index];

		/*
		 * A count of 0 means another context is between taking it
		 * to zero and resetting it: skip the queue (30514bd2dd4e).
		 */
		if (waitqueue_active(&ws->wait) && atomic_read(&ws->wait_cnt)) {
			if (wake_index != atomic_read(&sbq->wake_index))
				atomic_set(&sbq->wake_index, wake_index);
			return ws;
		}

		wake_index = sbq_index_inc(wake_index);
	}

	return NULL;
}

/*
 * Charges *@nr frees to one queue. Returns true when the caller should call
 * again (credits left, or this attempt woke nobody).
 */
static bool __sbq_wake_up_v61(struct sbitmap_queue *sbq, int *nr)
{
	struct sbq_wait_state *ws;
	unsigned int wake_batch;
	int wait_cnt, cur, sub;
	bool ret;

	if (*nr <= 0)
		return false;

	ws = sbq_wake_ptr_v61(sbq);
	if (!ws)
		return false;

	/* Step A: take up to *nr off the count. */
	cur = atomic_read(&ws->wait_cnt);
	do {
		/* Someone else is between steps A and B here: try elsewhere. */
		if (cur == 0)
			return true;
		sub = min(*nr, cur);
		wait_cnt = cur - sub;
	} while (!atomic_try_cmpxchg(&ws->wait_cnt, &cur, wait_cnt));

	/*
	 * Count still above zero: this call is done, unless the queue turned
	 * out to have no sleepers, in which case the credit was wasted and the
	 * caller has to go round again.
	 */
	if (wait_cnt > 0)
		return !waitqueue_active(&ws->wait);

	*nr -= sub;

	/*
	 * We took the count to zero, so resetting it is our job whatever the
	 * wake-up below achieves; note now whether anyone was there to wake
	 * (if not, the caller retries).
	 */
	ret = !waitqueue_active(&ws->wait);
	wake_batch = READ_ONCE(sbq->wake_batch);

	/*
	 * Waking before the reset keeps the count at 0 meanwhile, so
	 * concurrent callers skip this queue rather than charge it after its
	 * sleepers are gone.
	 */
	wake_up_nr(&ws->wait, wake_batch);

	/* ukern: a nested completion lands here in the lost-wake-up test. */
	if (unlikely(sbq_v61_wake_hook))
		sbq_v61_wake_hook(sbq, ws);

	/*
	 * Pairs with smp_mb() in __sbitmap_queue_update_wake_batch_v61(): a
	 * resized batch is seen before the count is reset. Also orders the
	 * wake-up before the index and count updates other callers read.
	 */
	smp_mb__before_atomic();

	/* Step B: advance the index, then reset this queue's count. */
	sbq_index_atomic_inc(&sbq->wake_index);
	atomic_set(&ws->wait_cnt, wake_batch);

	return ret || *nr;
}

/* ukern: out of line, to keep the v6.1 code out of today's fast path. */
static noinline void sbitmap_queue_wake_up_v61(struct sbitmap_queue *sbq, int nr)
{
	while (__sbq_wake_up_v61(sbq, &nr))
		;
}

/* ---- Linux 6.0 wake-up (SBQ_WAKE_V60) and its first fix (SBQ_WAKE_V61_NEXT) ---- */

/*
 * v6.0: the first queue, from wake_index on, that has sleepers (6.1 also
 * skips queues whose count is 0; 6.0 does not look at the count).
 */
static struct sbq_wait_state *sbq_wake_ptr_v60(struct sbitmap_queue *sbq)
{
	int i, wake_index;

	if (!atomic_read(&sbq->ws_active))
		return NULL;

	wake_index = atomic_read(&sbq->wake_index);
	for (i = 0; i < SBQ_WAIT_QUEUES; i++) {
		struct sbq_wait_state *ws = &sbq->ws[wake_index];

		if (waitqueue_active(&ws->wait)) {
			if (wake_index != atomic_read(&sbq->wake_index))
				atomic_set(&sbq->wake_index, wake_index);
			return ws;
		}

		wake_index = sbq_index_inc(wake_index);
	}

	return NULL;
}

/*
 * v6.0: charges one free to the queue sbq_wake_ptr_v60() picks. Returns true
 * when the caller should call again.
 *
 * The free that takes the count to zero or below puts the batch back with
 * a compare-and-exchange; the winner moves the index on, then wakes the
 * queue it picked, the loser goes round again. Between the reset and the
 * wake-up the queue can be charged again and woken by somebody else, and
 * the index moved twice: the winner's wake-up then goes to a queue that
 * may have nobody left (fixed by 040b83fcecfb).
 */
static bool __sbq_wake_up_v60(struct sbitmap_queue *sbq)
{
	struct sbq_wait_state *ws;
	unsigned int wake_batch;
	int wait_cnt;

	ws = sbq_wake_ptr_v60(sbq);
	if (!ws)
		return false;

	wait_cnt = atomic_dec_return(&ws->wait_cnt);
	if (wait_cnt <= 0) {
		int ret;

		wake_batch = READ_ONCE(sbq->wake_batch);

		/*
		 * Read the batch before putting it back: pairs with smp_mb()
		 * in __sbitmap_queue_update_wake_batch_v61().
		 */
		smp_mb__before_atomic();

		/* Of concurrent callers, only one resets; the rest retry. */
		ret = atomic_cmpxchg(&ws->wait_cnt, wait_cnt, wake_batch);
		if (ret == wait_cnt) {
			sbq_index_atomic_inc(&sbq->wake_index);
			wake_up_nr(&ws->wait, wake_batch);
			return false;
		}

		return true;
	}

	return false;
}

/*
 * 040b83fcecfb (on the way to 6.1): wake first, then move the index and
 * reset the count, and retry when the count went below zero or the queue
 * turned out empty. The retry on an empty queue leaves a count taken to
 * zero there without resetting it: later frees charged to that queue go
 * below zero and retry for ever (fixed by 48c033314f37).
 */
static bool __sbq_wake_up_v61next(struct sbitmap_queue *sbq)
{
	struct sbq_wait_state *ws;
	unsigned int wake_batch;
	int wait_cnt;

	ws = sbq_wake_ptr_v60(sbq);
	if (!ws)
		return false;

	wait_cnt = atomic_dec_return(&ws->wait_cnt);
	/*
	 * Below zero, another caller is between its zero and its reset; no
	 * sleepers, the free is owed to another queue: go round again.
	 */
	if (wait_cnt < 0 || !waitqueue_active(&ws->wait))
		return true;

	if (wait_cnt > 0)
		return false;

	wake_batch = READ_ONCE(sbq->wake_batch);

	/* Wake before the reset, so that nobody charges the queue meanwhile. */
	wake_up_nr(&ws->wait, wake_batch);

	/*
	 * Pairs with smp_mb() in __sbitmap_queue_update_wake_batch_v61() (the
	 * batch is read before the reset), and with the full barrier of
	 * atomic_dec_return() above in the next caller: one that sees the
	 * reset count also sees the wake-up in waitqueue_active().
	 */
	smp_mb__before_atomic();

	/* The index moves before the count comes back, or a caller would pick the old queue. */
	sbq_index_atomic_inc(&sbq->wake_index);
	atomic_set(&ws->wait_cnt, wake_batch);

	return false;
}

/*
 * ukern: out of line, like the v6.1 code. v6.0 charged one free per call
 * whatever @nr a batched completion freed, so @nr is not taken here.
 */
static noinline void sbitmap_queue_wake_up_v60(struct sbitmap_queue *sbq, bool v61next)
{
	if (v61next) {
		while (__sbq_wake_up_v61next(sbq))
			;
		return;
	}
	while (__sbq_wake_up_v60(sbq))
		;
}

/* ---- current wake-up ---- */

void sbitmap_queue_wake_up(struct sbitmap_queue *sbq, int nr)
{
	unsigned int wake_batch = READ_ONCE(sbq->wake_batch);
	unsigned int wakeups;

	/*
	 * Nobody waits: no accounting at all. The caller's full barrier
	 * (smp_mb__after_atomic() in sbitmap_queue_clear()) orders its free
	 * before this read; the waiter's side is the atomic_inc() plus
	 * set_current_state() in sbitmap_prepare_to_wait(), whose retry then
	 * sees the free. (The v6.1 scheme starts with the same test in
	 * sbq_wake_ptr_v61(), so it is taken for both.)
	 */
	if (!atomic_read(&sbq->ws_active))
		return;

	if (unlikely(sbq->wake_scheme == SBQ_WAKE_V61)) {
		sbitmap_queue_wake_up_v61(sbq, nr);
		return;
	}
	if (unlikely(sbq->wake_scheme != SBQ_WAKE_CURRENT)) {
		sbitmap_queue_wake_up_v60(sbq, sbq->wake_scheme == SBQ_WAKE_V61_NEXT);
		return;
	}

	atomic_add(nr, &sbq->completion_cnt);
	wakeups = atomic_read(&sbq->wakeup_cnt);

	/* Claim one batch; the wrapping difference copes with overflow. */
	do {
		if ((unsigned int)atomic_read(&sbq->completion_cnt) - wakeups < wake_batch)
			return;
	} while (!atomic_try_cmpxchg(&sbq->wakeup_cnt, (int *)&wakeups,
				     (int)(wakeups + wake_batch)));

	__sbitmap_queue_wake_up(sbq, wake_batch);
}

static inline void sbitmap_update_cpu_hint(struct sbitmap *sb, int cpu, int tag)
{
	if (likely(!sb->round_robin && tag < (int)sb->depth))
		/* Racy by design (data_race() upstream): a relaxed marked store. */
		WRITE_ONCE(*per_cpu_ptr(sb->alloc_hint, cpu), (unsigned int)tag);
}

void sbitmap_queue_clear_batch(struct sbitmap_queue *sbq, int offset, int *tags, int nr_tags)
{
	struct sbitmap *sb = &sbq->sb;
	unsigned long *addr = NULL;
	unsigned long mask = 0;
	int i;

	/* Release the tags' objects before the bits: as in sbitmap_queue_clear(). */
	smp_mb__before_atomic();
	for (i = 0; i < nr_tags; i++) {
		const int tag = tags[i] - offset;
		unsigned long *this_addr;

		/* A batch goes straight to ->word, not through ->cleared. */
		this_addr = &sb->map[SB_NR_TO_INDEX(sb, tag)].word;
		if (!addr) {
			addr = this_addr;
		} else if (addr != this_addr) {
			/* smp_mb__before_atomic() above, for TSan (see sbitmap.h) */
			uk_tsan_release(addr);
			atomic_long_andnot(mask, (atomic_long_t *)addr);
			mask = 0;
			addr = this_addr;
		}
		mask |= (1UL << SB_NR_TO_BIT(sb, tag));
	}

	if (mask) {
		uk_tsan_release(addr);
		atomic_long_andnot(mask, (atomic_long_t *)addr);
	}

	/* Pairs with set_current_state() in the waiter, as in sbitmap_queue_clear(). */
	smp_mb__after_atomic();
	sbitmap_queue_wake_up(sbq, nr_tags);
	sbitmap_update_cpu_hint(&sbq->sb, raw_smp_processor_id(), tags[nr_tags - 1] - offset);
}

void sbitmap_queue_clear(struct sbitmap_queue *sbq, unsigned int nr, unsigned int cpu)
{
	/*
	 * The bit can be reallocated as soon as ->cleared has it: order our
	 * accesses to the tagged object first. Pairs with the acquire in
	 * __sbitmap_get_word().
	 */
	smp_mb__before_atomic();
	sbitmap_deferred_clear_bit(&sbq->sb, nr);

	/*
	 * Pairs with the full barrier in set_current_state() (prepare_to_wait)
	 * on the waiter side: either we see the waiter in waitqueue_active(),
	 * or its retry sees the freed bit.
	 */
	smp_mb__after_atomic();
	sbitmap_queue_wake_up(sbq, 1);
	sbitmap_update_cpu_hint(&sbq->sb, cpu, nr);
}

void sbitmap_queue_wake_all(struct sbitmap_queue *sbq)
{
	int i, wake_index;

	/* Pairs with set_current_state() in the waiters, like sbitmap_queue_wake_up(). */
	smp_mb();
	wake_index = atomic_read(&sbq->wake_index);
	for (i = 0; i < SBQ_WAIT_QUEUES; i++) {
		struct sbq_wait_state *ws = &sbq->ws[wake_index];

		if (waitqueue_active(&ws->wait))
			wake_up(&ws->wait);

		wake_index = sbq_index_inc(wake_index);
	}
}

void sbitmap_queue_show(struct sbitmap_queue *sbq, struct seq_file *m)
{
	bool first;
	int i;

	sbitmap_show(&sbq->sb, m);

	seq_puts(m, "alloc_hint={");
	first = true;
	for_each_possible_cpu (i) {
		if (!first)
			seq_puts(m, ", ");
		first = false;
		seq_printf(m, "%u", READ_ONCE(*per_cpu_ptr(sbq->sb.alloc_hint, i)));
	}
	seq_puts(m, "}\n");

	seq_printf(m, "wake_batch=%u\n", sbq->wake_batch);
	seq_printf(m, "wake_index=%d\n", atomic_read(&sbq->wake_index));
	seq_printf(m, "ws_active=%d\n", atomic_read(&sbq->ws_active));

	seq_puts(m, "ws={\n");
	for (i = 0; i < SBQ_WAIT_QUEUES; i++) {
		struct sbq_wait_state *ws = &sbq->ws[i];

		if (sbq->wake_scheme != SBQ_WAKE_CURRENT)
			seq_printf(m, "\t{.wait_cnt=%d, .wait=%s},\n", atomic_read(&ws->wait_cnt),
				   waitqueue_active(&ws->wait) ? "active" : "inactive");
		else
			seq_printf(m, "\t{.wait=%s},\n",
				   waitqueue_active(&ws->wait) ? "active" : "inactive");
	}
	seq_puts(m, "}\n");

	seq_printf(m, "round_robin=%d\n", sbq->sb.round_robin);
	seq_printf(m, "min_shallow_depth=%u\n", sbq->min_shallow_depth);
}

void sbitmap_add_wait_queue(struct sbitmap_queue *sbq, struct sbq_wait_state *ws,
			    struct sbq_wait *sbq_wait)
{
	if (!sbq_wait->sbq) {
		sbq_wait->sbq = sbq;
		atomic_inc(&sbq->ws_active);
		add_wait_queue(&ws->wait, &sbq_wait->wait);
	}
}

void sbitmap_del_wait_queue(struct sbq_wait *sbq_wait)
{
	list_del_init(&sbq_wait->wait.entry);
	if (sbq_wait->sbq) {
		atomic_dec(&sbq_wait->sbq->ws_active);
		sbq_wait->sbq = NULL;
	}
}

void sbitmap_prepare_to_wait(struct sbitmap_queue *sbq, struct sbq_wait_state *ws,
			     struct sbq_wait *sbq_wait, int state)
{
	if (!sbq_wait->sbq) {
		atomic_inc(&sbq->ws_active);
		sbq_wait->sbq = sbq;
	}
	prepare_to_wait_exclusive(&ws->wait, &sbq_wait->wait, state);
}

void sbitmap_finish_wait(struct sbitmap_queue *sbq, struct sbq_wait_state *ws,
			 struct sbq_wait *sbq_wait)
{
	finish_wait(&ws->wait, &sbq_wait->wait);
	if (sbq_wait->sbq) {
		atomic_dec(&sbq->ws_active);
		sbq_wait->sbq = NULL;
	}
}
