// SPDX-License-Identifier: GPL-2.0-only
/*
 * block/blk-core.c: the status table, entering a queue (q_usage_counter),
 * bio submission, plugging and polling; submit_bio_wait() from block/bio.c.
 *
 * Upstream: block/blk-core.c @ v6.12
 * Upstream: block/bio.c @ v6.12
 */
#include <array>

#include <uk/linux/completion.h>
#include <uk/linux/error-injection.h>
#include <uk/linux/errno.h>
#include <uk/linux/fault-inject.h>
#include <uk/linux/init.h>
#include <uk/linux/sched.h>
#include <uk/linux/slab.h>

#include <uk/linux/part_stat.h>

#include "blk-mq.h"
#include "blk-off.h"

void blk_queue_flag_set(unsigned int flag, struct request_queue *q)
{
	set_bit(flag, &q->queue_flags);
}

void blk_queue_flag_clear(unsigned int flag, struct request_queue *q)
{
	clear_bit(flag, &q->queue_flags);
}

/*
 * The errno and the name of each BLK_STS_* status, indexed by status. The
 * table's member is named errno as in the kernel; the C library's errno
 * macro is put aside around the table and the three functions that read it.
 * Value 18 has no status: its entry is zero, as the kernel's (written out,
 * since g++ takes array designators only in order and without gaps).
 */
#pragma push_macro("errno")
#undef errno
static const struct {
	int errno;
	const char *name;
} blk_errors[] = {
	[BLK_STS_OK] = { 0, "" },
	[BLK_STS_NOTSUPP] = { -EOPNOTSUPP, "operation not supported" },
	[BLK_STS_TIMEOUT] = { -ETIMEDOUT, "timeout" },
	[BLK_STS_NOSPC] = { -ENOSPC, "critical space allocation" },
	[BLK_STS_TRANSPORT] = { -ENOLINK, "recoverable transport" },
	[BLK_STS_TARGET] = { -EREMOTEIO, "critical target" },
	[BLK_STS_RESV_CONFLICT] = { -EBADE, "reservation conflict" },
	[BLK_STS_MEDIUM] = { -ENODATA, "critical medium" },
	[BLK_STS_PROTECTION] = { -EILSEQ, "protection" },
	[BLK_STS_RESOURCE] = { -ENOMEM, "kernel resource" },
	[BLK_STS_IOERR] = { -EIO, "I/O" },
	[BLK_STS_DM_REQUEUE] = { -EREMCHG, "dm internal retry" },
	[BLK_STS_AGAIN] = { -EAGAIN, "nonblocking retry" },
	[BLK_STS_DEV_RESOURCE] = { -EBUSY, "device resource" },
	[BLK_STS_ZONE_OPEN_RESOURCE] = { -ETOOMANYREFS, "open zones exceeded" },
	[BLK_STS_ZONE_ACTIVE_RESOURCE] = { -EOVERFLOW, "active zones exceeded" },
	[BLK_STS_OFFLINE] = { -ENODEV, "device offline" },
	[BLK_STS_DURATION_LIMIT] = { -ETIME, "duration limit exceeded" },
	[18] = { 0, NULL },
	[BLK_STS_INVAL] = { -EINVAL, "invalid" },
};

blk_status_t errno_to_blk_status(int errno)
{
	int i;

	for (i = 0; i < ARRAY_SIZE(blk_errors); i++) {
		if (blk_errors[i].errno == errno)
			return (__force blk_status_t)i;
	}

	return BLK_STS_IOERR;
}

int blk_status_to_errno(blk_status_t status)
{
	int idx = (__force int)status;

	if (WARN_ON_ONCE(idx >= ARRAY_SIZE(blk_errors)))
		return -EIO;
	return blk_errors[idx].errno;
}

const char *blk_status_to_str(blk_status_t status)
{
	int idx = (__force int)status;

	if (WARN_ON_ONCE(idx >= ARRAY_SIZE(blk_errors)))
		return "<null>";
	return blk_errors[idx].name;
}
#pragma pop_macro("errno")

