// SPDX-License-Identifier: GPL-2.0-only
/*
 * block/blk-core.c: entering a queue (q_usage_counter), bio submission
 * and polling; submit_bio_wait() from block/bio.c.
 */
#include <uk/linux/completion.h>
#include <uk/linux/errno.h>
#include <uk/linux/sched.h>

#include "blk-mq.h"

static inline bool blk_try_enter_queue(struct request_queue *q)
{
	bool ret;

	rcu_read_lock();
	ret = percpu_ref_tryget_live_rcu(&q->q_usage_counter);
	rcu_read_unlock();
	return ret;
}

/* A reference on @q for a new request; sleeps while it is frozen. */
int blk_queue_enter(struct request_queue *q, unsigned int flags)
{
	while (!blk_try_enter_queue(q)) {
		if (flags & BLK_MQ_REQ_NOWAIT)
			return -EAGAIN;

		/*
		 * Read the freeze depth only after the failed tryget: pairs
		 * with the ordering of percpu_ref_kill() after the depth
		 * increment in blk_freeze_queue_start().
		 */
		smp_rmb();
		wait_event(q->mq_freeze_wq, !READ_ONCE(q->mq_freeze_depth) || blk_queue_dying(q));
		if (blk_queue_dying(q))
			return -ENODEV;
	}
	return 0;
}

int bio_queue_enter(struct bio *bio)
{
	struct request_queue *q = bdev_get_queue(bio->bi_bdev);

	while (!blk_try_enter_queue(q)) {
		if (bio->bi_opf & REQ_NOWAIT) {
			if (blk_queue_dying(q))
				goto dead;
			bio_wouldblock_error(bio);
			return -EAGAIN;
		}

		/* Pairs with blk_freeze_queue_start(), as in blk_queue_enter(). */
		smp_rmb();
		wait_event(q->mq_freeze_wq, !READ_ONCE(q->mq_freeze_depth) || blk_queue_dying(q));
		if (blk_queue_dying(q))
			goto dead;
	}
	return 0;
dead:
	bio->bi_status = BLK_STS_OFFLINE;
	bio_endio(bio);
	return -ENODEV;
}

void blk_queue_exit(struct request_queue *q)
{
	percpu_ref_put(&q->q_usage_counter);
}

/* Checks the bio against the device before it reaches blk-mq. */
void submit_bio_noacct(struct bio *bio)
{
	struct block_device *bdev = bio->bi_bdev;
	struct request_queue *q = bdev_get_queue(bdev);
	blk_status_t status = BLK_STS_IOERR;

	/* Polling needs poll queues; otherwise the bio is an ordinary one. */
	if ((bio->bi_opf & REQ_POLLED) && !test_bit(QUEUE_FLAG_POLL, &q->queue_flags))
		bio->bi_opf &= ~REQ_POLLED;
	bio->bi_cookie = BLK_QC_T_NONE;

	if (bio_sectors(bio) > queue_max_hw_sectors(q)) {
		status = BLK_STS_INVAL;
		goto end_io;
	}
	if (bio_end_sector(bio) > bdev_nr_sectors(bdev) && bio_op(bio) != REQ_OP_FLUSH) {
		status = BLK_STS_IOERR;
		goto end_io;
	}
	if (test_bit(GD_DEAD, &bdev->bd_disk->state)) {
		status = BLK_STS_OFFLINE;
		goto end_io;
	}

	switch (bio_op(bio)) {
	case REQ_OP_READ:
	case REQ_OP_WRITE:
	case REQ_OP_FLUSH:
	case REQ_OP_DISCARD:
		break;
	default:
		status = BLK_STS_NOTSUPP;
		goto end_io;
	}

	blk_mq_submit_bio(bio);
	return;

end_io:
	bio->bi_status = status;
	bio_endio(bio);
}

void submit_bio(struct bio *bio)
{
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
