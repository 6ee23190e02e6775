// SPDX-License-Identifier: GPL-2.0-only
/*
 * The block-device side that programs see: a minimal block/genhd.c
 * (gendisks, a name registry standing in for /dev), and block/fops.c
 * direct I/O (__blkdev_direct_IO_simple / __blkdev_direct_IO_async):
 * bios built over the caller's buffers, page by page, submitted to the
 * disk's request queue, completed synchronously or through a callback.
 */
#include <cstring>

#include <uk/linux/completion.h>
#include <uk/linux/err.h>
#include <uk/linux/errno.h>
#include <uk/linux/mutex.h>
#include <uk/linux/sched.h>
#include <uk/linux/slab.h>

#include <uk/linux/kstrtox.h>
#include <uk/linux/math64.h>
#include <uk/linux/part_stat.h>

#include "blk-mq.h"

static DEFINE_MUTEX(disk_list_lock);
static LIST_HEAD(disk_list);

/*
 * A gendisk for @q (block/genhd.c): the disk's own reference to @q is the
 * caller's to give.
 */
struct gendisk *__alloc_disk_node(struct request_queue *q, int node_id,
				  struct lock_class_key *lkclass)
{
	struct gendisk *disk;

	disk = (struct gendisk *)kzalloc_node(sizeof(*disk), GFP_KERNEL, node_id);
	if (!disk)
		return NULL;
	/* bdev_alloc(): the statistics of the whole disk, part0 */
	disk->uk_bdev.bd_stats = alloc_percpu(struct disk_stats);
	if (!disk->uk_bdev.bd_stats) {
		kfree(disk);
		return NULL;
	}
	disk->queue = q;
	q->disk = disk;
	INIT_LIST_HEAD(&disk->uk_list);
	atomic_set(&disk->uk_refs, 1);
	disk->uk_bdev.bd_disk = disk;
	disk->uk_bdev.bd_queue = q;
	disk->part0 = &disk->uk_bdev;
	(void)lkclass;
	return disk;
}

static void disk_release(struct gendisk *disk)
{
	/* a queue the driver keeps must not point at a freed disk */
	if (disk->queue->disk == disk)
		disk->queue->disk = NULL;
	blk_put_queue(disk->queue);
	free_percpu(disk->uk_bdev.bd_stats);
	kfree(disk);
}

static void disk_put(struct gendisk *disk)
{
	if (atomic_dec_and_test(&disk->uk_refs))
		disk_release(disk);
}

int add_disk(struct gendisk *disk)
{
	struct gendisk *d;

	mutex_lock(&disk_list_lock);
	list_for_each_entry (d, &disk_list, uk_list) {
		if (strcmp(d->disk_name, disk->disk_name) == 0) {
			mutex_unlock(&disk_list_lock);
			return -EEXIST;
		}
	}
	list_add_tail(&disk->uk_list, &disk_list);
	mutex_unlock(&disk_list_lock);

	/* device_add_disk(): a driver with ->submit_bio takes the bios itself */
	if (disk->fops && disk->fops->submit_bio)
		bdev_set_flag(disk->part0, BD_HAS_SUBMIT_BIO);
	return 0;
}

/*
 * Unpublishes the disk and waits for its I/O: new submissions fail with
 * BLK_STS_OFFLINE (GD_DEAD), in-flight ones drain through a freeze.
 */
void del_gendisk(struct gendisk *disk)
{
	struct request_queue *q = disk->queue;

	mutex_lock(&disk_list_lock);
	list_del_init(&disk->uk_list);
	mutex_unlock(&disk_list_lock);

	set_bit(GD_DEAD, &disk->state);
	blk_mq_freeze_queue(q);
	blk_mq_unfreeze_queue(q);
}

/*
 * Marks the whole disk read-only, or writable again. Writes still reach the
 * driver: submit_bio_noacct() warns once per device (bio_check_ro()).
 */