/*
 * The name of each REQ_OP_*, indexed by op. C++ has no sparse array
 * designators, so the table is filled at compile time, one op per line.
 */
#define REQ_OP_NAME(name) t[REQ_OP_##name] = #name
static constexpr std::array<const char *, REQ_OP_LAST> blk_op_name = [] {
	std::array<const char *, REQ_OP_LAST> t{};

	REQ_OP_NAME(READ);
	REQ_OP_NAME(WRITE);
	REQ_OP_NAME(FLUSH);
	REQ_OP_NAME(DISCARD);
	REQ_OP_NAME(SECURE_ERASE);
	REQ_OP_NAME(ZONE_RESET);
	REQ_OP_NAME(ZONE_RESET_ALL);
	REQ_OP_NAME(ZONE_OPEN);
	REQ_OP_NAME(ZONE_CLOSE);
	REQ_OP_NAME(ZONE_FINISH);
	REQ_OP_NAME(ZONE_APPEND);
	REQ_OP_NAME(WRITE_ZEROES);
	REQ_OP_NAME(DRV_IN);
	REQ_OP_NAME(DRV_OUT);
	return t;
}();
#undef REQ_OP_NAME

/* "READ" for REQ_OP_READ and so on; "UNKNOWN" for a value that is no op. */
const char *blk_op_str(enum req_op op)
{
	const char *op_str = "UNKNOWN";

	if (op < ARRAY_SIZE(blk_op_name) && blk_op_name[op])
		op_str = blk_op_name[op];

	return op_str;
}

/* Stops the queue's timeout timer and waits for its timeout work. */
void blk_sync_queue(struct request_queue *q)
{
	del_timer_sync(&q->timeout);
	cancel_work_sync(&q->timeout_work);
}

/*
 * A dying queue: freeze it so that no new request passes blk_queue_enter(),
 * kick the tag waiters, and wake the enterers so that they see DYING.
 */
bool blk_queue_start_drain(struct request_queue *q)
{
	bool freeze = __blk_freeze_queue_start(q, current);
	if (queue_is_mq(q))
		blk_mq_wake_waiters(q);
	/* blk_queue_enter() sleepers check DYING again. */
	wake_up_all(&q->mq_freeze_wq);

	return freeze;
}

void blk_set_pm_only(struct request_queue *q)
{
	atomic_inc(&q->pm_only);
}

void blk_clear_pm_only(struct request_queue *q)
{
	int pm_only;

	pm_only = atomic_dec_return(&q->pm_only);
	WARN_ON_ONCE(pm_only < 0);
	if (pm_only == 0)
		wake_up_all(&q->mq_freeze_wq);
}

/*
 * A reference on @q for a new request; sleeps while it is frozen, or while
 * it admits only PM requests and @flags has no BLK_MQ_REQ_PM.
 */
int blk_queue_enter(struct request_queue *q, blk_mq_req_flags_t flags)
{
	const bool pm = flags & BLK_MQ_REQ_PM;

	while (!blk_try_enter_queue(q, pm)) {
		if (flags & BLK_MQ_REQ_NOWAIT)
			return -EAGAIN;

		/*
		 * Read the freeze depth and the dying flag only after the
		 * failed tryget saw the ref dead: pairs with the ordering of
		 * percpu_ref_kill() after the depth increment in
		 * __blk_freeze_queue_start().
		 */
		smp_rmb();
		wait_event(q->mq_freeze_wq,
			   (!READ_ONCE(q->mq_freeze_depth) && blk_pm_resume_queue(pm, q)) ||
				   blk_queue_dying(q));
		if (blk_queue_dying(q))
			return -ENODEV;
	}

	rwsem_acquire_read(&q->q_lockdep_map, 0, 0, _RET_IP_);
	rwsem_release(&q->q_lockdep_map, _RET_IP_);
	return 0;
}

