/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * include/linux/blkdev.h: struct request_queue, queue limits and flags,
 * struct gendisk / struct block_device (minimal), bio submission, and the
 * ukern block-device "file" (block/fops.c direct I/O over caller buffers,
 * devices looked up by name).
 *
 * Upstream: include/linux/blkdev.h @ v6.12
 */
#ifndef UK_LINUX_BLKDEV_H
#define UK_LINUX_BLKDEV_H

#include <sys/uio.h>

#include <uk/linux/atomic.h>
#include <uk/linux/bio.h>
#include <uk/linux/blk_types.h>
#include <uk/linux/kconfig.h>
#include <uk/linux/list.h>
#include <uk/linux/lockdep.h>
#include <uk/linux/mutex.h>
#include <uk/linux/percpu-refcount.h>
#include <uk/linux/pm.h>
#include <uk/linux/refcount.h>
#include <uk/linux/rcupdate.h>
#include <uk/linux/spinlock.h>
#include <uk/linux/timer.h>
#include <uk/linux/wait.h>
#include <uk/linux/workqueue.h>

struct blk_mq_ctx;
struct blk_mq_hw_ctx;
struct blk_mq_tag_set;
struct blk_mq_tags;
struct blk_mq_ops;
struct request;
struct gendisk;

typedef unsigned int blk_features_t;

/* queue_limits.features (the v6.12 bits) */
#define BLK_FEAT_IO_STAT ((blk_features_t)(1u << 4))
#define BLK_FEAT_NOWAIT ((blk_features_t)(1u << 7))
/* the tag set has a poll map (blk_mq_can_poll() also wants poll queues in it) */
#define BLK_FEAT_POLL ((blk_features_t)(1u << 9))
/* peer-to-peer DMA between PCI devices: no device here sets it */
#define BLK_FEAT_PCI_P2PDMA ((blk_features_t)(1u << 12))
/* blk_mq_quiesce_tagset()/blk_mq_unquiesce_tagset() leave this queue alone */
#define BLK_FEAT_SKIP_TAGSET_QUIESCE ((blk_features_t)(1u << 13))

/* Only what null_blk sets and the request path reads. */
struct queue_limits {
	unsigned int logical_block_size;
	unsigned int physical_block_size;
	unsigned int max_hw_sectors;
	unsigned int max_sectors;
	unsigned int max_hw_discard_sectors; /* 0: no discard */
	unsigned int chunk_sectors;	     /* zone size of a zoned device */
	unsigned int atomic_write_unit_min;  /* bytes; 0: no atomic writes */
	unsigned int atomic_write_unit_max;
	unsigned long seg_boundary_mask;
	unsigned long virt_boundary_mask;
	unsigned int max_segment_size;
	unsigned short max_segments;
	blk_features_t features;
};

/*
 * Stand-in for the tag set's SRCU (BLK_MQ_F_BLOCKING dispatch sections):
 * a count of dispatch sections in progress; synchronize waits for zero.
 */
struct blk_mq_srcu {
	atomic_t readers;
	wait_queue_head_t wq;
};

/* q->queue_flags bits (v6.1 numbering). */
/* Tag allocation policies (BLK_ALLOC_POLICY_TO_MQ_FLAG()). */
#define BLK_TAG_ALLOC_FIFO 0 /* the lowest free tag first */
#define BLK_TAG_ALLOC_RR 1   /* round robin from the last tag handed out */

#define QUEUE_FLAG_DYING 1
#define QUEUE_FLAG_NOMERGES 3
#define QUEUE_FLAG_SAME_COMP 4
#define QUEUE_FLAG_SAME_FORCE 12
#define QUEUE_FLAG_INIT_DONE 14
#define QUEUE_FLAG_POLL 19
/* Issue times for blk-stat callbacks: never set, none exist here. */
#define QUEUE_FLAG_STATS 20
#define QUEUE_FLAG_REGISTERED 22 /* registered with a disk: never here (no sysfs) */
#define QUEUE_FLAG_QUIESCED 24
#define QUEUE_FLAG_HCTX_ACTIVE 27
/* An elevator that dispatches from one hctx only: never set, there is none. */
#define QUEUE_FLAG_SQ_SCHED 28

struct backing_dev_info;
struct elevator_queue;

