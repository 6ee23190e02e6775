/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * block/blk-mq.h: the request path's internal helpers, shared by
 * blk-mq.cc, blk-mq-tag.cc, blk-core.cc and blkdev.cc.
 *
 * Upstream: block/blk-mq.h @ v6.12
 * Upstream: block/blk.h @ v6.12
 * Upstream: block/blk-mq-sched.h @ v6.12
 */
#ifndef UK_BLK_MQ_INTERNAL_H
#define UK_BLK_MQ_INTERNAL_H

#include <uk/linux/blk-mq.h>
#include <uk/linux/completion.h>
#include <uk/linux/blkdev.h>
#include <uk/linux/mm.h>
#include <uk/linux/percpu.h>
#include <uk/linux/rcupdate.h>
#include <uk/linux/sched.h>
#include <uk/linux/smp.h>
#include <uk/linux/timekeeping.h>

/* Asynchronous runs of a hardware queue a CPU takes before the next does. */
#define BLK_MQ_CPU_WORK_BATCH (8)

/* blk_mq_insert_request() flags */
typedef unsigned int blk_insert_t;
#define BLK_MQ_INSERT_AT_HEAD ((blk_insert_t)0x01)

struct blk_mq_alloc_data {
	/* what the caller asks for */
	struct request_queue *q;
	blk_mq_req_flags_t flags;
	unsigned int shallow_depth;
	blk_opf_t cmd_flags;
	req_flags_t rq_flags;

	/* batching: tags wanted at once, and where the spare requests wait */
	unsigned int nr_tags;
	struct rq_list *cached_rqs;

	/* in and out: the software and hardware queue used */
	struct blk_mq_ctx *ctx;
	struct blk_mq_hw_ctx *hctx;
};

/* One tag set for all hardware queues (BLK_MQ_F_TAG_HCTX_SHARED). */
static inline bool blk_mq_is_shared_tags(unsigned int flags)
{
	return flags & BLK_MQ_F_TAG_HCTX_SHARED;
}

static inline struct blk_mq_tags *blk_mq_tags_from_data(struct blk_mq_alloc_data *data)
{
	if (data->rq_flags & RQF_SCHED_TAGS)
		return data->hctx->sched_tags;
	return data->hctx->tags;
}

/* The software queue of @cpu. */
static inline struct blk_mq_ctx *__blk_mq_get_ctx(struct request_queue *q, unsigned int cpu)
{
	return per_cpu_ptr(q->queue_ctx, cpu);
}

/* This CPU's software queue. */
static inline struct blk_mq_ctx *blk_mq_get_ctx(struct request_queue *q)
{
	return __blk_mq_get_ctx(q, raw_smp_processor_id());
}

static inline enum hctx_type blk_mq_get_hctx_type(blk_opf_t opf)
{
	enum hctx_type type = HCTX_TYPE_DEFAULT;

	if (opf & REQ_POLLED)
		type = HCTX_TYPE_POLL;
	else if ((opf & REQ_OP_MASK) == REQ_OP_READ)
		type = HCTX_TYPE_READ;
	return type;
}

/* The hardware queue a software queue maps to for @opf. */
static inline struct blk_mq_hw_ctx *blk_mq_map_queue(struct request_queue *q, blk_opf_t opf,
						     struct blk_mq_ctx *ctx)
{
	return ctx->hctxs[blk_mq_get_hctx_type(opf)];
}

static inline bool blk_mq_hw_queue_mapped(struct blk_mq_hw_ctx *hctx)
{
	return hctx->nr_ctx && hctx->tags;
}

static inline struct blk_mq_hw_ctx *blk_mq_map_queue_type(struct request_queue *q,
							  enum hctx_type type, unsigned int cpu)
{
	return q->queue_hw_ctx[q->tag_set->map[type].mq_map[cpu]];
}

/*
 * Fast path: the queue is almost never stopped. The full barrier orders an
 * earlier addition to the dispatch list before the re-test: pairs with the
 * one in blk_mq_start_stopped_hw_queue() (either the dispatcher sees the
 * bit cleared, or the starter sees the new dispatch entries).
 */