/* bio_queue_enter()'s slow path: the queue is frozen or being torn down. */
int __bio_queue_enter(struct request_queue *q, struct bio *bio)
{
	while (!blk_try_enter_queue(q, false)) {
		struct gendisk *disk = bio->bi_bdev->bd_disk;

		if (bio->bi_opf & REQ_NOWAIT) {
			if (test_bit(GD_DEAD, &disk->state))
				goto dead;
			bio_wouldblock_error(bio);
			return -EAGAIN;
		}

		/* Pairs with __blk_freeze_queue_start(), as in blk_queue_enter(). */
		smp_rmb();
		wait_event(q->mq_freeze_wq,
			   (!READ_ONCE(q->mq_freeze_depth) && blk_pm_resume_queue(false, q)) ||
				   test_bit(GD_DEAD, &disk->state));
		if (test_bit(GD_DEAD, &disk->state))
			goto dead;
	}

	rwsem_acquire_read(&q->io_lockdep_map, 0, 0, _RET_IP_);
	rwsem_release(&q->io_lockdep_map, _RET_IP_);
	return 0;
dead:
	bio_io_error(bio);
	return -ENODEV;
}

void blk_queue_exit(struct request_queue *q)
{
	percpu_ref_put(&q->q_usage_counter);
}

/*
 * Takes a reference to @q's structure, unless @q is dying; blk_put_queue()
 * gives it back.
 */
bool blk_get_queue(struct request_queue *q)
{
	if (unlikely(blk_queue_dying(q)))
		return false;
	refcount_inc(&q->refs);
	return true;
}

#ifdef CONFIG_FAIL_MAKE_REQUEST

static DECLARE_FAULT_ATTR(fail_make_request);

static int __init setup_fail_make_request(char *str)
{
	return setup_fault_attr(&fail_make_request, str);
}
__setup("fail_make_request=", setup_fail_make_request);

/*
 * Whether to fail I/O of @bytes to @part: only a device marked make-it-fail,
 * and then as the fail_make_request attributes decide.
 */
bool should_fail_request(struct block_device *part, unsigned int bytes)
{
	return bdev_test_flag(part, BD_MAKE_IT_FAIL) && should_fail(&fail_make_request, bytes);
}

#endif /* CONFIG_FAIL_MAKE_REQUEST */

/* A write to a read-only device goes ahead, with one warning per device. */
static inline void bio_check_ro(struct bio *bio)
{
	if (op_is_write(bio_op(bio)) && bdev_read_only(bio->bi_bdev)) {
		if (op_is_flush(bio->bi_opf) && !bio_sectors(bio))
			return;

		if (bdev_test_flag(bio->bi_bdev, BD_RO_WARNED))
			return;

		bdev_set_flag(bio->bi_bdev, BD_RO_WARNED);

		/* A stacked driver's device made read-only under it gets here. */
		pr_warn("Trying to write to read-only block-device %pg\n", bio->bi_bdev);
	}
}

static noinline int should_fail_bio(struct bio *bio)
{
	if (should_fail_request(bdev_whole(bio->bi_bdev), bio->bi_iter.bi_size))
		return -EIO;
	return 0;
}
ALLOW_ERROR_INJECTION(should_fail_bio, ERRNO);

/* -EIO for a bio that reaches past the end of its device. */
static inline int bio_check_eod(struct bio *bio)
{
	sector_t maxsector = bdev_nr_sectors(bio->bi_bdev);
	unsigned int nr_sectors = bio_sectors(bio);

	if (nr_sectors &&
	    (nr_sectors > maxsector || bio->bi_iter.bi_sector > maxsector - nr_sectors)) {
		pr_info_ratelimited("%s: attempt to access beyond end of device\n"
				    "%pg: rw=%d, sector=%llu, nr_sectors = %u limit=%llu\n",
				    current->comm, bio->bi_bdev, bio->bi_opf,
				    bio->bi_iter.bi_sector, nr_sectors, maxsector);
		return -EIO;
	}
	return 0;
}

/* A partition's sector n is sector n + bd_start_sect of its disk. */
static int blk_partition_remap(struct bio *bio)
{
	struct block_device *p = bio->bi_bdev;

	if (unlikely(should_fail_request(p, bio->bi_iter.bi_size)))
		return -EIO;
	if (bio_sectors(bio)) {
		bio->bi_iter.bi_sector += p->bd_start_sect;
		trace_block_bio_remap(bio, p->bd_dev, bio->bi_iter.bi_sector - p->bd_start_sect);
	}
	bio_set_flag(bio, BIO_REMAPPED);
	return 0;
}