struct request_queue {
	unsigned long queue_flags;
	struct elevator_queue *elevator; /* an attached I/O scheduler: never here */
	void *queuedata;
	const struct blk_mq_ops *mq_ops;

	struct blk_mq_ctx __percpu *queue_ctx;
	struct blk_mq_ctxs *mq_ctxs; /* freed by blk_mq_release() */
	struct blk_mq_hw_ctx **queue_hw_ctx;
	unsigned int nr_hw_queues;
	/* Exited hctxs, freed by blk_mq_release(). */
	struct list_head unused_hctx_list;
	spinlock_t unused_hctx_lock;

	struct blk_mq_tag_set *tag_set;
	struct list_head tag_set_list;

	/* Scheduler tags shared by all hctxs (TAG_HCTX_SHARED + scheduler). */
	struct blk_mq_tags *sched_shared_tags;

	/* In-flight driver tags of this queue when tags are host-wide. */
	atomic_t nr_active_requests_shared_tags;

	unsigned int nr_requests;
	unsigned int rq_timeout;

	struct queue_limits limits;
	struct gendisk *disk;

	/* Each request (and each entered submitter) holds a reference. */
	struct percpu_ref q_usage_counter;
	int mq_freeze_depth;
	struct mutex mq_freeze_lock;
	wait_queue_head_t mq_freeze_wq;
	/* blk_freeze_acquire_lock(): empty without lockdep. */
	struct lockdep_map io_lockdep_map;
	struct lockdep_map q_lockdep_map;

	spinlock_t queue_lock;
	int quiesce_depth;

	struct timer_list timeout;
	struct work_struct timeout_work;

	spinlock_t requeue_lock;
	struct list_head requeue_list;
	struct delayed_work requeue_work;

	refcount_t refs; /* the struct itself (gendisk + block_device holders) */
	struct rcu_head rcu_head;

	/* Entrants without BLK_MQ_REQ_PM are held back while it is non-zero. */
	atomic_t pm_only;
};

#define blk_queue_pm_only(q) atomic_read(&(q)->pm_only)

/* Runtime PM is not modelled (no CONFIG_PM): every queue is active. */
static inline enum rpm_status queue_rpm_status(struct request_queue *q)
{
	return RPM_ACTIVE;
}

#define blk_queue_dying(q) test_bit(QUEUE_FLAG_DYING, &(q)->queue_flags)
#define blk_queue_quiesced(q) test_bit(QUEUE_FLAG_QUIESCED, &(q)->queue_flags)
#define blk_queue_init_done(q) test_bit(QUEUE_FLAG_INIT_DONE, &(q)->queue_flags)
#define blk_queue_sq_sched(q) test_bit(QUEUE_FLAG_SQ_SCHED, &(q)->queue_flags)
#define blk_queue_registered(q) test_bit(QUEUE_FLAG_REGISTERED, &(q)->queue_flags)
#define blk_queue_skip_tagset_quiesce(q) ((q)->limits.features & BLK_FEAT_SKIP_TAGSET_QUIESCE)
#define blk_queue_io_stat(q) ((q)->limits.features & BLK_FEAT_IO_STAT)
#define blk_queue_pci_p2pdma(q) ((q)->limits.features & BLK_FEAT_PCI_P2PDMA)

static inline unsigned int queue_atomic_write_unit_max_bytes(const struct request_queue *q)
{
	return q->limits.atomic_write_unit_max;
}

static inline unsigned int queue_atomic_write_unit_min_bytes(const struct request_queue *q)
{
	return q->limits.atomic_write_unit_min;
}

#define list_entry_rq(ptr) list_entry((ptr), struct request, queuelist)

void blk_queue_flag_set(unsigned int flag, struct request_queue *q);
void blk_queue_flag_clear(unsigned int flag, struct request_queue *q);
bool blk_get_queue(struct request_queue *q);
const char *blk_op_str(enum req_op op);

static inline unsigned int queue_logical_block_size(const struct request_queue *q)
{
	return q->limits.logical_block_size ? q->limits.logical_block_size : 512;
}

static inline unsigned int queue_max_hw_sectors(const struct request_queue *q)
{
	return q->limits.max_hw_sectors;
}