static inline bool blk_mq_hctx_stopped(struct blk_mq_hw_ctx *hctx)
{
	if (likely(!test_bit(BLK_MQ_S_STOPPED, &hctx->state)))
		return false;
	smp_mb();
	return test_bit(BLK_MQ_S_STOPPED, &hctx->state);
}

static inline bool blk_mq_sched_needs_restart(struct blk_mq_hw_ctx *hctx)
{
	return test_bit(BLK_MQ_S_SCHED_RESTART, &hctx->state);
}

static inline void blk_mq_sched_mark_restart_hctx(struct blk_mq_hw_ctx *hctx)
{
	if (!test_bit(BLK_MQ_S_SCHED_RESTART, &hctx->state))
		set_bit(BLK_MQ_S_SCHED_RESTART, &hctx->state);
}

void __blk_mq_sched_restart(struct blk_mq_hw_ctx *hctx);

static inline void blk_mq_sched_restart(struct blk_mq_hw_ctx *hctx)
{
	if (blk_mq_sched_needs_restart(hctx))
		__blk_mq_sched_restart(hctx);
}

/*
 * The elevator's completion hook: no request carries RQF_USE_SCHED here
 * (there is no elevator), so there is no ->completed_request() to call.
 */
static inline void blk_mq_sched_completed_request(struct request *rq, u64 now) {}

/*
 * Dispatch budgets: a driver without ->get_budget always has one (token
 * 0); one without ->put_budget has nothing to give back.
 */
static inline void blk_mq_put_dispatch_budget(struct request_queue *q, int budget_token)
{
	if (q->mq_ops->put_budget)
		q->mq_ops->put_budget(q, budget_token);
}

static inline int blk_mq_get_dispatch_budget(struct request_queue *q)
{
	if (q->mq_ops->get_budget)
		return q->mq_ops->get_budget(q);
	return 0;
}

static inline void blk_mq_set_rq_budget_token(struct request *rq, int token)
{
	if (token < 0)
		return;

	if (rq->q->mq_ops->set_rq_budget_token)
		rq->q->mq_ops->set_rq_budget_token(rq, token);
}

static inline int blk_mq_get_rq_budget_token(struct request *rq)
{
	if (rq->q->mq_ops->get_rq_budget_token)
		return rq->q->mq_ops->get_rq_budget_token(rq);
	return -1;
}

/* Active-request accounting: only kept when the tag set is shared. */
static inline void __blk_mq_add_active_requests(struct blk_mq_hw_ctx *hctx, int val)
{
	if (blk_mq_is_shared_tags(hctx->flags))
		atomic_add(val, &hctx->queue->nr_active_requests_shared_tags);
	else
		atomic_add(val, &hctx->nr_active);
}

static inline void __blk_mq_inc_active_requests(struct blk_mq_hw_ctx *hctx)
{
	__blk_mq_add_active_requests(hctx, 1);
}

static inline void __blk_mq_sub_active_requests(struct blk_mq_hw_ctx *hctx, int val)
{
	if (blk_mq_is_shared_tags(hctx->flags))
		atomic_sub(val, &hctx->queue->nr_active_requests_shared_tags);
	else
		atomic_sub(val, &hctx->nr_active);
}

static inline void __blk_mq_dec_active_requests(struct blk_mq_hw_ctx *hctx)
{
	__blk_mq_sub_active_requests(hctx, 1);
}

static inline void blk_mq_add_active_requests(struct blk_mq_hw_ctx *hctx, int val)
{
	if (hctx->flags & BLK_MQ_F_TAG_QUEUE_SHARED)
		__blk_mq_add_active_requests(hctx, val);
}

static inline void blk_mq_inc_active_requests(struct blk_mq_hw_ctx *hctx)
{
	if (hctx->flags & BLK_MQ_F_TAG_QUEUE_SHARED)
		__blk_mq_inc_active_requests(hctx);
}