/*
 * One bio to its driver, under a plug of its own (which also caches the
 * time stamps of its request): blk-mq, or the ->submit_bio of a bio-based
 * (stacking) driver inside the queue's usage reference.
 */
static void __submit_bio(struct bio *bio)
{
	struct blk_plug plug;

	if (unlikely(!blk_crypto_bio_prep(&bio)))
		return;

	blk_start_plug(&plug);

	if (!bdev_test_flag(bio->bi_bdev, BD_HAS_SUBMIT_BIO)) {
		blk_mq_submit_bio(bio);
	} else if (likely(bio_queue_enter(bio) == 0)) {
		struct gendisk *disk = bio->bi_bdev->bd_disk;

		if ((bio->bi_opf & REQ_POLLED) && !(disk->queue->limits.features & BLK_FEAT_POLL)) {
			bio->bi_status = BLK_STS_NOTSUPP;
			bio_endio(bio);
		} else {
			disk->fops->submit_bio(bio);
		}
		blk_queue_exit(disk->queue);
	}

	blk_finish_plug(&plug);
}

/*
 * Submits @bio and, one at a time, every bio that the ->submit_bio calls
 * submit meanwhile: they are collected on current->bio_list instead of
 * recursing. [0] gathers what the running ->submit_bio submits; [1] holds
 * what was still pending when it started. After each call the new bios go
 * first, those for other (lower) queues ahead of those for the same queue,
 * then the older ones.
 */
static void __submit_bio_noacct(struct bio *bio)
{
	struct bio_list bio_list_on_stack[2];

	BUG_ON(bio->bi_next);

	bio_list_init(&bio_list_on_stack[0]);
	current->bio_list = bio_list_on_stack;

	do {
		struct request_queue *q = bdev_get_queue(bio->bi_bdev);
		struct bio_list lower, same;

		/* A fresh list for what this bio's driver submits. */
		bio_list_on_stack[1] = bio_list_on_stack[0];
		bio_list_init(&bio_list_on_stack[0]);

		__submit_bio(bio);

		/* Split the new bios by level... */
		bio_list_init(&lower);
		bio_list_init(&same);
		while ((bio = bio_list_pop(&bio_list_on_stack[0])) != NULL)
			if (q == bdev_get_queue(bio->bi_bdev))
				bio_list_add(&same, bio);
			else
				bio_list_add(&lower, bio);

		/* ...and take the lowest level first. */
		bio_list_merge(&bio_list_on_stack[0], &lower);
		bio_list_merge(&bio_list_on_stack[0], &same);
		bio_list_merge(&bio_list_on_stack[0], &bio_list_on_stack[1]);
	} while ((bio = bio_list_pop(&bio_list_on_stack[0])));

	current->bio_list = NULL;
}

/* The same for a blk-mq disk, whose submission adds no bios of its own. */
static void __submit_bio_noacct_mq(struct bio *bio)
{
	struct bio_list bio_list[2] = {};

	current->bio_list = bio_list;

	do {
		__submit_bio(bio);
	} while ((bio = bio_list_pop(&bio_list[0])));

	current->bio_list = NULL;
}

/*
 * Submits a checked bio. Within a ->submit_bio (current->bio_list set) the
 * bio only joins the list: one driver call is active at a time per task,
 * which bounds the stack of stacked devices.
 */
void submit_bio_noacct_nocheck(struct bio *bio)
{
	blk_cgroup_bio_start(bio);
	blkcg_bio_issue_init(bio);

	if (!bio_flagged(bio, BIO_TRACE_COMPLETION)) {
		trace_block_bio_queue(bio);
		/* queued is traced: its completion will be too */
		bio_set_flag(bio, BIO_TRACE_COMPLETION);
	}

	if (current->bio_list)
		bio_list_add(&current->bio_list[0], bio);
	else if (!bdev_test_flag(bio->bi_bdev, BD_HAS_SUBMIT_BIO))
		__submit_bio_noacct_mq(bio);
	else
		__submit_bio_noacct(bio);
}