static inline unsigned long queue_segment_boundary(const struct request_queue *q)
{
	return q->limits.seg_boundary_mask;
}

static inline unsigned short queue_max_segments(const struct request_queue *q)
{
	return q->limits.max_segments;
}

static inline unsigned int queue_max_segment_size(const struct request_queue *q)
{
	return q->limits.max_segment_size;
}

static inline bool queue_is_mq(struct request_queue *q)
{
	return q->mq_ops;
}

void blk_queue_rq_timeout(struct request_queue *q, unsigned int timeout);

/* ---- gendisk and block_device (block/genhd.c, block/bdev.c) ---- */

#define DISK_NAME_LEN 32

struct disk_stats;

struct block_device {
	sector_t bd_start_sect;
	struct disk_stats *bd_stats; /* per-CPU, <uk/linux/part_stat.h> */
	unsigned long bd_stamp;	     /* jiffies of the last io_ticks update */
	struct gendisk *bd_disk;
	struct request_queue *bd_queue;
	/* The partition number (low byte, 0: the whole disk) and BD_* flags. */
	atomic_t __bd_flags;
	unsigned int bd_dev;
};

#define BD_PARTNO 255
#define BD_READ_ONLY (1u << 8)
/* The disk's driver takes bios itself (->submit_bio): set by add_disk(). */
#define BD_HAS_SUBMIT_BIO (1u << 10)
#define BD_RO_WARNED (1u << 11)
#define BD_MAKE_IT_FAIL (1u << 12)

/* A bio-based driver's entry point; NULL for a blk-mq disk. */
struct block_device_operations {
	void (*submit_bio)(struct bio *bio);
};

struct gendisk {
	char disk_name[DISK_NAME_LEN];
	const struct block_device_operations *fops;
	struct request_queue *queue;
	struct block_device *part0;
	struct backing_dev_info *bdi; /* no writeback model: NULL */
	void *private_data;
	sector_t capacity; /* 512-byte sectors */
	unsigned long state;
	struct list_head uk_list;	/* name registry (add_disk) */
	atomic_t uk_refs;		/* lookups + the driver's reference */
	struct lockdep_map lockdep_map; /* empty: lock order is not validated */
	struct block_device uk_bdev;
};

#define GD_READ_ONLY 1
#define GD_DEAD 2
#define GD_OWNS_QUEUE 6

static inline struct request_queue *bdev_get_queue(struct block_device *bdev)
{
	return bdev->bd_queue;
}

static inline bool bdev_test_flag(const struct block_device *bdev, unsigned int flag)
{
	return atomic_read(&bdev->__bd_flags) & flag;
}

static inline void bdev_set_flag(struct block_device *bdev, unsigned int flag)
{
	atomic_or(flag, &bdev->__bd_flags);
}

static inline void bdev_clear_flag(struct block_device *bdev, unsigned int flag)
{
	atomic_andnot(flag, &bdev->__bd_flags);
}

static inline u8 bdev_partno(const struct block_device *bdev)
{
	return atomic_read(&bdev->__bd_flags) & BD_PARTNO;
}

static inline bool bdev_is_partition(struct block_device *bdev)
{
	return bdev_partno(bdev) != 0;
}

static inline struct block_device *bdev_whole(struct block_device *bdev)
{
	return bdev->bd_disk->part0;
}

static inline int get_disk_ro(struct gendisk *disk)
{
	return bdev_test_flag(disk->part0, BD_READ_ONLY) || test_bit(GD_READ_ONLY, &disk->state);
}

static inline int bdev_read_only(struct block_device *bdev)
{
	return bdev_test_flag(bdev, BD_READ_ONLY) || get_disk_ro(bdev->bd_disk);
}

/* block/genhd.c: marks the whole disk read-only (no uevent here). */
void set_disk_ro(struct gendisk *disk, bool read_only);

static inline sector_t get_capacity(struct gendisk *disk)
{
	return READ_ONCE(disk->capacity);
}

static inline void set_capacity(struct gendisk *disk, sector_t size)
{
	WRITE_ONCE(disk->capacity, size);
}

static inline bool bdev_nowait(struct block_device *bdev)
{
	return bdev->bd_disk->queue->limits.features & BLK_FEAT_NOWAIT;
}

