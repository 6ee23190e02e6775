/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Bad block table (include/linux/badblocks.h, block/badblocks.c).
 *
 * One page of u64 entries sorted by offset, never overlapping; each entry
 * packs an offset (54 bits), a length minus one (9 bits, so at most
 * BB_MAX_LEN sectors) and an "acknowledged" bit. Writers hold the seqlock;
 * readers use its read side (which excludes writers in this shim).
 *
 * Upstream: include/linux/badblocks.h @ v6.12
 */
#ifndef UK_LINUX_BADBLOCKS_H
#define UK_LINUX_BADBLOCKS_H

#include <uk/linux/kernel.h>
#include <uk/linux/seqlock.h>
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

/* The whole table lives in one page of 8-byte entries. */
#define MAX_BADBLOCKS ((int)(PAGE_SIZE / 8))

struct device;

struct badblocks {
	struct device *dev; /* always NULL: no device-managed memory */
	int count;	    /* entries in use */
	int unacked_exist;  /* some entry may be unacknowledged; reset only
			     * when a read of the unacknowledged list finds none */
	int shift;	    /* block size is 1 << shift sectors; negative: off */
	u64 *page;	    /* the table */
	int changed;
	seqlock_t lock;
	sector_t sector;
	sector_t size; /* sectors */
};

/* The range one step of a set, clear or check works on. */
struct badblocks_context {
	sector_t start;
	sector_t len;
	int ack;
};

/*
 * 0: no bad block in [s, s+sectors); 1: only acknowledged ones; -1: some
 * unacknowledged. *first_bad / *bad_sectors describe the first bad entry met.
 */
int badblocks_check(struct badblocks *bb, sector_t s, int sectors, sector_t *first_bad,
		    int *bad_sectors);
/* 0 if any part of the range went into the table, 1 if none did. */
int badblocks_set(struct badblocks *bb, sector_t s, int sectors, int acknowledged);
/* 0 if the range was (or already is) clear, 1 if nothing could be done. */
int badblocks_clear(struct badblocks *bb, sector_t s, int sectors);
void ack_all_badblocks(struct badblocks *bb);
/* "<sector> <length>\n" per entry (only unacknowledged ones if @unack). */
ssize_t badblocks_show(struct badblocks *bb, char *page, int unack);
/* Parse "<sector> <length>[\n]" and record it; @len on success. */
ssize_t badblocks_store(struct badblocks *bb, const char *page, size_t len, int unack);
int badblocks_init(struct badblocks *bb, int enable);
void badblocks_exit(struct badblocks *bb);

static inline int badblocks_full(struct badblocks *bb)
{
	return (bb->count >= MAX_BADBLOCKS);
}

static inline int badblocks_empty(struct badblocks *bb)
{
	return (bb->count == 0);
}

static inline void set_changed(struct badblocks *bb)
{
	if (bb->changed != 1)
		bb->changed = 1;
}

static inline void clear_changed(struct badblocks *bb)
{
	if (bb->changed != 0)
		bb->changed = 0;
}

#endif /* UK_LINUX_BADBLOCKS_H */
