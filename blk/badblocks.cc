// SPDX-License-Identifier: GPL-2.0-only
// block/badblocks.c: the bad block table, simplified.
//
// The kernel edits the table in place with front/behind merge and split
// cases. Here every update rebuilds the table from the old one in a single
// ordered sweep ("paint" the range into it), which yields the same canonical
// content: sorted, non-overlapping, adjacent same-ack ranges merged, runs
// longer than BB_MAX_LEN split. Where a set overlaps an existing range the
// overlap stays acknowledged only if both were (as the pre-6.7 kernel did).
// A table that would overflow is left unchanged and the call returns false.
//
// Upstream: block/badblocks.c @ v6.12
#include <cstdio>
#include <cstring>

#include <uk/linux/badblocks.h>
#include <uk/linux/errno.h>
#include <uk/linux/kernel.h>
#include <uk/linux/slab.h>

namespace
{

struct bb_builder {
	u64 *out;
	int count;
	bool overflow;
};

/* Append units [start, end) with @ack, merging into the previous entry. */
void bb_emit(struct bb_builder *b, sector_t start, sector_t end, bool ack)
{
	while (start < end && !b->overflow) {
		if (b->count) {
			u64 last = b->out[b->count - 1];

			if (BB_END(last) == start && BB_ACK(last) == ack &&
			    BB_LEN(last) < BB_MAX_LEN) {
				sector_t n =
					min_t(sector_t, end - start, BB_MAX_LEN - BB_LEN(last));

				b->out[b->count - 1] =
					BB_MAKE(BB_OFFSET(last), BB_LEN(last) + n, ack);
				start += n;
				continue;
			}
		}
		if (b->count >= (int)MAX_BADBLOCKS) {
			b->overflow = true;
			break;
		}
		sector_t n = min_t(sector_t, end - start, BB_MAX_LEN);

		b->out[b->count++] = BB_MAKE(start, n, ack);
		start += n;
	}
}

enum bb_paint { BB_PAINT_SET, BB_PAINT_CLEAR };

/* Rebuild @bb's table with units [s, e) set (with @ack) or cleared. */
bool bb_paint(struct badblocks *bb, sector_t s, sector_t e, enum bb_paint mode, bool ack)
{
	struct bb_builder b = {};
	sector_t cursor = s;
	int i;

	b.out = (u64 *)kzalloc(PAGE_SIZE, GFP_ATOMIC);
	if (!b.out)
		return false;

	for (i = 0; i < bb->count; i++) {
		u64 x = bb->page[i];
		sector_t xs = BB_OFFSET(x), xe = BB_END(x);
		bool xa = BB_ACK(x);

		if (xe <= s) {
			bb_emit(&b, xs, xe, xa);
			continue;
		}
		if (xs >= e) {
			if (mode == BB_PAINT_SET && cursor < e)
				bb_emit(&b, cursor, e, ack);
			cursor = e;
			bb_emit(&b, xs, xe, xa);
			continue;
		}
		/* x overlaps [s, e) */
		if (xs < s)
			bb_emit(&b, xs, s, xa);
		sector_t os = max(xs, s), oe = min(xe, e);

		if (mode == BB_PAINT_SET) {
			if (cursor < os)
				bb_emit(&b, cursor, os, ack);
			bb_emit(&b, os, oe, ack && xa);
		}
		cursor = oe;
		if (xe > e)
			bb_emit(&b, e, xe, xa);
	}
	if (mode == BB_PAINT_SET && cursor < e)
		bb_emit(&b, cursor, e, ack);

	if (b.overflow) {
		kfree(b.out);
		return false;
	}

	u64 *old = bb->page;
	int unacked = 0;

	for (i = 0; i < b.count; i++)
		if (!BB_ACK(b.out[i]))
			unacked = 1;
	bb->page = b.out;
	bb->count = b.count;
	bb->unacked_exist = unacked;
	bb->changed = 1;
	kfree(old);
	return true;
}

} // namespace

int badblocks_init(struct badblocks *bb, int enable)
{
	memset((void *)bb, 0, sizeof(*bb));
	bb->shift = enable ? 0 : -1;
	bb->page = (u64 *)kzalloc(PAGE_SIZE, GFP_KERNEL);
	if (!bb->page) {
		bb->shift = -1;
		return -ENOMEM;
	}
	spin_lock_init(&bb->lock);
	return 0;
}