void set_disk_ro(struct gendisk *disk, bool read_only)
{
	if (read_only)
		set_bit(GD_READ_ONLY, &disk->state);
	else
		clear_bit(GD_READ_ONLY, &disk->state);
}

/*
 * The driver's reference: tears down a queue the disk owns, and frees the
 * disk when unused.
 */
void put_disk(struct gendisk *disk)
{
	if (!disk)
		return;
	if (test_bit(GD_OWNS_QUEUE, &disk->state))
		blk_mq_destroy_queue(disk->queue);
	disk_put(disk);
}

/* "nullb0", "/dev/nullb0" and "/dev/ukern/nullb0" name the same disk. */
static const char *blkdev_base_name(const char *name)
{
	static const char *const prefixes[] = { "/dev/ukern/", "/dev/" };

	for (const char *p : prefixes) {
		size_t n = strlen(p);

		if (strncmp(name, p, n) == 0)
			return name + n;
	}
	return name;
}

namespace uk
{

struct block_device *blkdev_lookup(const char *name)
{
	struct block_device *bdev = NULL;
	struct gendisk *disk;

	if (!name)
		return NULL;
	name = blkdev_base_name(name);

	mutex_lock(&disk_list_lock);
	list_for_each_entry (disk, &disk_list, uk_list) {
		if (strcmp(disk->disk_name, name) == 0) {
			atomic_inc(&disk->uk_refs);
			bdev = disk->part0;
			break;
		}
	}
	mutex_unlock(&disk_list_lock);
	return bdev;
}

void blkdev_put(struct block_device *bdev)
{
	if (bdev)
		disk_put(bdev->bd_disk);
}

} // namespace uk

/* ---- direct I/O (block/fops.c) ---- */

/*
 * One direct I/O: its first bio is embedded (the front_pad of
 * blkdev_dio_pool), further bios are counted in @ref.
 */
struct blkdev_dio {
	blkdev_rw_done_t done;
	void *priv;
	struct task_struct *waiter;
	size_t size;
	atomic_t ref;
	blk_status_t status;
	bool is_sync;
	bool should_dirty;
	struct completion *wait;
	/* must be last: the first bio and its inline vecs */
	struct bio bio;
};

static struct bio_set blkdev_dio_pool;

/* blkdev_init(): the module_init of block/fops.c, on first use. */
static struct bio_set *blkdev_dio_pool_get(void)
{
	static const bool ready = [] {
		BUG_ON(bioset_init(&blkdev_dio_pool, 4, offsetof(struct blkdev_dio, bio),
				   BIOSET_NEED_BVECS));
		return true;
	}();

	(void)ready;
	return &blkdev_dio_pool;
}

static void blkdev_dio_complete(struct blkdev_dio *dio)
{
	long ret;

	if (likely(!dio->status))
		ret = dio->size;
	else
		ret = blk_status_to_errno(dio->status);

	if (dio->is_sync) {
		/* The waiter owns and frees the dio once woken. */
		dio->size = ret;
		complete(dio->wait);
		return;
	}
	dio->done(dio->priv, ret);
	bio_put(&dio->bio);
}

static void blkdev_bio_end_io(struct bio *bio)
{
	struct blkdev_dio *dio = (struct blkdev_dio *)bio->bi_private;

	if (bio->bi_status && !READ_ONCE(dio->status))
		cmpxchg(&dio->status, (blk_status_t)0, bio->bi_status);

	if (bio != &dio->bio)
		bio_put(bio);
	/* The last bio completes the dio: fully ordered, sees every status store. */
	if (atomic_dec_and_test(&dio->ref))
		blkdev_dio_complete(dio);
}

/* Segments needed for @iov from @skip on, up to @max bytes (page granular). */
static unsigned int blkdev_iov_npages(const struct iovec *iov, unsigned long nr_segs, size_t max)
{
	unsigned int n = 0;
	unsigned long i;

	for (i = 0; i < nr_segs && max; i++) {
		unsigned long base = (unsigned long)iov[i].iov_base;
		size_t len = min(iov[i].iov_len, max);

		if (!len)
			continue;
		n += ((base + len + PAGE_SIZE - 1) >> PAGE_SHIFT) - (base >> PAGE_SHIFT);
		max -= len;
		if (n >= BIO_MAX_VECS)
			return BIO_MAX_VECS;
	}
	return n;
}