static inline void blk_mq_sub_active_requests(struct blk_mq_hw_ctx *hctx, int val)
{
	if (hctx->flags & BLK_MQ_F_TAG_QUEUE_SHARED)
		__blk_mq_sub_active_requests(hctx, val);
}

static inline void blk_mq_dec_active_requests(struct blk_mq_hw_ctx *hctx)
{
	if (hctx->flags & BLK_MQ_F_TAG_QUEUE_SHARED)
		__blk_mq_dec_active_requests(hctx);
}

static inline int __blk_mq_active_requests(struct blk_mq_hw_ctx *hctx)
{
	if (blk_mq_is_shared_tags(hctx->flags))
		return atomic_read(&hctx->queue->nr_active_requests_shared_tags);
	return atomic_read(&hctx->nr_active);
}

void blk_mq_put_tag(struct blk_mq_tags *tags, struct blk_mq_ctx *ctx, unsigned int tag);

static inline void __blk_mq_put_driver_tag(struct blk_mq_hw_ctx *hctx, struct request *rq)
{
	blk_mq_dec_active_requests(hctx);
	blk_mq_put_tag(hctx->tags, rq->mq_ctx, rq->tag);
	rq->tag = BLK_MQ_NO_TAG;
}

/*
 * Gives back a driver tag taken at dispatch. A request without a scheduler
 * tag got its driver tag at allocation and keeps it until it is freed.
 */
static inline void blk_mq_put_driver_tag(struct request *rq)
{
	if (rq->tag == (int)BLK_MQ_NO_TAG || rq->internal_tag == (int)BLK_MQ_NO_TAG)
		return;

	__blk_mq_put_driver_tag(rq->mq_hctx, rq);
}

bool __blk_mq_alloc_driver_tag(struct request *rq);

static inline bool blk_mq_get_driver_tag(struct request *rq)
{
	if (rq->tag == (int)BLK_MQ_NO_TAG && !__blk_mq_alloc_driver_tag(rq))
		return false;

	return true;
}

/*
 * Fair sharing of a tag map used by several queues: each active user may
 * hold about depth / users tags, and never fewer than 4.
 */
static inline bool hctx_may_queue(struct blk_mq_hw_ctx *hctx, struct sbitmap_queue *bt)
{
	unsigned int depth, users;

	if (!hctx || !(hctx->flags & BLK_MQ_F_TAG_QUEUE_SHARED))
		return true;

	/* A map of one tag cannot be split between users. */
	if (bt->sb.depth == 1)
		return true;

	if (blk_mq_is_shared_tags(hctx->flags)) {
		struct request_queue *q = hctx->queue;

		if (!test_bit(QUEUE_FLAG_HCTX_ACTIVE, &q->queue_flags))
			return true;
	} else {
		if (!test_bit(BLK_MQ_S_TAG_ACTIVE, &hctx->state))
			return true;
	}

	users = READ_ONCE(hctx->tags->active_queues);
	if (!users)
		return true;

	depth = max((bt->sb.depth + users - 1) / users, 4U);
	return __blk_mq_active_requests(hctx) < (int)depth;
}

static inline bool req_ref_inc_not_zero(struct request *req)
{
	return atomic_inc_not_zero(&req->ref);
}

static inline bool req_ref_put_and_test(struct request *req)
{
	WARN_ON_ONCE(atomic_read(&req->ref) <= 0);
	return atomic_dec_and_test(&req->ref);
}

static inline int req_ref_read(struct request *req)
{
	return atomic_read(&req->ref);
}

static inline void req_ref_set(struct request *req, int value)
{
	atomic_set(&req->ref, value);
}

/* block/blk.h: I/O accounting and request time stamps. */
static inline bool blk_do_io_stat(struct request *rq)
{
	return (rq->rq_flags & RQF_IO_STAT) && !blk_rq_is_passthrough(rq);
}

void update_io_ticks(struct block_device *part, unsigned long now, bool end);
unsigned int part_in_flight(struct block_device *part);

