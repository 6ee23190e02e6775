/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The block layer's optional parts that ukern builds without, in the form
 * the kernel's own headers give them when their config is off: data
 * integrity (!CONFIG_BLK_DEV_INTEGRITY), inline encryption
 * (!CONFIG_BLK_INLINE_ENCRYPTION), cgroups (!CONFIG_BLK_CGROUP), zoned
 * devices (!CONFIG_BLK_DEV_ZONED), the rq_qos policies and the I/O
 * schedulers (none is ever attached here) and the block tracepoints. Ported code calls them where
 * the kernel does, and they compile to nothing, so that its statements
 * stay the kernel's.
 */
#ifndef UK_BLK_BLK_OFF_H
#define UK_BLK_BLK_OFF_H

#include <uk/linux/bio.h>
#include <uk/linux/blk-mq.h>
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

static inline void bioset_integrity_free(struct bio_set *bs) {}

static inline int bioset_integrity_create(struct bio_set *bs, int pool_size)
{
	return 0;
}

/* block/blk.h */
static inline void bio_integrity_free(struct bio *bio) {}

static inline void bio_integrity_init(void) {}

static inline bool bio_integrity_endio(struct bio *bio)
{
	return true;
}

static inline void blk_zone_bio_endio(struct bio *bio) {}

/* include/linux/blkdev.h without CONFIG_BLK_DEV_ZONED: no device is zoned. */
static inline bool bdev_is_zoned(struct block_device *bdev)
{
	return false;
}

static inline bool bdev_is_zone_start(struct block_device *bdev, sector_t sector)
{
	return false;
}

static inline unsigned int queue_max_zone_append_sectors(struct request_queue *q)
{
	return 0;
}

/* include/xen/xen.h: not a Xen guest. */
#define xen_domain() (0)

static inline bool xen_biovec_phys_mergeable(const struct bio_vec *vec1, const struct page *page)
{
	return true;
}

/* block/blk-crypto-internal.h, include/linux/blk-crypto.h */
static inline void bio_crypt_free_ctx(struct bio *bio) {}

static inline void bio_crypt_advance(struct bio *bio, unsigned int bytes) {}

static inline void blk_crypto_rq_set_defaults(struct request *rq) {}

static inline int bio_crypt_clone(struct bio *dst, struct bio *src, gfp_t gfp_mask)
{
	return 0;
}

static inline int blk_crypto_rq_bio_prep(struct request *rq, struct bio *bio, gfp_t gfp_mask)
{
	return 0;
}

/* include/linux/blk-cgroup.h, block/blk-cgroup.h, block/blk-ioprio.h */
static inline void bio_associate_blkg(struct bio *bio) {}

static inline void blk_cgroup_bio_start(struct bio *bio) {}

static inline void blkcg_bio_issue_init(struct bio *bio) {}

static inline void blkcg_set_ioprio(struct bio *bio) {}

/* block/blk-crypto-internal.h without CONFIG_BLK_INLINE_ENCRYPTION */
static inline bool blk_crypto_bio_prep(struct bio **bio_ptr)
{
	return true;
}

static inline void bio_clone_blkg_association(struct bio *dst, struct bio *src) {}

/* block/blk-rq-qos.h: no queue has a policy attached. */
static inline void rq_qos_done_bio(struct bio *bio) {}

static inline void rq_qos_done(struct request_queue *q, struct request *rq) {}

/*
 * block/blk-stat.h: no blk-stat callbacks (QUEUE_FLAG_STATS is never set,
 * so no request carries RQF_STATS).
 */
static inline void blk_stat_add(struct request *rq, u64 now) {}

/* include/linux/blkdev.h without CONFIG_BLK_RQ_ALLOC_TIME */
#define blk_queue_rq_alloc_time(q) false

static inline void rq_qos_issue(struct request_queue *q, struct request *rq) {}

static inline void rq_qos_throttle(struct request_queue *q, struct bio *bio) {}

static inline void rq_qos_track(struct request_queue *q, struct request *rq, struct bio *bio) {}

/* include/linux/blk-integrity.h, block/blk.h */
static inline bool blk_integrity_rq(struct request *rq)
{
	return false;
}

static inline void blk_integrity_prepare(struct request *rq) {}

static inline void blk_integrity_complete(struct request *rq, unsigned int nr_bytes) {}

/* block/blk-crypto-internal.h */
static inline void blk_crypto_rq_put_keyslot(struct request *rq) {}

static inline void blk_crypto_free_request(struct request *rq) {}

/* block/blk-pm.h without CONFIG_PM */
static inline void blk_pm_mark_last_busy(struct request *rq) {}

/* block/blk.h without CONFIG_BLK_DEV_ZONED */
static inline void blk_zone_update_request_bio(struct request *rq, struct bio *bio) {}

static inline void blk_zone_finish_request(struct request *rq) {}

/*
 * include/linux/writeback.h: laptop mode (vm.laptop_mode) is off, and there
 * is no writeback to kick.
 */
static const int laptop_mode = 0;

static inline void laptop_io_completion(struct backing_dev_info *info) {}

/* block/blk-mq-sched.h: no elevator is ever attached, so none has work. */
struct blk_mq_hw_ctx;

static inline bool blk_mq_sched_has_work(struct blk_mq_hw_ctx *hctx)
{
	return false;
}

/* include/trace/events/block.h */
static inline void trace_block_rq_issue(struct request *rq) {}

static inline void trace_block_getrq(struct bio *bio) {}

static inline void trace_block_rq_complete(struct request *rq, blk_status_t error,
					   unsigned int nr_bytes)
{
}

static inline void trace_block_bio_complete(struct request_queue *q, struct bio *bio) {}

static inline void trace_block_io_start(struct request *rq) {}

static inline void trace_block_bio_queue(struct bio *bio) {}

static inline void trace_block_io_done(struct request *rq) {}

static inline void trace_block_rq_insert(struct request *rq) {}

static inline void trace_block_unplug(struct request_queue *q, unsigned int depth, bool explicit_)
{
}

#endif /* UK_BLK_BLK_OFF_H */