struct blkdev_iter {
	const struct iovec *iov;
	unsigned long nr_segs;
	size_t iov_off;
	size_t count;
};

/* Adds up to @max_bytes from the iterator to @bio, one page piece at a time. */
static void blkdev_fill_bio(struct bio *bio, struct blkdev_iter *it, size_t max_bytes)
{
	while (it->count && max_bytes) {
		const struct iovec *v = it->iov;
		char *addr = (char *)v->iov_base + it->iov_off;
		size_t left = min(v->iov_len - it->iov_off, it->count);
		size_t len;

		if (!left) {
			it->iov++;
			it->nr_segs--;
			it->iov_off = 0;
			continue;
		}
		len = min(min(left, max_bytes), (size_t)(PAGE_SIZE - offset_in_page(addr)));
		if (bio_add_page(bio, virt_to_page(addr), len, offset_in_page(addr)) != (int)len)
			break;
		it->iov_off += len;
		it->count -= len;
		max_bytes -= len;
	}
}

/* Gives back the last @bytes of @bio to the iterator (block alignment). */
static void blkdev_trim_bio(struct bio *bio, struct blkdev_iter *it, unsigned int bytes)
{
	unsigned int left = bytes;

	while (left) {
		struct bio_vec *bv = &bio->bi_io_vec[bio->bi_vcnt - 1];
		unsigned int take = min(left, bv->bv_len);

		bv->bv_len -= take;
		bio->bi_iter.bi_size -= take;
		if (!bv->bv_len)
			bio->bi_vcnt--;
		left -= take;
	}
	it->count += bytes;
	while (bytes) {
		size_t back;

		if (!it->iov_off) {
			it->iov--;
			it->nr_segs++;
			it->iov_off = it->iov->iov_len;
			continue;
		}
		back = min((size_t)bytes, it->iov_off);
		it->iov_off -= back;
		bytes -= back;
	}
}