static inline sector_t bdev_nr_sectors(struct block_device *bdev)
{
	return get_capacity(bdev->bd_disk);
}

static inline unsigned int bdev_logical_block_size(struct block_device *bdev)
{
	return queue_logical_block_size(bdev_get_queue(bdev));
}

struct lock_class_key;

/*
 * blk_mq_alloc_disk(): a request queue on @set (queuedata = @queuedata)
 * plus its gendisk, which owns the queue (GD_OWNS_QUEUE: put_disk() tears
 * it down); ERR_PTR on failure.
 */
struct gendisk *__blk_mq_alloc_disk(struct blk_mq_tag_set *set, struct queue_limits *lim,
				    void *queuedata, struct lock_class_key *lkclass);
#define blk_mq_alloc_disk(set, lim, queuedata)                    \
	({                                                        \
		static struct lock_class_key __key;               \
                                                                  \
		__blk_mq_alloc_disk(set, lim, queuedata, &__key); \
	})
/*
 * A gendisk for a queue the caller keeps (and destroys): the disk holds a
 * reference to @q; NULL when @q is dying or memory runs out.
 */
struct gendisk *blk_mq_alloc_disk_for_queue(struct request_queue *q,
					    struct lock_class_key *lkclass);
struct gendisk *__alloc_disk_node(struct request_queue *q, int node_id,
				  struct lock_class_key *lkclass);
/* Makes the disk visible to uk::blkdev_lookup() under disk->disk_name. */
int add_disk(struct gendisk *disk);
/* Hides the disk, fails new I/O with -ENODEV and waits for in-flight I/O. */
void del_gendisk(struct gendisk *disk);
/* Drops the driver's reference (the queue is torn down here). */
void put_disk(struct gendisk *disk);

/* ---- bio submission (block/blk-core.c, block/bio.c) ---- */

void submit_bio(struct bio *bio);
void submit_bio_noacct(struct bio *bio);
void submit_bio_noacct_nocheck(struct bio *bio);

/* I/O accounting of bio-based drivers (block/blk-core.c). */
unsigned long bdev_start_io_acct(struct block_device *bdev, enum req_op op,
				 unsigned long start_time);
void bdev_end_io_acct(struct block_device *bdev, enum req_op op, unsigned int sectors,
		      unsigned long start_time);
unsigned long bio_start_io_acct(struct bio *bio);
void bio_end_io_acct_remapped(struct bio *bio, unsigned long start_time,
			      struct block_device *orig_bdev);

static inline void bio_end_io_acct(struct bio *bio, unsigned long start_time)
{
	return bio_end_io_acct_remapped(bio, start_time, bio->bi_bdev);
}

/*
 * block/genhd.c and block/blk-sysfs.c: the statistics line of
 * /sys/block/<dev>/stat for @bdev, and the queue's "iostats" attribute
 * (BLK_FEAT_IO_STAT), written into / read from a page-sized buffer.
 */
ssize_t part_stat_show(struct block_device *bdev, char *buf);
ssize_t queue_iostats_show(struct gendisk *disk, char *page);
ssize_t queue_iostats_store(struct gendisk *disk, const char *page, size_t count);
/* Submits and sleeps until the bio completes: 0 or -errno. */
int submit_bio_wait(struct bio *bio);

struct io_comp_batch;
#define BLK_POLL_ONESHOT (1 << 0)
/* Polls for completion of a REQ_POLLED bio: completions found (>= 0). */
int bio_poll(struct bio *bio, struct io_comp_batch *iob, unsigned int flags);

int blk_queue_enter(struct request_queue *q, blk_mq_req_flags_t flags);
void blk_queue_exit(struct request_queue *q);
void blk_set_pm_only(struct request_queue *q);
void blk_clear_pm_only(struct request_queue *q);
/* Asks the driver (->busy) whether its device is busy; false when it has no opinion. */
int blk_lld_busy(struct request_queue *q);
/* io_schedule(), with a timeout of half the hung-task period where one is set. */
void blk_io_schedule(void);
#ifdef CONFIG_FAIL_MAKE_REQUEST
bool should_fail_request(struct block_device *part, unsigned int bytes);
#else
static inline bool should_fail_request(struct block_device *part, unsigned int bytes)
{
	return false;
}
#endif

