/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Bad block table (include/linux/badblocks.h, block/badblocks.c).
 *
 * One page of u64 entries sorted by offset, never overlapping; each entry
 * packs an offset (54 bits, in units of 1 << shift sectors), a length-1 (9
 * bits, so at most BB_MAX_LEN units) and an "acknowledged" bit.
 *
 * Upstream: include/linux/badblocks.h @ v6.12
 */
#ifndef UK_LINUX_BADBLOCKS_H
#define UK_LINUX_BADBLOCKS_H

#include <uk/linux/spinlock.h>
#include <uk/linux/types.h>

#define BB_LEN_MASK (0x00000000000001FFULL)
#define BB_OFFSET_MASK (0x7FFFFFFFFFFFFE00ULL)
#define BB_ACK_MASK (0x8000000000000000ULL)
#define BB_MAX_LEN 512
#define BB_OFFSET(x) (((x)&BB_OFFSET_MASK) >> 9)
#define BB_LEN(x) (((x)&BB_LEN_MASK) + 1)
#define BB_ACK(x) (!!((x)&BB_ACK_MASK))
#define BB_END(x) (BB_OFFSET(x) + BB_LEN(x))
#define BB_MAKE(a, l, ack) (((u64)(a) << 9) | ((u64)(l)-1) | ((u64)(!!(ack)) << 63))

/* One page of entries. */
#define MAX_BADBLOCKS (PAGE_SIZE / 8)

struct device;

struct badblocks {
	struct device *dev;
	int count;	   /* entries in use */
	int unacked_exist; /* some entry is not acknowledged */
	int shift;	   /* block size is 1 << shift sectors; -1: disabled */
	u64 *page;	   /* the table */
	int changed;
	spinlock_t lock; /* the kernel uses a seqlock; readers are rare here */
	sector_t sector;
	sector_t size;
};

int badblocks_init(struct badblocks *bb, int enable);
void badblocks_exit(struct badblocks *bb);
/*
 * 0: no bad block in [s, s+sectors); 1: only acknowledged ones; -1: some
 * unacknowledged. *first_bad / *bad_sectors describe the first bad entry met.
 */
int badblocks_check(struct badblocks *bb, sector_t s, sector_t sectors, sector_t *first_bad,
		    sector_t *bad_sectors);
/* true if the whole range is now recorded; false if disabled or table full. */
bool badblocks_set(struct badblocks *bb, sector_t s, sector_t sectors, int acknowledged);
/* true if the whole range is now clear; false if disabled or table full. */
bool badblocks_clear(struct badblocks *bb, sector_t s, sector_t sectors);
void ack_all_badblocks(struct badblocks *bb);
/* "<sector> <length>\n" per entry (only unacknowledged ones if @unack). */
ssize_t badblocks_show(struct badblocks *bb, char *page, int unack);

#endif /* UK_LINUX_BADBLOCKS_H */
