/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The block layer's optional parts that ukern builds without, in the form
 * the kernel's own headers give them when their config is off: data
 * integrity (!CONFIG_BLK_DEV_INTEGRITY), inline encryption
 * (!CONFIG_BLK_INLINE_ENCRYPTION), cgroups (!CONFIG_BLK_CGROUP), zoned
 * devices (!CONFIG_BLK_DEV_ZONED), the rq_qos policies (no policy is ever
 * attached here) and the block tracepoints. Ported code calls them where
 * the kernel does, and they compile to nothing, so that its statements
 * stay the kernel's.
 */
#ifndef UK_BLK_BLK_OFF_H
#define UK_BLK_BLK_OFF_H

#include <uk/linux/bio.h>
#include <uk/linux/blkdev.h>

/* include/linux/bio-integrity.h */
struct bio_integrity_payload;

static inline struct bio_integrity_payload *bio_integrity(struct bio *bio)
{
	return NULL;
}

static inline void bio_integrity_advance(struct bio *bio, unsigned int bytes_done) {}

static inline void bio_integrity_trim(struct bio *bio) {}

static inline int bio_integrity_clone(struct bio *bio, struct bio *bio_src, gfp_t gfp_mask)
{
	return 0;
}

/* block/blk.h */
static inline void bio_integrity_free(struct bio *bio) {}

static inline bool bio_integrity_endio(struct bio *bio)
{
	return true;
}

static inline void blk_zone_bio_endio(struct bio *bio) {}

/* block/blk-crypto-internal.h, include/linux/blk-crypto.h */
static inline void bio_crypt_free_ctx(struct bio *bio) {}

static inline void bio_crypt_advance(struct bio *bio, unsigned int bytes) {}

static inline int bio_crypt_clone(struct bio *dst, struct bio *src, gfp_t gfp_mask)
{
	return 0;
}

/* include/linux/blk-cgroup.h */
static inline void bio_associate_blkg(struct bio *bio) {}

static inline void bio_clone_blkg_association(struct bio *dst, struct bio *src) {}

/* block/blk-rq-qos.h: no queue has a policy attached. */
static inline void rq_qos_done_bio(struct bio *bio) {}

/* include/trace/events/block.h */
static inline void trace_block_bio_complete(struct request_queue *q, struct bio *bio) {}

#endif /* UK_BLK_BLK_OFF_H */