/*
 * A zone append must start a sequential zone and fit in it and in the
 * device's append limit; it is never merged. No device here is zoned.
 */
static inline blk_status_t blk_check_zone_append(struct request_queue *q, struct bio *bio)
{
	int nr_sectors = bio_sectors(bio);

	if (!bdev_is_zoned(bio->bi_bdev))
		return BLK_STS_NOTSUPP;

	if (!bdev_is_zone_start(bio->bi_bdev, bio->bi_iter.bi_sector))
		return BLK_STS_IOERR;

	/* Splitting it at a zone boundary would scatter the data. */
	if (nr_sectors > q->limits.chunk_sectors)
		return BLK_STS_IOERR;

	/* Nor may it be split for its size. */
	if (nr_sectors > queue_max_zone_append_sectors(q))
		return BLK_STS_IOERR;

	bio->bi_opf |= REQ_NOMERGE;

	return BLK_STS_OK;
}

/* An atomic write is one unit: within the queue's largest, a multiple of its smallest. */
static blk_status_t blk_validate_atomic_write_op_size(struct request_queue *q, struct bio *bio)
{
	if (bio->bi_iter.bi_size > queue_atomic_write_unit_max_bytes(q))
		return BLK_STS_INVAL;

	if (bio->bi_iter.bi_size % queue_atomic_write_unit_min_bytes(q))
		return BLK_STS_INVAL;

	return BLK_STS_OK;
}

/* Checks the bio against the device before it reaches blk-mq. */
void submit_bio_noacct(struct bio *bio)
{
	struct block_device *bdev = bio->bi_bdev;
	struct request_queue *q = bdev_get_queue(bdev);
	blk_status_t status = BLK_STS_IOERR;

	might_sleep();

	/* A device that cannot take REQ_NOWAIT refuses such a bio outright. */
	if ((bio->bi_opf & REQ_NOWAIT) && !bdev_nowait(bdev))
		goto not_supported;

	if (should_fail_bio(bio))
		goto end_io;
	bio_check_ro(bio);
	if (!bio_flagged(bio, BIO_REMAPPED)) {
		if (unlikely(bio_check_eod(bio)))
			goto end_io;
		if (bdev_is_partition(bdev) && unlikely(blk_partition_remap(bio)))
			goto end_io;
	}

	/* Polling needs poll queues; otherwise the bio is an ordinary one. */
	if ((bio->bi_opf & REQ_POLLED) && !test_bit(QUEUE_FLAG_POLL, &q->queue_flags))
		bio->bi_opf &= ~REQ_POLLED;
	bio->bi_cookie = BLK_QC_T_NONE;

	if (bio_sectors(bio) > queue_max_hw_sectors(q)) {
		status = BLK_STS_INVAL;
		goto end_io;
	}
	if (test_bit(GD_DEAD, &bdev->bd_disk->state)) {
		status = BLK_STS_OFFLINE;
		goto end_io;
	}

	switch (bio_op(bio)) {
	case REQ_OP_READ:
		break;
	case REQ_OP_WRITE:
		if (bio->bi_opf & REQ_ATOMIC) {
			status = blk_validate_atomic_write_op_size(q, bio);
			if (status != BLK_STS_OK)
				goto end_io;
		}
		break;
	case REQ_OP_FLUSH:
	case REQ_OP_DISCARD:
		break;
	case REQ_OP_ZONE_APPEND:
		status = blk_check_zone_append(q, bio);
		if (status != BLK_STS_OK)
			goto end_io;
		break;
	default:
		goto not_supported;
	}

	submit_bio_noacct_nocheck(bio);
	return;

not_supported:
	status = BLK_STS_NOTSUPP;
end_io:
	bio->bi_status = status;
	bio_endio(bio);
}

/* A bio without a priority of its own takes the task's. */
static void bio_set_ioprio(struct bio *bio)
{
	if (IOPRIO_PRIO_CLASS(bio->bi_ioprio) == IOPRIO_CLASS_NONE)
		bio->bi_ioprio = get_current_ioprio();
	blkcg_set_ioprio(bio);
}