/*
 * The time for a request's stamps: read once per plug and cached there
 * (PF_BLOCK_TS says so) until the plug is flushed, which zeroes it.
 */
static inline u64 blk_time_get_ns(void)
{
	struct blk_plug *plug = current->plug;
	u64 now;

	if (!plug || !in_task())
		return ktime_get_ns();

	/* A time of exactly 0 is read again: the cost of having no valid flag. */
	now = READ_ONCE(plug->cur_ktime);
	if (!now) {
		now = ktime_get_ns();
		WRITE_ONCE(plug->cur_ktime, now);
		/*
		 * Compiler barrier: the flag follows the stamp, so whoever sees
		 * PF_BLOCK_TS (__blk_flush_plug() clears both) sees the stamp.
		 */
		barrier();
		current->flags |= PF_BLOCK_TS;
	}
	return now;
}

void __blk_mq_free_request(struct request *rq);
void blk_mq_put_rq_ref(struct request *rq);

/* Dispatch sections: RCU, or the tag set's srcu stand-in when BLOCKING. */
static inline int blk_mq_srcu_read_lock(struct blk_mq_srcu *sp)
{
	atomic_inc(&sp->readers);
	/* Order the count before reading quiesce state: pairs with blk_mq_synchronize_srcu(). */
	smp_mb__after_atomic();
	return 0;
}

static inline void blk_mq_srcu_read_unlock(struct blk_mq_srcu *sp, int idx)
{
	/* The section's accesses happen before the drop: pairs with blk_mq_synchronize_srcu(). */
	smp_mb__before_atomic();
	if (atomic_dec_and_test(&sp->readers) && wq_has_sleeper(&sp->wq))
		wake_up_all(&sp->wq);
}

static inline void blk_mq_run_dispatch_lock(struct request_queue *q, int *idx)
{
	if (q->tag_set->flags & BLK_MQ_F_BLOCKING)
		*idx = blk_mq_srcu_read_lock(&q->tag_set->srcu);
	else
		rcu_read_lock();
}

static inline void blk_mq_run_dispatch_unlock(struct request_queue *q, int idx)
{
	if (q->tag_set->flags & BLK_MQ_F_BLOCKING)
		blk_mq_srcu_read_unlock(&q->tag_set->srcu, idx);
	else
		rcu_read_unlock();
}

/*
 * Runs @dispatch_ops inside the queue's dispatch section; @check_sleep asks
 * for the might_sleep() check of a blocking tag set.
 */
#define __blk_mq_run_dispatch_ops(q, check_sleep, dispatch_ops) \
	do {                                                    \
		int __idx = 0;                                  \
		if ((q)->tag_set->flags & BLK_MQ_F_BLOCKING)    \
			might_sleep_if(check_sleep);            \
		blk_mq_run_dispatch_lock((q), &__idx);          \
		(dispatch_ops);                                 \
		blk_mq_run_dispatch_unlock((q), __idx);         \
	} while (0)

#define blk_mq_run_dispatch_ops(q, dispatch_ops) __blk_mq_run_dispatch_ops(q, true, dispatch_ops)

bool __blk_freeze_queue_start(struct request_queue *q, struct task_struct *owner);
bool __blk_mq_unfreeze_queue(struct request_queue *q, bool force_atomic);
void blk_freeze_queue(struct request_queue *q);

static inline void blk_freeze_acquire_lock(struct request_queue *q, bool disk_dead,
					   bool queue_dying)
{
	if (!disk_dead)
		rwsem_acquire(&q->io_lockdep_map, 0, 1, _RET_IP_);
	if (!queue_dying)
		rwsem_acquire(&q->q_lockdep_map, 0, 1, _RET_IP_);
}

static inline void blk_unfreeze_release_lock(struct request_queue *q, bool disk_dead,
					     bool queue_dying)
{
	if (!queue_dying)
		rwsem_release(&q->q_lockdep_map, _RET_IP_);
	if (!disk_dead)
		rwsem_release(&q->io_lockdep_map, _RET_IP_);
}