ssize_t blkdev_rw(struct block_device *bdev, loff_t pos, const struct iovec *iov,
		  unsigned long nr_segs, unsigned int flags, blkdev_rw_done_t done, void *priv)
{
	struct request_queue *q;
	const bool is_write = flags & BLKDEV_RW_WRITE;
	bool is_sync;
	blk_opf_t opf =
		is_write ? (blk_opf_t)(REQ_OP_WRITE | REQ_SYNC | REQ_IDLE) : (blk_opf_t)REQ_OP_READ;
	struct blkdev_iter it = { .iov = iov, .nr_segs = nr_segs, .iov_off = 0, .count = 0 };
	struct completion wait;
	struct blkdev_dio *dio;
	struct bio *bio;
	size_t max_bio_bytes;
	unsigned int nr_pages, lbs;
	unsigned long i;
	loff_t size;
	ssize_t ret;

	if (!bdev || (nr_segs && !iov))
		return -EINVAL;
	q = bdev_get_queue(bdev);
	lbs = bdev_logical_block_size(bdev);

	for (i = 0; i < nr_segs; i++) {
		/*
		 * iov_iter_is_aligned() against the dma alignment, taken as
		 * the logical block size: null_blk copies whole blocks within
		 * one page.
		 */
		if (((unsigned long)iov[i].iov_base | iov[i].iov_len) & (lbs - 1))
			return -EINVAL;
		if (iov[i].iov_len > (size_t)SSIZE_MAX - it.count)
			return -EINVAL;
		it.count += iov[i].iov_len;
	}

	/* blkdev_dio_invalid(): offset and length in whole logical blocks. */
	if (pos < 0 || ((pos | it.count) & (lbs - 1)))
		return -EINVAL;

	size = (loff_t)uk::blkdev_size(bdev);
	if (pos >= size)
		return is_write ? -ENOSPC : 0;
	if ((loff_t)it.count > size - pos)
		it.count = size - pos;
	if (!it.count)
		return 0;

	if (flags & BLKDEV_RW_POLLED)
		opf |= REQ_POLLED;
	if (flags & BLKDEV_RW_NOWAIT)
		opf |= REQ_NOWAIT;
	if (is_write && (flags & BLKDEV_RW_FUA))
		opf |= REQ_FUA;

	max_bio_bytes = (size_t)queue_max_hw_sectors(q) << SECTOR_SHIFT;
	max_bio_bytes = round_down(max_bio_bytes, lbs);

	nr_pages = blkdev_iov_npages(it.iov, it.nr_segs, min(it.count, max_bio_bytes));
	bio = bio_alloc_bioset(bdev, nr_pages, opf, GFP_KERNEL, blkdev_dio_pool_get());
	if (!bio)
		return -ENOMEM;
	dio = container_of(bio, struct blkdev_dio, bio);
	dio->done = done;
	dio->priv = priv;
	dio->size = it.count;
	dio->status = BLK_STS_OK;
	dio->is_sync = !done;
	dio->should_dirty = false;
	dio->waiter = NULL;
	dio->wait = NULL;
	atomic_set(&dio->ref, 1);
	/* Once the last bio is submitted an async dio may be gone: use the local. */
	is_sync = dio->is_sync;
	if (is_sync) {
		init_completion(&wait);
		dio->wait = &wait;
	}

	for (;;) {
		size_t chunk = min(it.count, max_bio_bytes);

		bio->bi_iter.bi_sector = pos >> SECTOR_SHIFT;
		bio->bi_private = dio;
		bio->bi_end_io = blkdev_bio_end_io;
		blkdev_fill_bio(bio, &it, chunk);
		/* A fill cut short by the vec limit must still end on a block boundary. */
		if (bio->bi_iter.bi_size & (lbs - 1))
			blkdev_trim_bio(bio, &it, bio->bi_iter.bi_size & (lbs - 1));
		if (unlikely(!bio->bi_iter.bi_size)) {
			/* Cannot happen with 512-byte aligned segments; fail rather than spin. */
			bio->bi_status = BLK_STS_INVAL;
			it.count = 0;
			bio_endio(bio);
			break;
		}
		pos += bio->bi_iter.bi_size;

		if (!it.count) {
			submit_bio(bio);
			break;
		}
		atomic_inc(&dio->ref);
		submit_bio(bio);

		nr_pages = blkdev_iov_npages(it.iov, it.nr_segs, min(it.count, max_bio_bytes));
		bio = bio_alloc_bioset(bdev, nr_pages, opf, GFP_KERNEL, &blkdev_dio_pool);
		if (!bio) {
			/* What was submitted completes; report the failure for the rest. */
			cmpxchg(&dio->status, (blk_status_t)0, BLK_STS_RESOURCE);
			if (atomic_dec_and_test(&dio->ref))
				blkdev_dio_complete(dio);
			if (is_sync)
				break;
			return -EIOCBQUEUED;
		}
	}

	if (!is_sync)
		return -EIOCBQUEUED;

	if (opf & REQ_POLLED) {
		while (!completion_done(&wait)) {
			bio_poll(&dio->bio, NULL, 0);
			cond_resched();
		}
	}
	wait_for_completion_io(&wait);
	ret = (ssize_t)(long)dio->size;
	bio_put(&dio->bio);
	return ret;
}

/* ---- I/O statistics: block/genhd.c, block/blk-sysfs.c ---- */

/* The sums of every CPU's counters (in_flight aside). */
static void part_stat_read_all(struct block_device *part, struct disk_stats *stat)
{
	int cpu;

	memset(stat, 0, sizeof(struct disk_stats));
	for_each_possible_cpu (cpu) {
		struct disk_stats *ptr = per_cpu_ptr(part->bd_stats, cpu);
		int group;

		for (group = 0; group < NR_STAT_GROUPS; group++) {
			stat->nsecs[group] += ptr->nsecs[group];
			stat->sectors[group] += ptr->sectors[group];
			stat->ios[group] += ptr->ios[group];
			stat->merges[group] += ptr->merges[group];
		}

		stat->io_ticks += ptr->io_ticks;
	}
}