void badblocks_exit(struct badblocks *bb)
{
	if (!bb)
		return;
	kfree(bb->page);
	bb->page = NULL;
}

bool badblocks_set(struct badblocks *bb, sector_t s, sector_t sectors, int acknowledged)
{
	unsigned long flags;
	sector_t e;
	bool rv;

	if (bb->shift < 0)
		return false; /* shift < 0: table switched off */
	if (sectors == 0)
		return true;

	e = s + sectors;
	if (bb->shift) {
		/* Round the range outwards to whole blocks. */
		s = round_down(s, (sector_t)1 << bb->shift);
		e = round_up(e, (sector_t)1 << bb->shift);
		s >>= bb->shift;
		e >>= bb->shift;
	}

	spin_lock_irqsave(&bb->lock, flags);
	rv = bb_paint(bb, s, e, BB_PAINT_SET, !!acknowledged);
	spin_unlock_irqrestore(&bb->lock, flags);
	return rv;
}

bool badblocks_clear(struct badblocks *bb, sector_t s, sector_t sectors)
{
	unsigned long flags;
	sector_t e;
	bool rv;

	if (bb->shift < 0)
		return false;
	if (sectors == 0)
		return true;

	e = s + sectors;
	if (bb->shift) {
		/* Round the range inwards: a partly cleared block stays bad. */
		s = round_up(s, (sector_t)1 << bb->shift);
		e = round_down(e, (sector_t)1 << bb->shift);
		if (e <= s)
			return true;
		s >>= bb->shift;
		e >>= bb->shift;
	}

	spin_lock_irqsave(&bb->lock, flags);
	rv = bb_paint(bb, s, e, BB_PAINT_CLEAR, false);
	spin_unlock_irqrestore(&bb->lock, flags);
	return rv;
}

int badblocks_check(struct badblocks *bb, sector_t s, sector_t sectors, sector_t *first_bad,
		    sector_t *bad_sectors)
{
	unsigned long flags;
	sector_t e = s + sectors;
	int lo, hi, rv = 0;

	if (bb->shift > 0) {
		s = round_down(s, (sector_t)1 << bb->shift) >> bb->shift;
		e = round_up(e, (sector_t)1 << bb->shift) >> bb->shift;
	}

	spin_lock_irqsave(&bb->lock, flags);
	/* Binary search for the first entry ending after s. */
	lo = 0;
	hi = bb->count;
	while (lo < hi) {
		int mid = (lo + hi) / 2;

		if (BB_END(bb->page[mid]) <= s)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < bb->count && BB_OFFSET(bb->page[lo]) < e; lo++) {
		u64 x = bb->page[lo];

		if (rv == 0) {
			int shift = bb->shift > 0 ? bb->shift : 0;

			*first_bad = BB_OFFSET(x) << shift;
			*bad_sectors = BB_LEN(x) << shift;
			rv = 1;
		}
		if (!BB_ACK(x)) {
			rv = -1;
			break;
		}
	}
	spin_unlock_irqrestore(&bb->lock, flags);
	return rv;
}

void ack_all_badblocks(struct badblocks *bb)
{
	unsigned long flags;
	int i;

	if (bb->page == NULL || bb->changed)
		return; /* the kernel leaves a changing table alone */
	spin_lock_irqsave(&bb->lock, flags);
	for (i = 0; i < bb->count; i++)
		bb->page[i] |= BB_ACK_MASK;
	bb->unacked_exist = 0;
	spin_unlock_irqrestore(&bb->lock, flags);
}

ssize_t badblocks_show(struct badblocks *bb, char *page, int unack)
{
	unsigned long flags;
	size_t len = 0;
	int i, shift;

	if (bb->shift < 0)
		return 0;
	shift = bb->shift;

	spin_lock_irqsave(&bb->lock, flags);
	for (i = 0; i < bb->count && len < PAGE_SIZE; i++) {
		u64 x = bb->page[i];

		if (unack && BB_ACK(x))
			continue;
		len += snprintf(page + len, PAGE_SIZE - len, "%llu %llu\n",
				(unsigned long long)BB_OFFSET(x) << shift,
				(unsigned long long)BB_LEN(x) << shift);
	}
	if (unack && len == 0)
		bb->unacked_exist = 0;
	spin_unlock_irqrestore(&bb->lock, flags);
	return min_t(size_t, len, PAGE_SIZE - 1);
}