static inline bool blk_mq_can_poll(struct request_queue *q)
{
	return (q->limits.features & BLK_FEAT_POLL) && q->tag_set->map[HCTX_TYPE_POLL].nr_queues;
}

static inline void blk_wait_io(struct completion *done)
{
	/* Long I/O is no hung task: wait in pieces shorter than the hung-task timeout. */
	unsigned long timeout = sysctl_hung_task_timeout_secs * HZ / 2;

	if (timeout)
		while (!wait_for_completion_io_timeout(done, timeout))
			;
	else
		wait_for_completion_io(done);
}

/* No flush machinery (block/blk-flush.c): no request is a flush request. */
static inline bool is_flush_rq(struct request *req)
{
	return false;
}

void blk_mq_wake_waiters(struct request_queue *q);
bool blk_queue_start_drain(struct request_queue *q);
void blk_sync_queue(struct request_queue *q);
void blk_mq_exit_queue(struct request_queue *q);
void blk_mq_release(struct request_queue *q);
int blk_mq_update_nr_requests(struct request_queue *q, unsigned int nr);
struct blk_mq_tags *blk_mq_alloc_map_and_rqs(struct blk_mq_tag_set *set, unsigned int hctx_idx,
					     unsigned int depth);
void blk_mq_free_map_and_rqs(struct blk_mq_tag_set *set, struct blk_mq_tags *tags,
			     unsigned int hctx_idx);
void blk_mq_free_rqs(struct blk_mq_tag_set *set, struct blk_mq_tags *tags, unsigned int hctx_idx);
void blk_mq_free_rq_map(struct blk_mq_tags *tags);
void blk_rq_unprep_clone(struct request *rq);
int blk_rq_prep_clone(struct request *rq, struct request *rq_src, struct bio_set *bs,
		      gfp_t gfp_mask, int (*bio_ctr)(struct bio *, struct bio *, void *),
		      void *data);

/* The default nr_requests, and the largest depth scheduler tags may grow to. */
#define BLKDEV_DEFAULT_RQ 128
#define MAX_SCHED_RQ (16 * BLKDEV_DEFAULT_RQ)
void blk_mq_flush_busy_ctxs(struct blk_mq_hw_ctx *hctx, struct list_head *list);
struct request *blk_mq_dequeue_from_ctx(struct blk_mq_hw_ctx *hctx, struct blk_mq_ctx *start);
bool blk_mq_dispatch_rq_list(struct blk_mq_hw_ctx *hctx, struct list_head *list,
			     unsigned int nr_budgets);
void blk_mq_sched_dispatch_requests(struct blk_mq_hw_ctx *hctx);
void blk_mq_insert_request(struct request *rq, blk_insert_t flags);
void blk_mq_submit_bio(struct bio *bio);
void blk_mq_flush_plug_list(struct blk_plug *plug, bool from_schedule);
void blk_mq_free_plug_rqs(struct blk_plug *plug);
void blk_add_timer(struct request *req);
void blk_mq_timeout_work(struct work_struct *work);
void blk_rq_timed_out_timer(struct timer_list *t);
void blk_queue_usage_counter_release(struct percpu_ref *ref);

/* include/trace/events/block.h: the block tracepoints are not modelled. */
#define trace_block_bio_remap(bio, dev, from) \
	do {                                  \
	} while (0)

/*
 * block/blk-pm.h without CONFIG_PM: there is no runtime resume to start, so
 * a waiter only waits for the queue to be unfrozen.
 */
static inline int blk_pm_resume_queue(const bool pm, struct request_queue *q)
{
	return 1;
}

/*
 * A reference on q_usage_counter unless the queue is frozen or dying, or it
 * admits only PM requests and this is none (or the device is suspended).
 */