/*
 * The I/Os started and not yet done on @part. One CPU's count may go
 * negative (an I/O that ends on another CPU than it started): only the sum
 * means something, and a racy sum below 0 reads as 0.
 */
unsigned int part_in_flight(struct block_device *part)
{
	unsigned int inflight = 0;
	int cpu;

	for_each_possible_cpu (cpu) {
		inflight += part_stat_local_read_cpu(part, in_flight[0], cpu) +
			    part_stat_local_read_cpu(part, in_flight[1], cpu);
	}
	if ((int)inflight < 0)
		inflight = 0;

	return inflight;
}

/*
 * /sys/block/<dev>/stat: 17 fields, the layout of
 * Documentation/block/stat.rst. Times are in milliseconds; a busy device
 * first has its io_ticks brought up to now.
 */
ssize_t part_stat_show(struct block_device *bdev, char *buf)
{
	struct disk_stats stat;
	unsigned int inflight;

	inflight = part_in_flight(bdev);
	if (inflight) {
		part_stat_lock();
		update_io_ticks(bdev, jiffies, true);
		part_stat_unlock();
	}
	part_stat_read_all(bdev, &stat);
	return sprintf(
		buf,
		"%8lu %8lu %8llu %8u "
		"%8lu %8lu %8llu %8u "
		"%8u %8u %8u "
		"%8lu %8lu %8llu %8u "
		"%8lu %8u"
		"\n",
		stat.ios[STAT_READ], stat.merges[STAT_READ],
		(unsigned long long)stat.sectors[STAT_READ],
		(unsigned int)div_u64(stat.nsecs[STAT_READ], NSEC_PER_MSEC), stat.ios[STAT_WRITE],
		stat.merges[STAT_WRITE], (unsigned long long)stat.sectors[STAT_WRITE],
		(unsigned int)div_u64(stat.nsecs[STAT_WRITE], NSEC_PER_MSEC), inflight,
		jiffies_to_msecs(stat.io_ticks),
		(unsigned int)div_u64(stat.nsecs[STAT_READ] + stat.nsecs[STAT_WRITE] +
					      stat.nsecs[STAT_DISCARD] + stat.nsecs[STAT_FLUSH],
				      NSEC_PER_MSEC),
		stat.ios[STAT_DISCARD], stat.merges[STAT_DISCARD],
		(unsigned long long)stat.sectors[STAT_DISCARD],
		(unsigned int)div_u64(stat.nsecs[STAT_DISCARD], NSEC_PER_MSEC),
		stat.ios[STAT_FLUSH], (unsigned int)div_u64(stat.nsecs[STAT_FLUSH], NSEC_PER_MSEC));
}

/* /sys/block/<dev>/queue/iostats: 1 while the queue accounts I/O. */
ssize_t queue_iostats_show(struct gendisk *disk, char *page)
{
	return sprintf(page, "%u\n", !!(disk->queue->limits.features & BLK_FEAT_IO_STAT));
}

/*
 * Turns the accounting of @disk's queue on or off ("1"/"0"), with the queue
 * frozen as a limits update is: a request allocated before the change keeps
 * the RQF_IO_STAT it got, so its start and end are counted alike.
 */
ssize_t queue_iostats_store(struct gendisk *disk, const char *page, size_t count)
{
	struct request_queue *q = disk->queue;
	unsigned long val;
	int ret;

	ret = kstrtoul(page, 10, &val);
	if (ret)
		return ret;

	blk_mq_freeze_queue(q);
	if (val)
		q->limits.features |= BLK_FEAT_IO_STAT;
	else
		q->limits.features &= ~BLK_FEAT_IO_STAT;
	blk_mq_unfreeze_queue(q);
	return count;
}