void submit_bio(struct bio *bio)
{
	bio_set_ioprio(bio);
	submit_bio_noacct(bio);
}

static void submit_bio_wait_endio(struct bio *bio)
{
	complete((struct completion *)bio->bi_private);
}

int submit_bio_wait(struct bio *bio)
{
	struct completion done;

	init_completion(&done);
	bio->bi_private = &done;
	bio->bi_end_io = submit_bio_wait_endio;
	bio->bi_opf |= REQ_SYNC;
	submit_bio(bio);

	if (bio->bi_opf & REQ_POLLED) {
		while (!completion_done(&done)) {
			bio_poll(bio, NULL, 0);
			cond_resched();
		}
	}
	wait_for_completion_io(&done);

	return blk_status_to_errno(bio->bi_status);
}

/* ---- plugging ---- */

/*
 * Starts a plug on the current task, for up to @nr_ios requests allocated
 * in one go. A task that already has a plug keeps it: nested plugs are
 * no-ops, and only the outermost blk_finish_plug() flushes.
 */
void blk_start_plug_nr_ios(struct blk_plug *plug, unsigned short nr_ios)
{
	struct task_struct *tsk = current;

	if (tsk->plug)
		return;

	plug->cur_ktime = 0;
	rq_list_init(&plug->mq_list);
	rq_list_init(&plug->cached_rqs);
	plug->nr_ios = min_t(unsigned short, nr_ios, BLK_MAX_REQUEST_COUNT);
	plug->rq_count = 0;
	plug->multiple_queues = false;
	plug->has_elevator = false;
	INIT_LIST_HEAD(&plug->cb_list);

	/*
	 * Only this task reads tsk->plug, and a sleep flushes through
	 * sched_submit_work() on the same task: no ordering is needed.
	 */
	tsk->plug = plug;
}

void blk_start_plug(struct blk_plug *plug)
{
	blk_start_plug_nr_ios(plug, 1);
}

static void flush_plug_callbacks(struct blk_plug *plug, bool from_schedule)
{
	LIST_HEAD(callbacks);

	while (!list_empty(&plug->cb_list)) {
		list_splice_init(&plug->cb_list, &callbacks);

		while (!list_empty(&callbacks)) {
			struct blk_plug_cb *cb =
				list_first_entry(&callbacks, struct blk_plug_cb, list);

			list_del(&cb->list);
			cb->callback(cb, from_schedule);
		}
	}
}

/*
 * A stacking driver's unplug callback: the one registered with @unplug and
 * @data on the current plug, or a new zeroed one of @size bytes. NULL
 * when the task has no plug (or the allocation fails).
 */
struct blk_plug_cb *blk_check_plugged(blk_plug_cb_fn unplug, void *data, int size)
{
	struct blk_plug *plug = current->plug;
	struct blk_plug_cb *cb;

	if (!plug)
		return NULL;

	list_for_each_entry (cb, &plug->cb_list, list)
		if (cb->callback == unplug && cb->data == data)
			return cb;

	/* No match yet: add a fresh callback. */
	BUG_ON(size < (int)sizeof(*cb));
	cb = (struct blk_plug_cb *)kzalloc(size, GFP_ATOMIC);
	if (cb) {
		cb->data = data;
		cb->callback = unplug;
		list_add(&cb->list, &plug->cb_list);
	}
	return cb;
}

void __blk_flush_plug(struct blk_plug *plug, bool from_schedule)
{
	if (!list_empty(&plug->cb_list))
		flush_plug_callbacks(plug, from_schedule);
	blk_mq_flush_plug_list(plug, from_schedule);
	/*
	 * Cached requests hold queue references: give them back even when
	 * the task is only going to sleep, or a freeze would wait for it.
	 */
	if (unlikely(!rq_list_empty(&plug->cached_rqs)))
		blk_mq_free_plug_rqs(plug);

	plug->cur_ktime = 0;
	current->flags &= ~PF_BLOCK_TS;
}