static inline bool blk_try_enter_queue(struct request_queue *q, bool pm)
{
	rcu_read_lock();
	if (!percpu_ref_tryget_live_rcu(&q->q_usage_counter))
		goto fail;

	/*
	 * Whoever raises pm_only makes the count visible before unfreezing
	 * the queue, so a tryget that succeeds here sees it.
	 */
	if (blk_queue_pm_only(q) && (!pm || queue_rpm_status(q) == RPM_SUSPENDED))
		goto fail_put;

	rcu_read_unlock();
	return true;

fail_put:
	blk_queue_exit(q);
fail:
	rcu_read_unlock();
	return false;
}

int __bio_queue_enter(struct request_queue *q, struct bio *bio);

static inline int bio_queue_enter(struct bio *bio)
{
	struct request_queue *q = bdev_get_queue(bio->bi_bdev);

	if (blk_try_enter_queue(q, false)) {
		rwsem_acquire_read(&q->io_lockdep_map, 0, 0, _RET_IP_);
		rwsem_release(&q->io_lockdep_map, _RET_IP_);
		return 0;
	}
	return __bio_queue_enter(q, bio);
}

/* Test hook: when set, blk_mq_run_hw_queue() calls it instead of dispatching. */
extern void (*blk_mq_run_hw_queue_hook)(struct blk_mq_hw_ctx *hctx, bool async);

extern struct workqueue_struct *kblockd_workqueue;
int kblockd_schedule_work(struct work_struct *work);
int kblockd_mod_delayed_work_on(int cpu, struct delayed_work *dwork, unsigned long delay);
/* blk_dev_init()/blk_mq_init(): kblockd and BLOCK_SOFTIRQ, once. */
void blk_mq_init_once(void);

void blk_put_queue(struct request_queue *q);
void blk_mq_cancel_work_sync(struct request_queue *q);

/* A request allocated from the reserved tags (blk_mq_alloc_request_hctx()). */
#define RQF_RESV ((req_flags_t)(1U << 13))

unsigned int blk_mq_in_flight(struct request_queue *q, struct block_device *part);
void blk_mq_in_flight_rw(struct request_queue *q, struct block_device *part,
			 unsigned int inflight[2]);
struct request *blk_mq_alloc_request_hctx(struct request_queue *q, blk_opf_t opf,
					  blk_mq_req_flags_t flags, unsigned int hctx_idx);
void blk_dump_rq_flags(struct request *rq, char *msg);

/* include/linux/blk-mq.h's: the length of the segment a request is at. */
#define bio_iovec(bio) bio_iter_iovec((bio), (bio)->bi_iter)

static inline unsigned int blk_rq_cur_bytes(const struct request *rq)
{
	if (!rq->bio)
		return 0;
	if (!bio_has_data(rq->bio)) /* dataless requests such as discard */
		return rq->bio->bi_iter.bi_size;
	return bio_iovec(rq->bio).bv_len;
}

static inline unsigned int blk_rq_cur_sectors(const struct request *rq)
{
	return blk_rq_cur_bytes(rq) >> SECTOR_SHIFT;
}

static inline void blk_mq_clear_mq_map(struct blk_mq_queue_map *qmap)
{
	int cpu;

	for_each_possible_cpu (cpu)
		qmap->mq_map[cpu] = 0;
}

/* A segment at @offset after @bprv leaves a gap the device cannot take. */
static inline bool __bvec_gap_to_prev(const struct queue_limits *lim, struct bio_vec *bprv,
				      unsigned int offset)
{
	return (offset & lim->virt_boundary_mask) ||
	       ((bprv->bv_offset + bprv->bv_len) & lim->virt_boundary_mask);
}

static inline bool bvec_gap_to_prev(const struct queue_limits *lim, struct bio_vec *bprv,
				    unsigned int offset)
{
	if (!lim->virt_boundary_mask)
		return false;
	return __bvec_gap_to_prev(lim, bprv, offset);
}

/* block/blk.h: drops the pin on a page the bio took from a user iterator. */
static inline void bio_release_page(struct bio *bio, struct page *page)
{
	if (bio_flagged(bio, BIO_PAGE_PINNED))
		unpin_user_page(page);
}

#endif /* UK_BLK_MQ_INTERNAL_H */