/* ---- plugging (block/blk-core.c) ---- */

/* A singly linked list of requests: a plug's, or one ->queue_rqs() takes. */
struct rq_list {
	struct request *head;
	struct request *tail;
};

/*
 * A task's plug (current->plug): bios submitted while it is set become
 * requests that wait on @mq_list and reach the driver together, at
 * blk_finish_plug(), when the task sleeps, or when the list grows to
 * BLK_MAX_REQUEST_COUNT. With @nr_ios > 1 the first allocation also takes
 * up to that many tags and requests at once, kept on @cached_rqs.
 */
struct blk_plug {
	struct rq_list mq_list;
	struct rq_list cached_rqs;
	/* The time stamp block accounting caches per plug; nothing sets it here. */
	u64 cur_ktime;
	unsigned short nr_ios;
	unsigned short rq_count;
	bool multiple_queues;
	bool has_elevator;
	struct list_head cb_list; /* struct blk_plug_cb, run at unplug */
};

struct blk_plug_cb;
typedef void (*blk_plug_cb_fn)(struct blk_plug_cb *, bool);
struct blk_plug_cb {
	struct list_head list;
	blk_plug_cb_fn callback;
	void *data;
};

#define BLK_MAX_REQUEST_COUNT 32
#define BLK_PLUG_FLUSH_SIZE (128 * 1024)

struct blk_plug_cb *blk_check_plugged(blk_plug_cb_fn unplug, void *data, int size);
void blk_start_plug(struct blk_plug *plug);
void blk_start_plug_nr_ios(struct blk_plug *plug, unsigned short nr_ios);
void blk_finish_plug(struct blk_plug *plug);
void __blk_flush_plug(struct blk_plug *plug, bool from_schedule);

static inline void blk_flush_plug(struct blk_plug *plug, bool async)
{
	if (plug)
		__blk_flush_plug(plug, async);
}

/* ---- the block-device "file" (block/fops.c direct I/O) ---- */

/* blkdev_rw() flags */
#define BLKDEV_RW_WRITE (1U << 0)
#define BLKDEV_RW_POLLED (1U << 1) /* IOCB_HIPRI: REQ_POLLED, poll for completion */
#define BLKDEV_RW_NOWAIT (1U << 2) /* IOCB_NOWAIT: -EAGAIN instead of sleeping for a tag */
#define BLKDEV_RW_FUA (1U << 3)	   /* IOCB_DSYNC on a device with a cache */

/* Called once per asynchronous blkdev_rw(): bytes done or -errno. */
typedef void (*blkdev_rw_done_t)(void *priv, long res);

/*
 * Direct I/O on @bdev at byte offset @pos over the caller's buffers
 * (@iov, @nr_segs), split into page-sized bio segments.
 * - @done == NULL: synchronous (submit and wait): bytes done or -errno.
 * - @done != NULL: returns -EIOCBQUEUED and calls done(priv, res) exactly
 *   once, from the completion context (task, softirq or hardirq), or
 *   returns another value at once (then done is not called): -EINVAL
 *   (offset/length not a multiple of the logical block size, or a buffer
 *   address or length not aligned to the logical block size, as O_DIRECT), 0 (read at
 *   or past the end), -ENOSPC (write at or past the end), -ENOMEM.
 * Transfers past the end of the device are truncated, as blkdev_read_iter
 * and blkdev_write_iter do.
 */
ssize_t blkdev_rw(struct block_device *bdev, loff_t pos, const struct iovec *iov,
		  unsigned long nr_segs, unsigned int flags, blkdev_rw_done_t done, void *priv);

namespace uk
{

/*
 * Finds a disk registered with add_disk() by name: "nullb0",
 * "/dev/nullb0" or "/dev/ukern/nullb0". Takes a reference (blkdev_put()
 * drops it); NULL if there is none. I/O on a device deleted meanwhile
 * fails with -ENODEV.
 */
struct block_device *blkdev_lookup(const char *name);
void blkdev_put(struct block_device *bdev);
/* Capacity in bytes. */
static inline u64 blkdev_size(struct block_device *bdev)
{
	return (u64)bdev_nr_sectors(bdev) << SECTOR_SHIFT;
}

} // namespace uk

#endif /* UK_LINUX_BLKDEV_H */