void blk_finish_plug(struct blk_plug *plug)
{
	if (plug == current->plug) {
		__blk_flush_plug(plug, false);
		current->plug = NULL;
	}
}

/*
 * Polls the hw queue a REQ_POLLED bio was issued on (its cookie); the
 * caller must keep the bio alive.
 */
int bio_poll(struct bio *bio, struct io_comp_batch *iob, unsigned int flags)
{
	blk_qc_t cookie = READ_ONCE(bio->bi_cookie);
	struct block_device *bdev;
	struct request_queue *q;
	int ret = 0;

	bdev = READ_ONCE(bio->bi_bdev);
	if (!bdev)
		return 0;

	q = bdev_get_queue(bdev);
	if (cookie == BLK_QC_T_NONE || !test_bit(QUEUE_FLAG_POLL, &q->queue_flags))
		return 0;

	if (!percpu_ref_tryget(&q->q_usage_counter))
		return 0;
	ret = blk_mq_poll(q, cookie, iob, flags);
	blk_queue_exit(q);
	return ret;
}

/*
 * Adds the jiffies since @part's last stamp to its io_ticks if it was busy
 * meanwhile (I/O in flight, or an I/O ending now), and moves the stamp to
 * @now; then the same for the whole disk of a partition. Of racing callers
 * only the one that moves the stamp adds.
 */
void update_io_ticks(struct block_device *part, unsigned long now, bool end)
{
	unsigned long stamp;
again:
	stamp = READ_ONCE(part->bd_stamp);
	if (unlikely(time_after(now, stamp)) && likely(try_cmpxchg(&part->bd_stamp, &stamp, now)) &&
	    (end || part_in_flight(part)))
		__part_stat_add(part, io_ticks, now - stamp);

	if (bdev_is_partition(part)) {
		part = bdev_whole(part);
		goto again;
	}
}

unsigned long bdev_start_io_acct(struct block_device *bdev, enum req_op op,
				 unsigned long start_time)
{
	part_stat_lock();
	update_io_ticks(bdev, start_time, false);
	part_stat_local_inc(bdev, in_flight[op_is_write(op)]);
	part_stat_unlock();

	return start_time;
}

/*
 * Starts the accounting of @bio for a bio-based driver; the time returned
 * goes back to bio_end_io_acct().
 */
unsigned long bio_start_io_acct(struct bio *bio)
{
	return bdev_start_io_acct(bio->bi_bdev, bio_op(bio), jiffies);
}

void bdev_end_io_acct(struct block_device *bdev, enum req_op op, unsigned int sectors,
		      unsigned long start_time)
{
	const int sgrp = op_stat_group(op);
	unsigned long now = READ_ONCE(jiffies);
	unsigned long duration = now - start_time;

	part_stat_lock();
	update_io_ticks(bdev, now, true);
	part_stat_inc(bdev, ios[sgrp]);
	part_stat_add(bdev, sectors[sgrp], sectors);
	part_stat_add(bdev, nsecs[sgrp], jiffies_to_nsecs(duration));
	part_stat_local_dec(bdev, in_flight[op_is_write(op)]);
	part_stat_unlock();
}

void bio_end_io_acct_remapped(struct bio *bio, unsigned long start_time,
			      struct block_device *orig_bdev)
{
	bdev_end_io_acct(orig_bdev, bio_op(bio), bio_sectors(bio), start_time);
}

/*
 * Whether the driver reports its device busy, for stacking drivers that
 * hold back I/O meanwhile; 0 when it has no ->busy.
 */
int blk_lld_busy(struct request_queue *q)
{
	if (queue_is_mq(q) && q->mq_ops->busy)
		return q->mq_ops->busy(q);

	return 0;
}

/* Sleeps for I/O; with a hung-task period set, wakes at half of it. */
void blk_io_schedule(void)
{
	/* Half the period, so that a long wait is not reported as a hang. */
	unsigned long timeout = sysctl_hung_task_timeout_secs * HZ / 2;

	if (timeout)
		io_schedule_timeout(timeout);
	else
		io_schedule();
}
