// SPDX-License-Identifier: GPL-2.0-only
/*
 * block/blk-mq.c: tag sets, request queues, hardware and software
 * contexts, the request life cycle (allocation, direct issue, dispatch,
 * requeue, completion in the submitter's softirq context, timeouts),
 * freezing, quiescing and polling. No I/O scheduler: a bio becomes one
 * request, issued directly or, under a plug, batched with others and
 * handed to ->queue_rqs() at unplug (docs/blk-mq.md, "The path of one I/O").
 * Also the bits of block/blk-timeout.c and blk-softirq it uses.
 *
 * Upstream: block/blk-mq.c @ v6.12
 * Upstream: block/blk-mq-sched.c @ v6.12
 * Upstream: block/blk-timeout.c @ v6.12
 * Upstream: block/blk-core.c @ v6.12
 */
#include <mutex>

#include <uk/linux/completion.h>
#include <uk/linux/cpuhotplug.h>
#include <uk/linux/delay.h>
#include <uk/linux/err.h>
#include <uk/linux/errno.h>
#include <uk/linux/init.h>
#include <uk/linux/interrupt.h>
#include <uk/linux/jiffies.h>
#include <uk/linux/kmemleak.h>
#include <uk/linux/kernel.h>
#include <uk/linux/log2.h>
#include <uk/linux/prefetch.h>
#include <uk/linux/rculist.h>
#include <uk/linux/sched.h>
#include <uk/linux/slab.h>
#include <uk/linux/suspend.h>

#include <uk/linux/part_stat.h>

#include "blk-mq-tag.h"
#include "blk-mq.h"
#include "blk-off.h"
#include "elevator.h"

struct workqueue_struct *kblockd_workqueue;
void (*blk_mq_run_hw_queue_hook)(struct blk_mq_hw_ctx *hctx, bool async);

/* Requests completed in BLOCK_SOFTIRQ, per CPU (list_head + irqs off, as in v5.10). */
static DEFINE_PER_CPU(struct list_head, blk_cpu_done);

/* Serializes adding and removing hctxs' cpuhp instances. */
static DEFINE_MUTEX(blk_mq_cpuhp_lock);

static void blk_done_softirq(void);
static int blk_softirq_cpu_dead(unsigned int cpu);
static int blk_mq_hctx_notify_dead(unsigned int cpu, struct hlist_node *node);
static int blk_mq_hctx_notify_online(unsigned int cpu, struct hlist_node *node);
static int blk_mq_hctx_notify_offline(unsigned int cpu, struct hlist_node *node);
static int blk_hctx_poll(struct request_queue *q, struct blk_mq_hw_ctx *hctx,
			 struct io_comp_batch *iob, unsigned int flags);

/* sched_submit_work(): a task about to sleep sends its plugged requests. */
static void blk_sched_flush_plug(struct task_struct *tsk)
{
	blk_flush_plug(tsk->plug, true);
}

/*
 * The subsys_initcall of block/blk-mq.c: each CPU's completion list, the
 * BLOCK_SOFTIRQ handler and the CPU hotplug states. A completion reaches
 * another CPU by smp_call_function_single(), so there is no csd to set up.
 */
static int __init blk_mq_init(void)
{
	int i;

	for_each_possible_cpu (i)
		INIT_LIST_HEAD(&per_cpu(blk_cpu_done, i));
	open_softirq(BLOCK_SOFTIRQ, blk_done_softirq);

	cpuhp_setup_state_nocalls(CPUHP_BLOCK_SOFTIRQ_DEAD, "block/softirq:dead", NULL,
				  blk_softirq_cpu_dead);
	cpuhp_setup_state_multi(CPUHP_BLK_MQ_DEAD, "block/mq:dead", NULL, blk_mq_hctx_notify_dead);
	cpuhp_setup_state_multi(CPUHP_AP_BLK_MQ_ONLINE, "block/mq:online",
				blk_mq_hctx_notify_online, blk_mq_hctx_notify_offline);
	return 0;
}

/*
 * Runs blk_mq_init() and what blk_dev_init() (block/blk-core.c) sets up
 * for blk-mq, once, before the first tag set.
 */
void blk_mq_init_once(void)
{
	static std::once_flag once;

	std::call_once(once, [] {
		WARN_ON_ONCE(blk_mq_init());
		kblockd_workqueue = alloc_workqueue("kblockd", WQ_MEM_RECLAIM | WQ_HIGHPRI, 0);
		BUG_ON(!kblockd_workqueue);
		uk::sched_flush_plug_hook = blk_sched_flush_plug;
	});
}

int kblockd_schedule_work(struct work_struct *work)
{
	return queue_work(kblockd_workqueue, work);
}

int kblockd_mod_delayed_work_on(int cpu, struct delayed_work *dwork, unsigned long delay)
{
	return mod_delayed_work_on(cpu, kblockd_workqueue, dwork, delay);
}

/* ---- software queues: pending bits and insertion ---- */

static bool blk_mq_hctx_has_pending(struct blk_mq_hw_ctx *hctx)
{
	return !list_empty_careful(&hctx->dispatch) || sbitmap_any_bit_set(&hctx->ctx_map) ||
	       blk_mq_sched_has_work(hctx);
}

static void blk_mq_hctx_mark_pending(struct blk_mq_hw_ctx *hctx, struct blk_mq_ctx *ctx)
{
	const int bit = ctx->index_hw[hctx->type];

	if (!sbitmap_test_bit(&hctx->ctx_map, bit))
		sbitmap_set_bit(&hctx->ctx_map, bit);
}

static void blk_mq_hctx_clear_pending(struct blk_mq_hw_ctx *hctx, struct blk_mq_ctx *ctx)
{
	const int bit = ctx->index_hw[hctx->type];

	sbitmap_clear_bit(&hctx->ctx_map, bit);
}

/* ---- in-flight counts ---- */

struct mq_inflight {
	struct block_device *part;
	unsigned int inflight[2];
};

/*
 * Counts the started, accounted requests by direction: all of the disk's
 * when @mi->part is the whole disk, else those of that partition.
 */
static bool blk_mq_check_inflight(struct request *rq, void *priv)
{
	struct mq_inflight *mi = (struct mq_inflight *)priv;

	if (rq->part && blk_do_io_stat(rq) &&
	    (!bdev_is_partition(mi->part) || rq->part == mi->part) &&
	    blk_mq_rq_state(rq) == MQ_RQ_IN_FLIGHT)
		mi->inflight[rq_data_dir(rq)]++;

	return true;
}

unsigned int blk_mq_in_flight(struct request_queue *q, struct block_device *part)
{
	struct mq_inflight mi = { .part = part };

	blk_mq_queue_tag_busy_iter(q, blk_mq_check_inflight, &mi);

	return mi.inflight[0] + mi.inflight[1];
}

void blk_mq_in_flight_rw(struct request_queue *q, struct block_device *part,
			 unsigned int inflight[2])
{
	struct mq_inflight mi = { .part = part };

	blk_mq_queue_tag_busy_iter(q, blk_mq_check_inflight, &mi);
	inflight[0] = mi.inflight[0];
	inflight[1] = mi.inflight[1];
}

/* Puts @rq on the hctx dispatch list, issued before anything else. */
static void blk_mq_request_bypass_insert(struct request *rq, blk_insert_t flags)
{
	struct blk_mq_hw_ctx *hctx = rq->mq_hctx;

	spin_lock(&hctx->lock);
	if (flags & BLK_MQ_INSERT_AT_HEAD)
		list_add(&rq->queuelist, &hctx->dispatch);
	else
		list_add_tail(&rq->queuelist, &hctx->dispatch);
	spin_unlock(&hctx->lock);
}

void blk_mq_insert_request(struct request *rq, blk_insert_t flags)
{
	struct blk_mq_ctx *ctx = rq->mq_ctx;
	struct blk_mq_hw_ctx *hctx = rq->mq_hctx;

	if (flags & BLK_MQ_INSERT_AT_HEAD) {
		/* Requeued requests go first (no scheduler to ask). */
		blk_mq_request_bypass_insert(rq, flags);
		return;
	}
	spin_lock(&ctx->lock);
	list_add_tail(&rq->queuelist, &ctx->rq_lists[hctx->type]);
	blk_mq_hctx_mark_pending(hctx, ctx);
	spin_unlock(&ctx->lock);
}

struct flush_busy_ctx_data {
	struct blk_mq_hw_ctx *hctx;
	struct list_head *list;
};

static bool flush_busy_ctx(struct sbitmap *sb, unsigned int bitnr, void *data)
{
	struct flush_busy_ctx_data *flush_data = (struct flush_busy_ctx_data *)data;
	struct blk_mq_hw_ctx *hctx = flush_data->hctx;
	struct blk_mq_ctx *ctx = hctx->ctxs[bitnr];
	enum hctx_type type = (enum hctx_type)hctx->type;

	spin_lock(&ctx->lock);
	list_splice_tail_init(&ctx->rq_lists[type], flush_data->list);
	sbitmap_clear_bit(sb, bitnr);
	spin_unlock(&ctx->lock);
	return true;
}

/* Moves every software queue's requests for @hctx onto @list. */
void blk_mq_flush_busy_ctxs(struct blk_mq_hw_ctx *hctx, struct list_head *list)
{
	struct flush_busy_ctx_data data = {
		.hctx = hctx,
		.list = list,
	};

	sbitmap_for_each_set (&hctx->ctx_map, flush_busy_ctx, &data)
		;
}

struct dispatch_rq_data {
	struct blk_mq_hw_ctx *hctx;
	struct request *rq;
};

/* Takes the first request of one software queue; stops the walk once it has one. */
static bool dispatch_rq_from_ctx(struct sbitmap *sb, unsigned int bitnr, void *data)
{
	struct dispatch_rq_data *dispatch_data = (struct dispatch_rq_data *)data;
	struct blk_mq_hw_ctx *hctx = dispatch_data->hctx;
	struct blk_mq_ctx *ctx = hctx->ctxs[bitnr];
	enum hctx_type type = (enum hctx_type)hctx->type;

	spin_lock(&ctx->lock);
	if (!list_empty(&ctx->rq_lists[type])) {
		dispatch_data->rq = list_entry_rq(ctx->rq_lists[type].next);
		list_del_init(&dispatch_data->rq->queuelist);
		if (list_empty(&ctx->rq_lists[type]))
			sbitmap_clear_bit(sb, bitnr);
	}
	spin_unlock(&ctx->lock);

	return !dispatch_data->rq;
}

/*
 * One request from the software queues of @hctx, looking at @start first
 * and then at the ones after it; NULL when they are all empty.
 */
struct request *blk_mq_dequeue_from_ctx(struct blk_mq_hw_ctx *hctx, struct blk_mq_ctx *start)
{
	unsigned off = start ? start->index_hw[hctx->type] : 0;
	struct dispatch_rq_data data = {
		.hctx = hctx,
		.rq = NULL,
	};

	__sbitmap_for_each_set(&hctx->ctx_map, off, dispatch_rq_from_ctx, &data);

	return data.rq;
}

/* ---- request allocation and freeing ---- */

/* The start (and allocation) time of a request about to be used. */
static inline void blk_mq_rq_time_init(struct request *rq, u64 alloc_time_ns)
{
	if (blk_mq_need_time_stamp(rq))
		rq->start_time_ns = blk_time_get_ns();
	else
		rq->start_time_ns = 0;

#ifdef CONFIG_BLK_RQ_ALLOC_TIME
	if (blk_queue_rq_alloc_time(rq->q))
		rq->alloc_time_ns = alloc_time_ns ?: rq->start_time_ns;
	else
		rq->alloc_time_ns = 0;
#endif
}

static struct request *blk_mq_rq_ctx_init(struct blk_mq_alloc_data *data, struct blk_mq_tags *tags,
					  unsigned int tag)
{
	struct blk_mq_ctx *ctx = data->ctx;
	struct blk_mq_hw_ctx *hctx = data->hctx;
	struct request_queue *q = data->q;
	struct request *rq = tags->static_rqs[tag];

	rq->q = q;
	rq->mq_ctx = ctx;
	WRITE_ONCE(rq->mq_hctx, hctx);
	rq->cmd_flags = data->cmd_flags;

	if (data->flags & BLK_MQ_REQ_PM)
		data->rq_flags |= RQF_PM;
	if (blk_queue_io_stat(q))
		data->rq_flags |= RQF_IO_STAT;
	rq->rq_flags = data->rq_flags;

	rq->tag = tag;
	rq->internal_tag = BLK_MQ_NO_TAG;
	rq->timeout = 0;
	rq->__data_len = 0;
	rq->__sector = (sector_t)-1;
	rq->bio = rq->biotail = NULL;

	rq->part = NULL;
	rq->io_start_time_ns = 0;
	rq->stats_sectors = 0;
	rq->nr_phys_segments = 0;
	rq->end_io = NULL;
	rq->end_io_data = NULL;

	blk_crypto_rq_set_defaults(rq);
	INIT_LIST_HEAD(&rq->queuelist);
	WRITE_ONCE(rq->deadline, 0);
	req_ref_set(rq, 1);
	return rq;
}

/*
 * Up to data->nr_tags requests from one bitmap word: the first is returned,
 * the rest wait on data->cached_rqs. Each holds a q_usage_counter reference;
 * the caller took the first.
 */
static inline struct request *__blk_mq_alloc_requests_batch(struct blk_mq_alloc_data *data)
{
	unsigned int tag, tag_offset;
	struct blk_mq_tags *tags;
	struct request *rq;
	unsigned long tag_mask;
	int i, nr = 0;

	tag_mask = blk_mq_get_tags(data, data->nr_tags, &tag_offset);
	if (unlikely(!tag_mask))
		return NULL;

	tags = blk_mq_tags_from_data(data);
	for (i = 0; tag_mask; i++) {
		if (!(tag_mask & (1UL << i)))
			continue;
		tag = tag_offset + i;
		prefetch(tags->static_rqs[tag]);
		tag_mask &= ~(1UL << i);
		rq = blk_mq_rq_ctx_init(data, tags, tag);
		rq_list_add_head(data->cached_rqs, rq);
		nr++;
	}
	if (!(data->rq_flags & RQF_SCHED_TAGS))
		blk_mq_add_active_requests(data->hctx, nr);
	percpu_ref_get_many(&data->q->q_usage_counter, nr - 1);
	data->nr_tags -= nr;

	return rq_list_pop(data->cached_rqs);
}

static struct request *__blk_mq_alloc_requests(struct blk_mq_alloc_data *data)
{
	struct request_queue *q = data->q;
	u64 alloc_time_ns = 0;
	struct request *rq;
	unsigned int tag;

	/* alloc_time_ns covers the waits for depth and tags */
	if (blk_queue_rq_alloc_time(q))
		alloc_time_ns = blk_time_get_ns();

	if (data->cmd_flags & REQ_NOWAIT)
		data->flags |= BLK_MQ_REQ_NOWAIT;

retry:
	data->ctx = blk_mq_get_ctx(q);
	data->hctx = blk_mq_map_queue(q, data->cmd_flags, data->ctx);

	if (!(data->rq_flags & RQF_SCHED_TAGS))
		blk_mq_tag_busy(data->hctx);

	/* A plug that expects more I/O takes a word's worth of tags at once. */
	if (data->nr_tags > 1) {
		rq = __blk_mq_alloc_requests_batch(data);
		if (rq) {
			blk_mq_rq_time_init(rq, alloc_time_ns);
			return rq;
		}
		data->nr_tags = 1;
	}

	tag = blk_mq_get_tag(data);
	if (tag == BLK_MQ_NO_TAG) {
		if (data->flags & BLK_MQ_REQ_NOWAIT)
			return NULL;
		/* The hctx went inactive under us: give the CPU a moment, retry. */
		msleep(3);
		goto retry;
	}

	if (!(data->rq_flags & RQF_SCHED_TAGS))
		blk_mq_inc_active_requests(data->hctx);
	rq = blk_mq_rq_ctx_init(data, blk_mq_tags_from_data(data), tag);
	blk_mq_rq_time_init(rq, alloc_time_ns);
	return rq;
}

/* Fills the plug's request cache (plug->nr_ios requests) and returns the first. */
static struct request *blk_mq_rq_cache_fill(struct request_queue *q, struct blk_plug *plug,
					    blk_opf_t opf, blk_mq_req_flags_t flags)
{
	struct blk_mq_alloc_data data = {
		.q = q,
		.flags = flags,
		.cmd_flags = opf,
		.nr_tags = plug->nr_ios,
		.cached_rqs = &plug->cached_rqs,
	};
	struct request *rq;

	if (blk_queue_enter(q, flags))
		return NULL;

	plug->nr_ios = 1;

	rq = __blk_mq_alloc_requests(&data);
	if (unlikely(!rq))
		blk_queue_exit(q);
	return rq;
}

static struct request *blk_mq_alloc_cached_request(struct request_queue *q, blk_opf_t opf,
						   blk_mq_req_flags_t flags)
{
	struct blk_plug *plug = current->plug;
	struct request *rq;

	if (!plug)
		return NULL;

	if (rq_list_empty(&plug->cached_rqs)) {
		if (plug->nr_ios == 1)
			return NULL;
		rq = blk_mq_rq_cache_fill(q, plug, opf, flags);
		if (!rq)
			return NULL;
	} else {
		rq = rq_list_peek(&plug->cached_rqs);
		if (!rq || rq->q != q)
			return NULL;

		if (blk_mq_get_hctx_type(opf) != rq->mq_hctx->type)
			return NULL;
		if (op_is_flush(rq->cmd_flags) != op_is_flush(opf))
			return NULL;

		rq_list_pop(&plug->cached_rqs);
		blk_mq_rq_time_init(rq, 0);
	}

	rq->cmd_flags = opf;
	INIT_LIST_HEAD(&rq->queuelist);
	return rq;
}

struct request *blk_mq_alloc_request(struct request_queue *q, blk_opf_t opf,
				     blk_mq_req_flags_t flags)
{
	struct request *rq;

	rq = blk_mq_alloc_cached_request(q, opf, flags);
	if (!rq) {
		struct blk_mq_alloc_data data = {
			.q = q,
			.flags = flags,
			.cmd_flags = opf,
			.nr_tags = 1,
		};
		int ret;

		ret = blk_queue_enter(q, flags);
		if (ret)
			return (struct request *)ERR_PTR(ret);

		rq = __blk_mq_alloc_requests(&data);
		if (!rq)
			goto out_queue_exit;
	}
	rq->__data_len = 0;
	rq->__sector = (sector_t)-1;
	rq->bio = rq->biotail = NULL;
	return rq;
out_queue_exit:
	blk_queue_exit(q);
	return (struct request *)ERR_PTR(-EWOULDBLOCK);
}

/* Whether @cpu's software queue feeds @hctx (for @hctx's map type). */
static bool blk_mq_cpu_mapped_to_hctx(unsigned int cpu, const struct blk_mq_hw_ctx *hctx)
{
	struct blk_mq_hw_ctx *mapped_hctx =
		blk_mq_map_queue_type(hctx->queue, (enum hctx_type)hctx->type, cpu);

	return mapped_hctx == hctx;
}

/*
 * A reserved request on hardware queue @hctx_idx, for commands that belong to
 * one queue. The software queue is that of the first CPU mapped to the hctx.
 */
struct request *blk_mq_alloc_request_hctx(struct request_queue *q, blk_opf_t opf,
					  blk_mq_req_flags_t flags, unsigned int hctx_idx)
{
	struct blk_mq_alloc_data data = {
		.q = q,
		.flags = flags,
		.cmd_flags = opf,
		.nr_tags = 1,
	};
	u64 alloc_time_ns = 0;
	struct request *rq;
	unsigned int cpu;
	unsigned int tag;
	int ret;

	/* alloc_time_ns covers the waits for depth and tags */
	if (blk_queue_rq_alloc_time(q))
		alloc_time_ns = blk_time_get_ns();

	/* A sleeping tag wait could wake up on another hctx: no waiting here. */
	if (WARN_ON_ONCE(!(flags & BLK_MQ_REQ_NOWAIT)) ||
	    WARN_ON_ONCE(!(flags & BLK_MQ_REQ_RESERVED)))
		return (struct request *)ERR_PTR(-EINVAL);

	if (hctx_idx >= q->nr_hw_queues)
		return (struct request *)ERR_PTR(-EIO);

	ret = blk_queue_enter(q, flags);
	if (ret)
		return (struct request *)ERR_PTR(ret);

	/* An hctx no CPU maps to has no software queue to allocate from. */
	ret = -EXDEV;
	data.hctx = q->queue_hw_ctx[hctx_idx];
	if (!blk_mq_hw_queue_mapped(data.hctx))
		goto out_queue_exit;
	for_each_online_cpu (cpu)
		if (blk_mq_cpu_mapped_to_hctx(cpu, data.hctx))
			break;
	if (cpu >= nr_cpu_ids)
		goto out_queue_exit;
	data.ctx = per_cpu_ptr(q->queue_ctx, cpu);

	if (q->elevator)
		data.rq_flags |= RQF_SCHED_TAGS;
	else
		blk_mq_tag_busy(data.hctx);

	if (flags & BLK_MQ_REQ_RESERVED)
		data.rq_flags |= RQF_RESV;

	ret = -EWOULDBLOCK;
	tag = blk_mq_get_tag(&data);
	if (tag == BLK_MQ_NO_TAG)
		goto out_queue_exit;
	if (!(data.rq_flags & RQF_SCHED_TAGS))
		blk_mq_inc_active_requests(data.hctx);
	rq = blk_mq_rq_ctx_init(&data, blk_mq_tags_from_data(&data), tag);
	blk_mq_rq_time_init(rq, alloc_time_ns);
	rq->__data_len = 0;
	rq->__sector = (sector_t)-1;
	rq->bio = rq->biotail = NULL;
	return rq;

out_queue_exit:
	blk_queue_exit(q);
	return (struct request *)ERR_PTR(ret);
}

void __blk_mq_free_request(struct request *rq)
{
	struct request_queue *q = rq->q;
	struct blk_mq_ctx *ctx = rq->mq_ctx;
	struct blk_mq_hw_ctx *hctx = rq->mq_hctx;
	const int sched_tag = rq->internal_tag;

	WRITE_ONCE(rq->mq_hctx, NULL);
	if (rq->tag != (int)BLK_MQ_NO_TAG) {
		blk_mq_dec_active_requests(hctx);
		blk_mq_put_tag(hctx->tags, ctx, rq->tag);
	}
	if (sched_tag != (int)BLK_MQ_NO_TAG)
		blk_mq_put_tag(hctx->sched_tags, ctx, sched_tag);
	blk_mq_sched_restart(hctx);
	blk_queue_exit(q);
}

/*
 * Ends the scheduler's and the zone code's hold on @rq; with neither here it
 * clears nothing, but keeps the kernel's call sites.
 */
static void blk_mq_finish_request(struct request *rq)
{
	struct request_queue *q = rq->q;

	blk_zone_finish_request(rq);

	if (rq->rq_flags & RQF_USE_SCHED) {
		q->elevator->type->ops.finish_request(rq);
		/* A flush may end twice: finish it only once. */
		rq->rq_flags &= ~RQF_USE_SCHED;
	}
}

void blk_mq_free_request(struct request *rq)
{
	struct request_queue *q = rq->q;

	blk_mq_finish_request(rq);

	if (unlikely(laptop_mode && !blk_rq_is_passthrough(rq)))
		laptop_io_completion(q->disk->bdi);

	rq_qos_done(q, rq);

	WRITE_ONCE(rq->state, MQ_RQ_IDLE);
	if (req_ref_put_and_test(rq))
		__blk_mq_free_request(rq);
}

/* Drops an iterator's reference; the last one frees the request. */
void blk_mq_put_rq_ref(struct request *rq)
{
	if (req_ref_put_and_test(rq))
		__blk_mq_free_request(rq);
}

/* Prints @rq's flags, position and bios at KERN_INFO, after @msg. */
void blk_dump_rq_flags(struct request *rq, char *msg)
{
	printk(KERN_INFO "%s: dev %s: flags=%llx\n", msg,
	       rq->q->disk ? rq->q->disk->disk_name : "?",
	       (__force unsigned long long)rq->cmd_flags);

	printk(KERN_INFO "  sector %llu, nr/cnr %u/%u\n", (unsigned long long)blk_rq_pos(rq),
	       blk_rq_sectors(rq), blk_rq_cur_sectors(rq));
	printk(KERN_INFO "  bio %p, biotail %p, len %u\n", rq->bio, rq->biotail, blk_rq_bytes(rq));
}

/* ---- completion ---- */

static void blk_account_io_completion(struct request *req, unsigned int bytes)
{
	if (req->part && blk_do_io_stat(req)) {
		const int sgrp = op_stat_group(req_op(req));

		part_stat_lock();
		part_stat_add(req->part, sectors[sgrp], bytes >> 9);
		part_stat_unlock();
	}
}

static void req_bio_endio(struct request *rq, struct bio *bio, unsigned int nbytes,
			  blk_status_t error)
{
	if (unlikely(error))
		bio->bi_status = error;

	bio_advance(bio, nbytes);
	if (bio->bi_iter.bi_size == 0)
		bio_endio(bio);
}

/*
 * Completes @nr_bytes of @req's bios (each fully done bio gets bio_endio)
 * and returns true while bytes remain.
 */
static void blk_print_req_error(struct request *req, blk_status_t status)
{
	printk_ratelimited(KERN_ERR "%s error, dev %s, sector %llu op 0x%x:(%s) flags 0x%x "
				    "phys_seg %u prio class %u\n",
			   blk_status_to_str(status), req->q->disk ? req->q->disk->disk_name : "?",
			   blk_rq_pos(req), (__force u32)req_op(req), blk_op_str(req_op(req)),
			   (__force u32)(req->cmd_flags & ~REQ_OP_MASK), req->nr_phys_segments,
			   IOPRIO_PRIO_CLASS(req_get_ioprio(req)));
}

bool blk_update_request(struct request *req, blk_status_t error, unsigned int nr_bytes)
{
	bool quiet = req->rq_flags & RQF_QUIET;
	unsigned int total_bytes = 0;

	if (!req->bio)
		return false;

	/* a queue without a disk (the tests' bare queues) is never dead */
	if (unlikely(error && !blk_rq_is_passthrough(req) && !quiet) &&
	    !(req->q->disk && test_bit(GD_DEAD, &req->q->disk->state)))
		blk_print_req_error(req, error);

	blk_account_io_completion(req, nr_bytes);

	while (req->bio) {
		struct bio *bio = req->bio;
		unsigned int bio_bytes = min(bio->bi_iter.bi_size, nr_bytes);

		if (bio_bytes == bio->bi_iter.bi_size)
			req->bio = bio->bi_next;

		req_bio_endio(req, bio, bio_bytes, error);

		total_bytes += bio_bytes;
		nr_bytes -= bio_bytes;
		if (!nr_bytes)
			break;
	}

	if (!req->bio) {
		req->__data_len = 0;
		return false;
	}

	req->__data_len -= total_bytes;
	req->__sector += total_bytes >> SECTOR_SHIFT;
	return true;
}

/* Frees the bios of the clone @rq, one at a time from its head. */
void blk_rq_unprep_clone(struct request *rq)
{
	struct bio *bio;

	while ((bio = rq->bio) != NULL) {
		rq->bio = bio->bi_next;

		bio_put(bio);
	}
}

/*
 * Fills @rq with clones of @rq_src's bios, allocated from @bs on the disk of
 * @rq's queue; @bio_ctr, when given, sets up each clone (non-zero fails it).
 * The clones share @rq_src's pages: @rq must complete before @rq_src.
 * 0, or -ENOMEM with no clone left behind.
 */
int blk_rq_prep_clone(struct request *rq, struct request *rq_src, struct bio_set *bs,
		      gfp_t gfp_mask, int (*bio_ctr)(struct bio *, struct bio *, void *),
		      void *data)
{
	struct bio *bio, *bio_src;

	__rq_for_each_bio(bio_src, rq_src)
	{
		bio = bio_alloc_clone(rq->q->disk->part0, bio_src, gfp_mask, bs);
		if (!bio)
			goto free_and_out;

		if (bio_ctr && bio_ctr(bio, bio_src, data))
			goto free_and_out;

		if (rq->bio) {
			rq->biotail->bi_next = bio;
			rq->biotail = bio;
		} else {
			rq->bio = rq->biotail = bio;
		}
		bio = NULL;
	}

	/* The clone covers the same sectors, in as many segments. */
	rq->__sector = blk_rq_pos(rq_src);
	rq->__data_len = blk_rq_bytes(rq_src);
	rq->nr_phys_segments = rq_src->nr_phys_segments;

	if (rq->bio && blk_crypto_rq_bio_prep(rq, rq->bio, gfp_mask) < 0)
		goto free_and_out;

	return 0;

free_and_out:
	if (bio)
		bio_put(bio);
	blk_rq_unprep_clone(rq);

	return -ENOMEM;
}

/*
 * Moves @rq's bios to the end of @list (a multipath driver resubmits them
 * on another path) and leaves @rq with nothing to transfer. @rq must not
 * have been completed in part.
 */
void blk_steal_bios(struct bio_list *list, struct request *rq)
{
	if (rq->bio) {
		if (list->tail)
			list->tail->bi_next = rq->bio;
		else
			list->head = rq->bio;
		list->tail = rq->biotail;

		rq->bio = NULL;
		rq->biotail = NULL;
	}

	rq->__data_len = 0;
}

static inline void blk_account_io_done(struct request *req, u64 now)
{
	trace_block_io_done(req);

	/*
	 * A flush sequence's own request is not counted (there is none here):
	 * the request it belongs to is.
	 */
	if (blk_do_io_stat(req) && req->part && !(req->rq_flags & RQF_FLUSH_SEQ)) {
		const int sgrp = op_stat_group(req_op(req));

		part_stat_lock();
		update_io_ticks(req->part, jiffies, true);
		part_stat_inc(req->part, ios[sgrp]);
		part_stat_add(req->part, nsecs[sgrp], now - req->start_time_ns);
		part_stat_local_dec(req->part, in_flight[op_is_write(req_op(req))]);
		part_stat_unlock();
	}
}

static inline void blk_account_io_start(struct request *req)
{
	trace_block_io_start(req);

	if (blk_do_io_stat(req)) {
		/*
		 * Only a flush request that a stacking driver clones from a flush
		 * sequence comes without a bio; it counts against the whole disk.
		 */
		if (req->bio)
			req->part = req->bio->bi_bdev;
		else
			req->part = req->q->disk->part0;

		part_stat_lock();
		update_io_ticks(req->part, jiffies, false);
		part_stat_local_inc(req->part, in_flight[op_is_write(req_op(req))]);
		part_stat_unlock();
	}
}

static inline void __blk_mq_end_request_acct(struct request *rq, u64 now)
{
	if (rq->rq_flags & RQF_STATS)
		blk_stat_add(rq, now);

	blk_mq_sched_completed_request(rq, now);
	blk_account_io_done(rq, now);
}

inline void __blk_mq_end_request(struct request *rq, blk_status_t error)
{
	if (blk_mq_need_time_stamp(rq))
		__blk_mq_end_request_acct(rq, blk_time_get_ns());

	blk_mq_finish_request(rq);

	if (rq->end_io) {
		rq_qos_done(rq->q, rq);
		if (rq->end_io(rq, error) == RQ_END_IO_FREE)
			blk_mq_free_request(rq);
	} else {
		blk_mq_free_request(rq);
	}
}

void blk_mq_end_request(struct request *rq, blk_status_t error)
{
	if (blk_update_request(rq, error, blk_rq_bytes(rq)))
		BUG();
	__blk_mq_end_request(rq, error);
}

/* Ends every bio of a request that succeeded whole (the batch path). */
static void blk_complete_request(struct request *req)
{
	const bool is_flush = (req->rq_flags & RQF_FLUSH_SEQ) != 0;
	int total_bytes = blk_rq_bytes(req);
	struct bio *bio = req->bio;

	trace_block_rq_complete(req, BLK_STS_OK, total_bytes);

	if (!bio)
		return;

	if (blk_integrity_rq(req) && req_op(req) == REQ_OP_READ)
		blk_integrity_complete(req, total_bytes);

	/* The key slot goes back before the last bio_endio(), after which it may be evicted. */
	blk_crypto_rq_put_keyslot(req);

	blk_account_io_completion(req, total_bytes);

	do {
		struct bio *next = bio->bi_next;

		/* this completion is the traced one */
		bio_clear_flag(bio, BIO_TRACE_COMPLETION);

		blk_zone_update_request_bio(req, bio);

		if (!is_flush)
			bio_endio(bio);
		bio = next;
	} while (bio);

	/* A stacking driver's ->end_io may still look at what is left. */
	if (!req->end_io) {
		req->bio = NULL;
		req->__data_len = 0;
	}
}

#define TAG_COMP_BATCH 32

static inline void blk_mq_flush_tag_batch(struct blk_mq_hw_ctx *hctx, int *tag_array, int nr_tags)
{
	struct request_queue *q = hctx->queue;

	blk_mq_sub_active_requests(hctx, nr_tags);
	blk_mq_put_tags(hctx->tags, tag_array, nr_tags);
	percpu_ref_put_many(&q->q_usage_counter, nr_tags);
}

/*
 * Ends the requests blk_mq_add_to_batch() gathered: their bios complete one by
 * one, their tags go back TAG_COMP_BATCH at a time per hardware queue, and the
 * queue usage references they held drop together.
 */
void blk_mq_end_request_batch(struct io_comp_batch *iob)
{
	int tags[TAG_COMP_BATCH], nr_tags = 0;
	struct blk_mq_hw_ctx *cur_hctx = NULL;
	struct request *rq;
	u64 now = 0;

	if (iob->need_ts)
		now = blk_time_get_ns();

	while ((rq = rq_list_pop(&iob->req_list)) != NULL) {
		prefetch(rq->bio);
		prefetch(rq->rq_next);

		blk_complete_request(rq);
		if (iob->need_ts)
			__blk_mq_end_request_acct(rq, now);

		blk_mq_finish_request(rq);

		rq_qos_done(rq->q, rq);

		/* An ->end_io that returns NONE keeps the request. */
		if (rq->end_io && rq->end_io(rq, 0) == RQ_END_IO_NONE)
			continue;

		WRITE_ONCE(rq->state, MQ_RQ_IDLE);
		if (!req_ref_put_and_test(rq))
			continue;

		blk_crypto_free_request(rq);
		blk_pm_mark_last_busy(rq);

		if (nr_tags == TAG_COMP_BATCH || cur_hctx != rq->mq_hctx) {
			if (cur_hctx)
				blk_mq_flush_tag_batch(cur_hctx, tags, nr_tags);
			nr_tags = 0;
			cur_hctx = rq->mq_hctx;
		}
		tags[nr_tags++] = rq->tag;
	}

	if (nr_tags)
		blk_mq_flush_tag_batch(cur_hctx, tags, nr_tags);
}

static void blk_complete_reqs(struct list_head *list)
{
	while (!list_empty(list)) {
		struct request *rq = list_first_entry(list, struct request, ipi_list);

		list_del_init(&rq->ipi_list);
		rq->q->mq_ops->complete(rq);
	}
}

static void blk_done_softirq(void)
{
	LIST_HEAD(local_list);

	local_irq_disable();
	list_splice_init(this_cpu_ptr(&blk_cpu_done), &local_list);
	local_irq_enable();

	blk_complete_reqs(&local_list);
}

/* The dead CPU's softirq never comes: complete its requests here. */
static int blk_softirq_cpu_dead(unsigned int cpu)
{
	blk_complete_reqs(&per_cpu(blk_cpu_done, cpu));
	return 0;
}

/* On the target CPU, in its hardirq context (the IPI) or with irqs off. */
static void blk_mq_queue_softirq_done(struct request *rq)
{
	struct list_head *list = this_cpu_ptr(&blk_cpu_done);

	list_add_tail(&rq->ipi_list, list);
	/* The first entry raises; later ones ride along. */
	if (list->next == &rq->ipi_list)
		raise_softirq_irqoff(BLOCK_SOFTIRQ);
}

static void __blk_mq_complete_request_remote(void *data)
{
	blk_mq_queue_softirq_done((struct request *)data);
}

/*
 * Every virtual CPU is its own cache domain here, so only the submitting
 * CPU itself completes without an IPI.
 */
static inline bool cpus_share_cache(int this_cpu, int that_cpu)
{
	return this_cpu == that_cpu;
}

static inline bool blk_mq_complete_need_ipi(struct request *rq)
{
	int cpu = raw_smp_processor_id();

	if (!test_bit(QUEUE_FLAG_SAME_COMP, &rq->q->queue_flags))
		return false;

	/* Same CPU, or sharing a cache and not forced: complete here. */
	if (cpu == (int)rq->mq_ctx->cpu || (!test_bit(QUEUE_FLAG_SAME_FORCE, &rq->q->queue_flags) &&
					    cpus_share_cache(cpu, rq->mq_ctx->cpu)))
		return false;

	/* No IPI to a CPU that is offline. */
	return cpu_online(rq->mq_ctx->cpu);
}

static void blk_mq_complete_send_ipi(struct request *rq)
{
	smp_call_function_single(rq->mq_ctx->cpu, __blk_mq_complete_request_remote, rq, 0);
}

static void blk_mq_raise_softirq(struct request *rq)
{
	unsigned long flags;

	local_irq_save(flags);
	blk_mq_queue_softirq_done(rq);
	local_irq_restore(flags);
}

/*
 * Sends the completion where it belongs: false if the caller should run
 * ->complete itself (single software queue on this CPU, or polled).
 */
bool blk_mq_complete_request_remote(struct request *rq)
{
	WRITE_ONCE(rq->state, MQ_RQ_COMPLETE);

	if ((rq->mq_hctx->nr_ctx == 1 && (int)rq->mq_ctx->cpu == raw_smp_processor_id()) ||
	    rq->cmd_flags & REQ_POLLED)
		return false;

	if (blk_mq_complete_need_ipi(rq)) {
		blk_mq_complete_send_ipi(rq);
		return true;
	}

	if (rq->q->nr_hw_queues == 1) {
		blk_mq_raise_softirq(rq);
		return true;
	}
	return false;
}

void blk_mq_complete_request(struct request *rq)
{
	if (!blk_mq_complete_request_remote(rq))
		rq->q->mq_ops->complete(rq);
}

/* ---- start, requeue ---- */

void blk_mq_start_request(struct request *rq)
{
	struct request_queue *q = rq->q;

	trace_block_rq_issue(rq);

	if (test_bit(QUEUE_FLAG_STATS, &q->queue_flags) && !blk_rq_is_passthrough(rq)) {
		rq->io_start_time_ns = blk_time_get_ns();
		rq->stats_sectors = blk_rq_sectors(rq);
		rq->rq_flags |= RQF_STATS;
		rq_qos_issue(q, rq);
	}

	WARN_ON_ONCE(blk_mq_rq_state(rq) != MQ_RQ_IDLE);

	blk_add_timer(rq);
	WRITE_ONCE(rq->state, MQ_RQ_IN_FLIGHT);
	rq->mq_hctx->tags->rqs[rq->tag] = rq;

	if (blk_integrity_rq(rq) && req_op(rq) == REQ_OP_WRITE)
		blk_integrity_prepare(rq);

	if (rq->bio && rq->bio->bi_opf & REQ_POLLED)
		WRITE_ONCE(rq->bio->bi_cookie, rq->mq_hctx->queue_num);
}

static void __blk_mq_requeue_request(struct request *rq)
{
	if (blk_mq_request_started(rq)) {
		WRITE_ONCE(rq->state, MQ_RQ_IDLE);
		rq->rq_flags &= ~RQF_TIMED_OUT;
	}
}

static void blk_mq_add_to_requeue_list(struct request *rq, blk_insert_t insert_flags)
{
	struct request_queue *q = rq->q;
	unsigned long flags;

	spin_lock_irqsave(&q->requeue_lock, flags);
	if (insert_flags & BLK_MQ_INSERT_AT_HEAD)
		list_add(&rq->queuelist, &q->requeue_list);
	else
		list_add_tail(&rq->queuelist, &q->requeue_list);
	spin_unlock_irqrestore(&q->requeue_lock, flags);
}

void blk_mq_requeue_request(struct request *rq, bool kick_requeue_list)
{
	__blk_mq_requeue_request(rq);
	blk_mq_add_to_requeue_list(rq, BLK_MQ_INSERT_AT_HEAD);
	if (kick_requeue_list)
		blk_mq_kick_requeue_list(rq->q);
}

static void blk_mq_requeue_work(struct work_struct *work)
{
	struct request_queue *q = container_of(work, struct request_queue, requeue_work.work);
	LIST_HEAD(rq_list);

	spin_lock_irq(&q->requeue_lock);
	list_splice_init(&q->requeue_list, &rq_list);
	spin_unlock_irq(&q->requeue_lock);

	while (!list_empty(&rq_list)) {
		struct request *rq = list_entry(rq_list.next, struct request, queuelist);

		list_del_init(&rq->queuelist);
		blk_mq_insert_request(rq, 0);
	}

	blk_mq_run_hw_queues(q, false);
}

void blk_mq_kick_requeue_list(struct request_queue *q)
{
	kblockd_mod_delayed_work_on(WORK_CPU_UNBOUND, &q->requeue_work, 0);
}

void blk_mq_delay_kick_requeue_list(struct request_queue *q, unsigned long msecs)
{
	kblockd_mod_delayed_work_on(WORK_CPU_UNBOUND, &q->requeue_work, msecs_to_jiffies(msecs));
}

static bool blk_is_flush_data_rq(struct request *rq)
{
	return (rq->rq_flags & RQF_FLUSH_SEQ) && !is_flush_rq(rq);
}

/*
 * Stops the walk at the first started request: the queue is busy. A
 * completed flush data request of a quiesced queue does not count (its
 * sequence waits, hidden from the driver like any request held back).
 */
static bool blk_mq_rq_inflight(struct request *rq, void *priv)
{
	if (blk_mq_request_started(rq) && !(blk_queue_quiesced(rq->q) && blk_is_flush_data_rq(rq) &&
					    blk_mq_request_completed(rq))) {
		bool *busy = (bool *)priv;

		*busy = true;
		return false;
	}

	return true;
}

bool blk_mq_queue_inflight(struct request_queue *q)
{
	bool busy = false;

	blk_mq_queue_tag_busy_iter(q, blk_mq_rq_inflight, &busy);
	return busy;
}

/* ---- dispatch ---- */

/*
 * Takes a driver tag for a request that holds only a scheduler tag. A
 * reserved scheduler tag draws from the reserved driver tags, which are not
 * shared out; the others respect the fair share of a shared map.
 */
bool __blk_mq_alloc_driver_tag(struct request *rq)
{
	struct sbitmap_queue *bt = &rq->mq_hctx->tags->bitmap_tags;
	unsigned int tag_offset = rq->mq_hctx->tags->nr_reserved_tags;
	int tag;

	blk_mq_tag_busy(rq->mq_hctx);

	if (blk_mq_tag_is_reserved(rq->mq_hctx->sched_tags, rq->internal_tag)) {
		bt = &rq->mq_hctx->tags->breserved_tags;
		tag_offset = 0;
	} else {
		if (!hctx_may_queue(rq->mq_hctx, bt))
			return false;
	}

	tag = __sbitmap_queue_get(bt);
	if (tag == (int)BLK_MQ_NO_TAG)
		return false;

	rq->tag = tag + tag_offset;
	blk_mq_inc_active_requests(rq->mq_hctx);
	return true;
}

/*
 * Wake function of hctx->dispatch_wait: a driver tag was freed on the map
 * the hctx waits on. Leave the wait queue (unless blk_mq_mark_tag_wait()
 * already did) and run the queue from kblockd.
 */
static int blk_mq_dispatch_wake(wait_queue_entry_t *wait, unsigned mode, int flags, void *key)
{
	struct blk_mq_hw_ctx *hctx;

	hctx = container_of(wait, struct blk_mq_hw_ctx, dispatch_wait);

	spin_lock(&hctx->dispatch_wait_lock);
	if (!list_empty(&wait->entry)) {
		struct sbitmap_queue *sbq;

		list_del_init(&wait->entry);
		sbq = &hctx->tags->bitmap_tags;
		atomic_dec(&sbq->ws_active);
	}
	spin_unlock(&hctx->dispatch_wait_lock);

	blk_mq_run_hw_queue(hctx, true);
	return 1;
}

/*
 * No driver tag for @rq. With a map of its own the hctx only needs
 * SCHED_RESTART, which the next freed request of this hctx acts on; a map
 * shared with other hctxs or queues may be freed by them, so the hctx puts
 * its dispatch_wait on the map's wait queue. Either way the tag is tried
 * once more afterwards, in case it was freed in between. Returns whether
 * that last try got one.
 */
static bool blk_mq_mark_tag_wait(struct blk_mq_hw_ctx *hctx, struct request *rq)
{
	struct sbitmap_queue *sbq;
	struct wait_queue_head *wq;
	wait_queue_entry_t *wait;
	bool ret;

	if (!(hctx->flags & BLK_MQ_F_TAG_QUEUE_SHARED) && !(blk_mq_is_shared_tags(hctx->flags))) {
		blk_mq_sched_mark_restart_hctx(hctx);

		/*
		 * The bit is left set even if the retry succeeds: another
		 * dispatcher may rely on it, and the worst it costs is one
		 * queue run too many.
		 */
		return blk_mq_get_driver_tag(rq);
	}

	wait = &hctx->dispatch_wait;
	if (!list_empty_careful(&wait->entry))
		return false;

	if (blk_mq_tag_is_reserved(rq->mq_hctx->sched_tags, rq->internal_tag))
		sbq = &hctx->tags->breserved_tags;
	else
		sbq = &hctx->tags->bitmap_tags;
	wq = &bt_wait_ptr(sbq, hctx)->wait;

	spin_lock_irq(&wq->lock);
	spin_lock(&hctx->dispatch_wait_lock);
	if (!list_empty(&wait->entry)) {
		spin_unlock(&hctx->dispatch_wait_lock);
		spin_unlock_irq(&wq->lock);
		return false;
	}

	atomic_inc(&sbq->ws_active);
	wait->flags &= ~WQ_FLAG_EXCLUSIVE;
	__add_wait_queue(wq, wait);

	/*
	 * Order the ws_active increment and the queueing before the retry
	 * below (a failed tag allocation implies no barrier). Pairs with the
	 * smp_mb__after_atomic() in sbitmap_queue_clear() between freeing the
	 * bit and sbitmap_queue_wake_up()'s lockless ws_active test: either
	 * the freeing side sees us waiting and wakes us, or our retry sees
	 * the freed bit.
	 */
	smp_mb();

	ret = blk_mq_get_driver_tag(rq);
	if (!ret) {
		spin_unlock(&hctx->dispatch_wait_lock);
		spin_unlock_irq(&wq->lock);
		return false;
	}

	/* Got one after all: leave the queue so the wake-up goes to others. */
	list_del_init(&wait->entry);
	atomic_dec(&sbq->ws_active);
	spin_unlock(&hctx->dispatch_wait_lock);
	spin_unlock_irq(&wq->lock);

	return true;
}

#define BLK_MQ_DISPATCH_BUSY_EWMA_WEIGHT 8
#define BLK_MQ_DISPATCH_BUSY_EWMA_FACTOR 4
/*
 * hctx->dispatch_busy as an exponentially weighted moving average: each
 * dispatch keeps 7/8 of the old value and adds 1/8 of 16 when the driver
 * was busy (16 rather than 1, so the integer average does not round to 0
 * at once).
 */
static void blk_mq_update_dispatch_busy(struct blk_mq_hw_ctx *hctx, bool busy)
{
	unsigned int ewma;

	/* Dispatchers of one hctx update it concurrently, unlocked, as upstream. */
	ewma = READ_ONCE(hctx->dispatch_busy);

	if (!ewma && !busy)
		return;

	ewma *= BLK_MQ_DISPATCH_BUSY_EWMA_WEIGHT - 1;
	if (busy)
		ewma += 1 << BLK_MQ_DISPATCH_BUSY_EWMA_FACTOR;
	ewma /= BLK_MQ_DISPATCH_BUSY_EWMA_WEIGHT;

	WRITE_ONCE(hctx->dispatch_busy, ewma);
}

static void blk_mq_handle_dev_resource(struct request *rq, struct list_head *list)
{
	list_add(&rq->queuelist, list);
	__blk_mq_requeue_request(rq);
}

enum prep_dispatch {
	PREP_DISPATCH_OK,
	PREP_DISPATCH_NO_TAG,
	PREP_DISPATCH_NO_BUDGET,
};

/*
 * Before ->queue_rq: a dispatch budget (unless the caller took them all
 * in advance) and a driver tag. What fails leaves nothing taken by this
 * function behind.
 */
static enum prep_dispatch blk_mq_prep_dispatch_rq(struct request *rq, bool need_budget)
{
	struct blk_mq_hw_ctx *hctx = rq->mq_hctx;
	int budget_token = -1;

	if (need_budget) {
		budget_token = blk_mq_get_dispatch_budget(rq->q);
		if (budget_token < 0) {
			blk_mq_put_driver_tag(rq);
			return PREP_DISPATCH_NO_BUDGET;
		}
		blk_mq_set_rq_budget_token(rq, budget_token);
	}

	if (!blk_mq_get_driver_tag(rq)) {
		/*
		 * Arrange for a queue run once a tag is freed; a run that
		 * comes before the request is back on hctx->dispatch is
		 * covered by blk_mq_dispatch_rq_list().
		 */
		if (!blk_mq_mark_tag_wait(hctx, rq)) {
			/* Budgets the caller took are its to give back. */
			if (need_budget)
				blk_mq_put_dispatch_budget(rq->q, budget_token);
			return PREP_DISPATCH_NO_TAG;
		}
	}

	return PREP_DISPATCH_OK;
}

/* Gives back the budgets a caller took for requests that were not issued. */
static void blk_mq_release_budgets(struct request_queue *q, struct list_head *list)
{
	struct request *rq;

	list_for_each_entry (rq, list, queuelist) {
		int budget_token = blk_mq_get_rq_budget_token(rq);

		if (budget_token >= 0)
			blk_mq_put_dispatch_budget(q, budget_token);
	}
}

/*
 * Tells the driver that no more requests follow, when the last one it saw
 * did not say so (bd->last): the list was not issued in full, or its last
 * request failed.
 */
static void blk_mq_commit_rqs(struct blk_mq_hw_ctx *hctx, int queued, bool from_schedule)
{
	if (hctx->queue->mq_ops->commit_rqs && queued)
		hctx->queue->mq_ops->commit_rqs(hctx);
}

/*
 * Hands the requests on @list to ->queue_rq; @nr_budgets of them come with
 * a budget the caller took. What is left goes back on hctx->dispatch with
 * a re-run arranged. Returns true if all went out.
 */
bool blk_mq_dispatch_rq_list(struct blk_mq_hw_ctx *hctx, struct list_head *list,
			     unsigned int nr_budgets)
{
	enum prep_dispatch prep;
	struct request_queue *q = hctx->queue;
	struct request *rq;
	int queued;
	blk_status_t ret = BLK_STS_OK;
	bool needs_resource = false;

	if (list_empty(list))
		return false;

	queued = 0;
	do {
		struct blk_mq_queue_data bd;

		rq = list_first_entry(list, struct request, queuelist);

		WARN_ON_ONCE(hctx != rq->mq_hctx);
		prep = blk_mq_prep_dispatch_rq(rq, !nr_budgets);
		if (prep != PREP_DISPATCH_OK)
			break;

		list_del_init(&rq->queuelist);

		bd.rq = rq;
		bd.last = list_empty(list);

		/* From here the driver owns the request's budget. */
		if (nr_budgets)
			nr_budgets--;
		ret = q->mq_ops->queue_rq(hctx, &bd);
		switch (ret) {
		case BLK_STS_OK:
			queued++;
			break;
		case BLK_STS_RESOURCE:
			needs_resource = true;
			fallthrough;
		case BLK_STS_DEV_RESOURCE:
			blk_mq_handle_dev_resource(rq, list);
			goto out;
		default:
			blk_mq_end_request(rq, ret);
		}
	} while (!list_empty(list));
out:
	/* The last ->queue_rq may have been told more would follow. */
	if (!list_empty(list) || ret != BLK_STS_OK)
		blk_mq_commit_rqs(hctx, queued, false);

	/* The rest waits on hctx->dispatch for the next run. */
	if (!list_empty(list)) {
		bool needs_restart;
		/* A map of its own is covered by SCHED_RESTART alone. */
		bool no_tag = prep == PREP_DISPATCH_NO_TAG &&
			      ((hctx->flags & BLK_MQ_F_TAG_QUEUE_SHARED) ||
			       blk_mq_is_shared_tags(hctx->flags));

		if (nr_budgets)
			blk_mq_release_budgets(q, list);

		spin_lock(&hctx->lock);
		list_splice_tail_init(list, &hctx->dispatch);
		spin_unlock(&hctx->lock);

		/*
		 * Order the dispatch list update before reading
		 * SCHED_RESTART: pairs with the barrier in
		 * __blk_mq_sched_restart() (a completion either sees the
		 * list or we see its cleared bit).
		 */
		smp_mb();

		/*
		 * Run again now when nobody else will: SCHED_RESTART was
		 * not set, or has been cleared by a completion since (and
		 * that completion's run may have missed the list), or we
		 * wait for a driver tag and the wake-up has already come
		 * (dispatch_wait is off the wait queue). A busy driver or
		 * a missing budget with SCHED_RESTART still set gets a
		 * delayed run, in case nothing completes to restart us.
		 */
		needs_restart = blk_mq_sched_needs_restart(hctx);
		if (prep == PREP_DISPATCH_NO_BUDGET)
			needs_resource = true;
		if (!needs_restart || (no_tag && list_empty_careful(&hctx->dispatch_wait.entry)))
			blk_mq_run_hw_queue(hctx, true);
		else if (needs_resource)
			blk_mq_delay_run_hw_queue(hctx, BLK_MQ_RESOURCE_DELAY);

		blk_mq_update_dispatch_busy(hctx, true);
		return false;
	}

	blk_mq_update_dispatch_busy(hctx, false);
	return true;
}

#define BLK_MQ_BUDGET_DELAY 3 /* ms units */

/* The software queue after @ctx among those of @hctx, wrapping around. */
static struct blk_mq_ctx *blk_mq_next_ctx(struct blk_mq_hw_ctx *hctx, struct blk_mq_ctx *ctx)
{
	unsigned short idx = ctx->index_hw[hctx->type];

	if (++idx == hctx->nr_ctx)
		idx = 0;

	return hctx->ctxs[idx];
}

/*
 * The software queues one request at a time, each with a budget taken
 * first, round robin from hctx->dispatch_from, for as long as the driver
 * takes them. -EAGAIN when requests turn up on hctx->dispatch meanwhile.
 */
static int blk_mq_do_dispatch_ctx(struct blk_mq_hw_ctx *hctx)
{
	struct request_queue *q = hctx->queue;
	LIST_HEAD(rq_list);
	struct blk_mq_ctx *ctx = READ_ONCE(hctx->dispatch_from);
	int ret = 0;
	struct request *rq;

	do {
		int budget_token;

		if (!list_empty_careful(&hctx->dispatch)) {
			ret = -EAGAIN;
			break;
		}

		if (!sbitmap_any_bit_set(&hctx->ctx_map))
			break;

		budget_token = blk_mq_get_dispatch_budget(q);
		if (budget_token < 0)
			break;

		rq = blk_mq_dequeue_from_ctx(hctx, ctx);
		if (!rq) {
			blk_mq_put_dispatch_budget(q, budget_token);
			/*
			 * The budget we held may have turned away another
			 * hctx of this queue, and nothing was dispatched
			 * that would complete and run it: run them later.
			 */
			blk_mq_delay_run_hw_queues(q, BLK_MQ_BUDGET_DELAY);
			break;
		}

		blk_mq_set_rq_budget_token(rq, budget_token);

		/*
		 * The budget is the request's now: blk_mq_dispatch_rq_list()
		 * gives it back if ->queue_rq does not get the request.
		 */
		list_add(&rq->queuelist, &rq_list);

		/* Next time start from the following software queue. */
		ctx = blk_mq_next_ctx(hctx, rq->mq_ctx);

	} while (blk_mq_dispatch_rq_list(rq->mq_hctx, &rq_list, 1));

	WRITE_ONCE(hctx->dispatch_from, ctx);
	return ret;
}

static int __blk_mq_sched_dispatch_requests(struct blk_mq_hw_ctx *hctx)
{
	bool need_dispatch = false;
	LIST_HEAD(rq_list);

	if (!list_empty_careful(&hctx->dispatch)) {
		spin_lock(&hctx->lock);
		if (!list_empty(&hctx->dispatch))
			list_splice_init(&hctx->dispatch, &rq_list);
		spin_unlock(&hctx->lock);
	}

	/*
	 * Leftovers first; only when they all went out go on to the software
	 * queues. Mark for a restart so that the next completion re-runs us
	 * if the driver is still busy.
	 */
	if (!list_empty(&rq_list)) {
		blk_mq_sched_mark_restart_hctx(hctx);
		if (!blk_mq_dispatch_rq_list(hctx, &rq_list, 0))
			return 0;
		need_dispatch = true;
	} else {
		need_dispatch = READ_ONCE(hctx->dispatch_busy);
	}

	/* A busy driver gets the software queues' requests one by one. */
	if (need_dispatch)
		return blk_mq_do_dispatch_ctx(hctx);
	blk_mq_flush_busy_ctxs(hctx, &rq_list);
	blk_mq_dispatch_rq_list(hctx, &rq_list, 0);
	return 0;
}

void blk_mq_sched_dispatch_requests(struct blk_mq_hw_ctx *hctx)
{
	struct request_queue *q = hctx->queue;

	/* The caller's dispatch section keeps the quiesced test valid. */
	if (unlikely(blk_mq_hctx_stopped(hctx) || blk_queue_quiesced(q)))
		return;

	/*
	 * -EAGAIN: requests arrived on hctx->dispatch while the software
	 * queues were dispatched; go again so they are not left waiting.
	 */
	if (__blk_mq_sched_dispatch_requests(hctx) == -EAGAIN) {
		if (__blk_mq_sched_dispatch_requests(hctx) == -EAGAIN)
			blk_mq_run_hw_queue(hctx, true);
	}
}

void __blk_mq_sched_restart(struct blk_mq_hw_ctx *hctx)
{
	clear_bit(BLK_MQ_S_SCHED_RESTART, &hctx->state);

	/*
	 * Order the clear before looking at the dispatch list: pairs with
	 * the smp_mb() in blk_mq_dispatch_rq_list().
	 */
	smp_mb__after_atomic();
	blk_mq_run_hw_queue(hctx, true);
}

static inline bool blk_mq_hw_queue_need_run(struct blk_mq_hw_ctx *hctx)
{
	bool need_run;

	/*
	 * Nothing may look at a quiesced queue's contexts (they may be in the
	 * middle of a change); blk_mq_unquiesce_queue() runs it again.
	 */
	__blk_mq_run_dispatch_ops(hctx->queue, false,
				  need_run = !blk_queue_quiesced(hctx->queue) &&
					     blk_mq_hctx_has_pending(hctx));
	return need_run;
}

void blk_mq_run_hw_queue(struct blk_mq_hw_ctx *hctx, bool async)
{
	void (*hook)(struct blk_mq_hw_ctx *, bool) = READ_ONCE(blk_mq_run_hw_queue_hook);

	if (unlikely(hook)) {
		hook(hctx, async);
		return;
	}

	if (!blk_mq_hw_queue_need_run(hctx))
		return;

	/* Not allowed to block here, or asked not to: let kblockd do it. */
	if (async || ((hctx->flags & BLK_MQ_F_BLOCKING) && (in_atomic() || irqs_disabled()))) {
		blk_mq_delay_run_hw_queue(hctx, 0);
		return;
	}

	blk_mq_run_dispatch_ops(hctx->queue, blk_mq_sched_dispatch_requests(hctx));
}

/*
 * The hctx of this CPU's default map, unless stopped: the one to run when
 * the elevator feeds every hctx from one place (QUEUE_FLAG_SQ_SCHED), so
 * that several CPUs do not contend for it through different hctxs.
 */
static struct blk_mq_hw_ctx *blk_mq_get_sq_hctx(struct request_queue *q)
{
	struct blk_mq_ctx *ctx = blk_mq_get_ctx(q);
	struct blk_mq_hw_ctx *hctx = ctx->hctxs[HCTX_TYPE_DEFAULT];

	if (!blk_mq_hctx_stopped(hctx))
		return hctx;
	return NULL;
}

void blk_mq_run_hw_queues(struct request_queue *q, bool async)
{
	struct blk_mq_hw_ctx *hctx, *sq_hctx;
	unsigned long i;

	sq_hctx = NULL;
	if (blk_queue_sq_sched(q))
		sq_hctx = blk_mq_get_sq_hctx(q);
	queue_for_each_hw_ctx(q, hctx, i)
	{
		if (blk_mq_hctx_stopped(hctx))
			continue;
		/*
		 * Other hctxs only for what bypasses the elevator (their
		 * dispatch lists).
		 */
		if (!sq_hctx || sq_hctx == hctx || !list_empty_careful(&hctx->dispatch))
			blk_mq_run_hw_queue(hctx, async);
	}
}

static inline int blk_mq_first_mapped_cpu(struct blk_mq_hw_ctx *hctx)
{
	int cpu = cpumask_first_and(hctx->cpumask, cpu_online_mask);

	if (cpu >= nr_cpu_ids)
		cpu = cpumask_first(hctx->cpumask);
	return cpu;
}

/* ->next_cpu comes from ->cpumask: past the last CPU when the mask is empty. */
static bool blk_mq_hctx_empty_cpumask(struct blk_mq_hw_ctx *hctx)
{
	return READ_ONCE(hctx->next_cpu) >= nr_cpu_ids;
}

/*
 * The CPU of @hctx's next asynchronous run: its mapped online CPUs in turn,
 * BLK_MQ_CPU_WORK_BATCH runs each, or WORK_CPU_UNBOUND for a single hardware
 * queue, an hctx no CPU maps to, or one whose CPUs are all offline.
 */
static int blk_mq_hctx_next_cpu(struct blk_mq_hw_ctx *hctx)
{
	bool tried = false;
	int next_cpu = READ_ONCE(hctx->next_cpu);

	if (hctx->queue->nr_hw_queues == 1 || blk_mq_hctx_empty_cpumask(hctx))
		return WORK_CPU_UNBOUND;

	/* the batch count is racy by design: a lost update moves a run */
	if (data_race(--hctx->next_cpu_batch) <= 0) {
select_cpu:
		next_cpu = cpumask_next_and(next_cpu, hctx->cpumask, cpu_online_mask);
		if (next_cpu >= nr_cpu_ids)
			next_cpu = blk_mq_first_mapped_cpu(hctx);
		WRITE_ONCE(hctx->next_cpu_batch, BLK_MQ_CPU_WORK_BATCH);
	}

	/*
	 * No online CPU of the mask was found (a CPU going down): try the
	 * search once more, then run unbound and search again next time.
	 */
	if (!cpu_online(next_cpu)) {
		if (!tried) {
			tried = true;
			goto select_cpu;
		}

		WRITE_ONCE(hctx->next_cpu, next_cpu);
		WRITE_ONCE(hctx->next_cpu_batch, 1);
		return WORK_CPU_UNBOUND;
	}

	WRITE_ONCE(hctx->next_cpu, next_cpu);
	return next_cpu;
}

void blk_mq_delay_run_hw_queue(struct blk_mq_hw_ctx *hctx, unsigned long msecs)
{
	if (unlikely(blk_mq_hctx_stopped(hctx)))
		return;
	kblockd_mod_delayed_work_on(blk_mq_hctx_next_cpu(hctx), &hctx->run_work,
				    msecs_to_jiffies(msecs));
}

void blk_mq_delay_run_hw_queues(struct request_queue *q, unsigned long msecs)
{
	struct blk_mq_hw_ctx *hctx, *sq_hctx;
	unsigned long i;

	sq_hctx = NULL;
	if (blk_queue_sq_sched(q))
		sq_hctx = blk_mq_get_sq_hctx(q);
	queue_for_each_hw_ctx(q, hctx, i)
	{
		if (blk_mq_hctx_stopped(hctx))
			continue;
		/*
		 * A run already pending keeps its delay: pushing it out
		 * again and again on behalf of other hctxs could stall it.
		 */
		if (delayed_work_pending(&hctx->run_work))
			continue;
		/* As in blk_mq_run_hw_queues(). */
		if (!sq_hctx || sq_hctx == hctx || !list_empty_careful(&hctx->dispatch))
			blk_mq_delay_run_hw_queue(hctx, msecs);
	}
}

static void blk_mq_run_work_fn(struct work_struct *work)
{
	struct blk_mq_hw_ctx *hctx = container_of(work, struct blk_mq_hw_ctx, run_work.work);

	blk_mq_run_dispatch_ops(hctx->queue, blk_mq_sched_dispatch_requests(hctx));
}

bool blk_mq_queue_stopped(struct request_queue *q)
{
	struct blk_mq_hw_ctx *hctx;
	unsigned long i;

	queue_for_each_hw_ctx(q, hctx, i) if (blk_mq_hctx_stopped(hctx)) return true;
	return false;
}

void blk_mq_stop_hw_queue(struct blk_mq_hw_ctx *hctx)
{
	cancel_delayed_work(&hctx->run_work);
	set_bit(BLK_MQ_S_STOPPED, &hctx->state);
}

void blk_mq_stop_hw_queues(struct request_queue *q)
{
	struct blk_mq_hw_ctx *hctx;
	unsigned long i;

	queue_for_each_hw_ctx(q, hctx, i) blk_mq_stop_hw_queue(hctx);
}

void blk_mq_start_hw_queue(struct blk_mq_hw_ctx *hctx)
{
	clear_bit(BLK_MQ_S_STOPPED, &hctx->state);
	blk_mq_run_hw_queue(hctx, hctx->flags & BLK_MQ_F_BLOCKING);
}

void blk_mq_start_hw_queues(struct request_queue *q)
{
	struct blk_mq_hw_ctx *hctx;
	unsigned long i;

	queue_for_each_hw_ctx(q, hctx, i) blk_mq_start_hw_queue(hctx);
}

void blk_mq_start_stopped_hw_queue(struct blk_mq_hw_ctx *hctx, bool async)
{
	if (!blk_mq_hctx_stopped(hctx))
		return;

	clear_bit(BLK_MQ_S_STOPPED, &hctx->state);
	/*
	 * Order the clear before the dispatch list check in the run: pairs
	 * with the smp_mb() in blk_mq_hctx_stopped().
	 */
	smp_mb__after_atomic();
	blk_mq_run_hw_queue(hctx, async);
}

void blk_mq_start_stopped_hw_queues(struct request_queue *q, bool async)
{
	struct blk_mq_hw_ctx *hctx;
	unsigned long i;

	queue_for_each_hw_ctx(q, hctx, i)
		blk_mq_start_stopped_hw_queue(hctx, async || (hctx->flags & BLK_MQ_F_BLOCKING));
}

/* ---- direct issue ---- */

static blk_status_t __blk_mq_issue_directly(struct blk_mq_hw_ctx *hctx, struct request *rq,
					    bool last)
{
	struct request_queue *q = rq->q;
	struct blk_mq_queue_data bd = {
		.rq = rq,
		.last = last,
	};
	blk_status_t ret;

	ret = q->mq_ops->queue_rq(hctx, &bd);
	switch (ret) {
	case BLK_STS_OK:
		blk_mq_update_dispatch_busy(hctx, false);
		break;
	case BLK_STS_RESOURCE:
	case BLK_STS_DEV_RESOURCE:
		blk_mq_update_dispatch_busy(hctx, true);
		__blk_mq_requeue_request(rq);
		break;
	default:
		blk_mq_update_dispatch_busy(hctx, false);
		break;
	}

	return ret;
}

static bool blk_mq_get_budget_and_tag(struct request *rq)
{
	int budget_token;

	budget_token = blk_mq_get_dispatch_budget(rq->q);
	if (budget_token < 0)
		return false;
	blk_mq_set_rq_budget_token(rq, budget_token);
	if (!blk_mq_get_driver_tag(rq)) {
		blk_mq_put_dispatch_budget(rq->q, budget_token);
		return false;
	}
	return true;
}

static void blk_mq_try_issue_directly(struct blk_mq_hw_ctx *hctx, struct request *rq)
{
	blk_status_t ret;

	if (blk_mq_hctx_stopped(hctx) || blk_queue_quiesced(rq->q)) {
		blk_mq_insert_request(rq, 0);
		blk_mq_run_hw_queue(hctx, false);
		return;
	}

	if ((rq->rq_flags & RQF_USE_SCHED) || !blk_mq_get_budget_and_tag(rq)) {
		blk_mq_insert_request(rq, 0);
		blk_mq_run_hw_queue(hctx, rq->cmd_flags & REQ_NOWAIT);
		return;
	}

	ret = __blk_mq_issue_directly(hctx, rq, true);
	switch (ret) {
	case BLK_STS_OK:
		break;
	case BLK_STS_RESOURCE:
	case BLK_STS_DEV_RESOURCE:
		blk_mq_request_bypass_insert(rq, 0);
		blk_mq_run_hw_queue(hctx, false);
		break;
	default:
		blk_mq_end_request(rq, ret);
		break;
	}
}

static blk_status_t blk_mq_request_issue_directly(struct request *rq, bool last)
{
	struct blk_mq_hw_ctx *hctx = rq->mq_hctx;

	if (blk_mq_hctx_stopped(hctx) || blk_queue_quiesced(rq->q)) {
		blk_mq_insert_request(rq, 0);
		blk_mq_run_hw_queue(hctx, false);
		return BLK_STS_OK;
	}

	if (!blk_mq_get_budget_and_tag(rq))
		return BLK_STS_RESOURCE;
	return __blk_mq_issue_directly(hctx, rq, last);
}

/* Issues what is on @list one by one until the driver turns one away. */
static void blk_mq_try_issue_list_directly(struct blk_mq_hw_ctx *hctx, struct list_head *list)
{
	int queued = 0;
	blk_status_t ret = BLK_STS_OK;

	while (!list_empty(list)) {
		struct request *rq = list_first_entry(list, struct request, queuelist);

		list_del_init(&rq->queuelist);
		ret = blk_mq_request_issue_directly(rq, list_empty(list));
		switch (ret) {
		case BLK_STS_OK:
			queued++;
			break;
		case BLK_STS_RESOURCE:
		case BLK_STS_DEV_RESOURCE:
			blk_mq_request_bypass_insert(rq, 0);
			if (list_empty(list))
				blk_mq_run_hw_queue(hctx, false);
			goto out;
		default:
			blk_mq_end_request(rq, ret);
			break;
		}
	}

out:
	if (ret != BLK_STS_OK)
		blk_mq_commit_rqs(hctx, queued, false);
}

/*
 * Requests of one software queue: straight to the driver when the caller
 * may run the queue itself, else onto the ctx list for a queue run.
 */
static void blk_mq_insert_requests(struct blk_mq_hw_ctx *hctx, struct blk_mq_ctx *ctx,
				   struct list_head *list, bool run_queue_async)
{
	struct request *rq;
	enum hctx_type type = (enum hctx_type)hctx->type;

	/* A busy driver would only turn them away: queue them instead. */
	if (!READ_ONCE(hctx->dispatch_busy) && !run_queue_async) {
		blk_mq_run_dispatch_ops(hctx->queue, blk_mq_try_issue_list_directly(hctx, list));
		if (list_empty(list))
			goto out;
	}

	/*
	 * The plug list was split by ctx, so every request is @ctx's even if
	 * the task has moved CPU since. A REQ_NOWAIT request must not have its
	 * queue run (and maybe blocked on) by this task: leave it to kblockd.
	 */
	list_for_each_entry (rq, list, queuelist) {
		BUG_ON(rq->mq_ctx != ctx);
		trace_block_rq_insert(rq);
		if (rq->cmd_flags & REQ_NOWAIT)
			run_queue_async = true;
	}

	spin_lock(&ctx->lock);
	list_splice_tail_init(list, &ctx->rq_lists[type]);
	blk_mq_hctx_mark_pending(hctx, ctx);
	spin_unlock(&ctx->lock);
out:
	blk_mq_run_hw_queue(hctx, run_queue_async);
}

/* ---- plugging ---- */

static inline unsigned short blk_plug_max_rq_count(struct blk_plug *plug)
{
	if (plug->multiple_queues)
		return BLK_MAX_REQUEST_COUNT * 2;
	return BLK_MAX_REQUEST_COUNT;
}

/*
 * Queues @rq on the plug. A full plug (BLK_MAX_REQUEST_COUNT requests, or
 * a last request of BLK_PLUG_FLUSH_SIZE bytes) is sent to the driver first.
 */
static void blk_add_rq_to_plug(struct blk_plug *plug, struct request *rq)
{
	struct request *last = plug->mq_list.tail;

	if (plug->rq_count && (plug->rq_count >= blk_plug_max_rq_count(plug) ||
			       blk_rq_bytes(last) >= BLK_PLUG_FLUSH_SIZE)) {
		blk_mq_flush_plug_list(plug, false);
		last = NULL;
	}

	if (!plug->multiple_queues && last && last->q != rq->q)
		plug->multiple_queues = true;
	if (!plug->has_elevator && (rq->rq_flags & RQF_SCHED_TAGS))
		plug->has_elevator = true;
	rq_list_add_tail(&plug->mq_list, rq);
	plug->rq_count++;
}

/* The driver's ->queue_rqs() takes the whole list; what it leaves stays. */
static void __blk_mq_flush_plug_list(struct request_queue *q, struct blk_plug *plug)
{
	if (blk_queue_quiesced(q))
		return;
	q->mq_ops->queue_rqs(&plug->mq_list);
}

static void blk_mq_plug_issue_direct(struct blk_plug *plug)
{
	struct blk_mq_hw_ctx *hctx = NULL;
	struct request *rq;
	int queued = 0;
	blk_status_t ret = BLK_STS_OK;

	while ((rq = rq_list_pop(&plug->mq_list))) {
		bool last = rq_list_empty(&plug->mq_list);

		if (hctx != rq->mq_hctx) {
			if (hctx) {
				blk_mq_commit_rqs(hctx, queued, false);
				queued = 0;
			}
			hctx = rq->mq_hctx;
		}

		ret = blk_mq_request_issue_directly(rq, last);
		switch (ret) {
		case BLK_STS_OK:
			queued++;
			break;
		case BLK_STS_RESOURCE:
		case BLK_STS_DEV_RESOURCE:
			blk_mq_request_bypass_insert(rq, 0);
			blk_mq_run_hw_queue(hctx, false);
			goto out;
		default:
			blk_mq_end_request(rq, ret);
			break;
		}
	}

out:
	if (ret != BLK_STS_OK)
		blk_mq_commit_rqs(hctx, queued, false);
}

/*
 * Takes the leading run of requests that share one hctx and ctx off the
 * plug (the others stay, in order) and inserts them there.
 */
static void blk_mq_dispatch_plug_list(struct blk_plug *plug, bool from_sched)
{
	struct blk_mq_hw_ctx *this_hctx = NULL;
	struct blk_mq_ctx *this_ctx = NULL;
	struct rq_list requeue_list = {};
	LIST_HEAD(list);

	do {
		struct request *rq = rq_list_pop(&plug->mq_list);

		if (!this_hctx) {
			this_hctx = rq->mq_hctx;
			this_ctx = rq->mq_ctx;
		} else if (this_hctx != rq->mq_hctx || this_ctx != rq->mq_ctx) {
			rq_list_add_tail(&requeue_list, rq);
			continue;
		}
		list_add_tail(&rq->queuelist, &list);
	} while (!rq_list_empty(&plug->mq_list));

	plug->mq_list = requeue_list;

	percpu_ref_get(&this_hctx->queue->q_usage_counter);
	blk_mq_insert_requests(this_hctx, this_ctx, &list, from_sched);
	percpu_ref_put(&this_hctx->queue->q_usage_counter);
}

/*
 * Sends the plugged requests to their drivers: all at once through
 * ->queue_rqs() when they share one queue and the caller is not about to
 * sleep, else per hctx and ctx (from schedule(), through kblockd).
 */
void blk_mq_flush_plug_list(struct blk_plug *plug, bool from_schedule)
{
	struct request *rq;
	unsigned int depth;

	/*
	 * A driver's ->queue_rq() may sleep and come back here through
	 * schedule(): zero the count first so that the nested call returns
	 * at once instead of walking a list that is being taken apart.
	 */
	if (plug->rq_count == 0)
		return;
	depth = plug->rq_count;
	plug->rq_count = 0;

	if (!plug->multiple_queues && !plug->has_elevator && !from_schedule) {
		struct request_queue *q;

		rq = rq_list_peek(&plug->mq_list);
		q = rq->q;
		trace_block_unplug(q, depth, true);

		if (q->mq_ops->queue_rqs) {
			blk_mq_run_dispatch_ops(q, __blk_mq_flush_plug_list(q, plug));
			if (rq_list_empty(&plug->mq_list))
				return;
		}

		blk_mq_run_dispatch_ops(q, blk_mq_plug_issue_direct(plug));
		if (rq_list_empty(&plug->mq_list))
			return;
	}

	do {
		blk_mq_dispatch_plug_list(plug, from_schedule);
	} while (!rq_list_empty(&plug->mq_list));
}

/* Requests allocated for a plug but never used go back, with their refs. */
void blk_mq_free_plug_rqs(struct blk_plug *plug)
{
	struct request *rq;

	while ((rq = rq_list_pop(&plug->cached_rqs)) != NULL)
		blk_mq_free_request(rq);
}

static void blk_mq_bio_to_request(struct request *rq, struct bio *bio, unsigned int nr_segs)
{
	if (bio->bi_opf & REQ_RAHEAD)
		rq->cmd_flags |= REQ_FAILFAST_MASK;

	rq->__sector = bio->bi_iter.bi_sector;
	rq->nr_phys_segments = nr_segs;
	rq->__data_len = bio->bi_iter.bi_size;
	rq->bio = rq->biotail = bio;
	bio->bi_next = NULL;

	blk_account_io_start(rq);
}

static struct request *blk_mq_get_new_requests(struct request_queue *q, struct blk_plug *plug,
					       struct bio *bio, unsigned int nsegs)
{
	struct blk_mq_alloc_data data = {
		.q = q,
		.cmd_flags = bio->bi_opf,
		.nr_tags = 1,
	};
	struct request *rq;

	if (plug) {
		data.nr_tags = plug->nr_ios;
		plug->nr_ios = 1;
		data.cached_rqs = &plug->cached_rqs;
	}

	rq = __blk_mq_alloc_requests(&data);
	if (rq)
		return rq;
	if (bio->bi_opf & REQ_NOWAIT)
		bio_wouldblock_error(bio);
	return NULL;
}

/* The plug's next cached request, taken off the plug if it suits a bio of @opf on @q. */
static struct request *blk_mq_get_cached_request(struct blk_plug *plug, struct request_queue *q,
						 blk_opf_t opf)
{
	enum hctx_type type = blk_mq_get_hctx_type(opf);
	struct request *rq;

	if (!plug)
		return NULL;
	rq = rq_list_peek(&plug->cached_rqs);
	if (!rq || rq->q != q)
		return NULL;
	if (type != rq->mq_hctx->type &&
	    (type != HCTX_TYPE_READ || rq->mq_hctx->type != HCTX_TYPE_DEFAULT))
		return NULL;
	if (op_is_flush(rq->cmd_flags) != op_is_flush(opf))
		return NULL;
	rq_list_pop(&plug->cached_rqs);
	return rq;
}

/*
 * The bio path: one request per bio, from the plug's cache or a new one
 * (its tag from blk_mq_get_tag(), which may sleep unless REQ_NOWAIT). A
 * plugged request waits on the plug; any other is issued directly.
 */
/* Whether @bio's size or start is not a multiple of the logical block size. */
static bool bio_unaligned(const struct bio *bio, struct request_queue *q)
{
	unsigned int bs_mask = queue_logical_block_size(q) - 1;

	/* An empty bio still has its start sector checked. */
	if ((bio->bi_iter.bi_size & bs_mask) ||
	    ((bio->bi_iter.bi_sector << SECTOR_SHIFT) & bs_mask))
		return true;
	return false;
}

void blk_mq_submit_bio(struct bio *bio)
{
	struct request_queue *q = bdev_get_queue(bio->bi_bdev);
	struct blk_plug *plug = current->plug;
	const int is_sync = op_is_sync(bio->bi_opf);
	struct blk_mq_hw_ctx *hctx;
	struct request *rq;

	rq = blk_mq_get_cached_request(plug, q, bio->bi_opf);

	/* A cached request already holds its q_usage_counter reference. */
	if (!rq) {
		if (unlikely(bio_queue_enter(bio)))
			return;
	}

	/* The block size can change under a frozen queue: check inside it. */
	if (unlikely(bio_unaligned(bio, q))) {
		bio_io_error(bio);
		goto queue_exit;
	}

	if (rq) {
		rq_qos_throttle(rq->q, bio);
		blk_mq_rq_time_init(rq, blk_time_get_ns());
		rq->cmd_flags = bio->bi_opf;
		INIT_LIST_HEAD(&rq->queuelist);
	} else {
		rq = blk_mq_get_new_requests(q, plug, bio, 1);
		if (unlikely(!rq))
			goto queue_exit;
	}

	trace_block_getrq(bio);

	rq_qos_track(q, rq, bio);

	blk_mq_bio_to_request(rq, bio, 1);

	if (plug) {
		blk_add_rq_to_plug(plug, rq);
		return;
	}

	hctx = rq->mq_hctx;
	if ((rq->rq_flags & RQF_USE_SCHED) ||
	    (READ_ONCE(hctx->dispatch_busy) && (q->nr_hw_queues == 1 || !is_sync))) {
		blk_mq_insert_request(rq, 0);
		blk_mq_run_hw_queue(hctx, true);
	} else {
		blk_mq_run_dispatch_ops(q, blk_mq_try_issue_directly(hctx, rq));
	}
	return;

queue_exit:
	/* A cached request brought its own reference: none was taken to drop. */
	if (!rq)
		blk_queue_exit(q);
}

/*
 * Queues a driver-private request (on the task's plug when it has one and
 * the request is not for the head) and returns; ->end_io reports the end.
 */
void blk_execute_rq_nowait(struct request *rq, bool at_head)
{
	struct blk_mq_hw_ctx *hctx = rq->mq_hctx;

	WARN_ON(irqs_disabled());
	WARN_ON(!blk_rq_is_passthrough(rq));

	blk_account_io_start(rq);

	if (current->plug && !at_head) {
		blk_add_rq_to_plug(current->plug, rq);
		return;
	}

	blk_mq_insert_request(rq, at_head ? BLK_MQ_INSERT_AT_HEAD : 0);
	blk_mq_run_hw_queue(hctx, hctx->flags & BLK_MQ_F_BLOCKING);
}

/* Runs a driver-private request and waits for it. */
struct blk_rq_wait {
	struct completion done;
	blk_status_t ret;
};

static enum rq_end_io_ret blk_end_sync_rq(struct request *rq, blk_status_t ret)
{
	struct blk_rq_wait *wait = (struct blk_rq_wait *)rq->end_io_data;

	wait->ret = ret;
	complete(&wait->done);
	return RQ_END_IO_NONE;
}

bool blk_rq_is_poll(struct request *rq)
{
	if (!rq->mq_hctx)
		return false;
	if (rq->mq_hctx->type != HCTX_TYPE_POLL)
		return false;
	return true;
}

static void blk_rq_poll_completion(struct request *rq, struct completion *wait)
{
	do {
		blk_hctx_poll(rq->q, rq->mq_hctx, NULL, 0);
		cond_resched();
	} while (!completion_done(wait));
}

blk_status_t blk_execute_rq(struct request *rq, bool at_head)
{
	struct blk_mq_hw_ctx *hctx = rq->mq_hctx;
	struct blk_rq_wait wait;

	init_completion(&wait.done);
	wait.ret = BLK_STS_OK;

	WARN_ON(irqs_disabled());
	WARN_ON(!blk_rq_is_passthrough(rq));

	rq->end_io_data = &wait;
	rq->end_io = blk_end_sync_rq;

	blk_account_io_start(rq);
	blk_mq_insert_request(rq, at_head ? BLK_MQ_INSERT_AT_HEAD : 0);
	blk_mq_run_hw_queue(hctx, false);

	if (blk_rq_is_poll(rq))
		blk_rq_poll_completion(rq, &wait.done);
	else
		blk_wait_io(&wait.done);

	return wait.ret;
}

/* ---- timeouts (block/blk-timeout.c + blk-mq.c) ---- */

/* Rounded up to a whole second so the queue timer is rarely touched. */
#define BLK_MAX_TIMEOUT (5 * HZ)

/* roundup_pow_of_two(HZ) - 1: blk_timeout_init() computes it at boot. */
static const unsigned long blk_timeout_mask = roundup_pow_of_two(HZ) - 1;

/* A cheap upper rounding (no division): timeouts need not be exact. */
static inline unsigned long blk_round_jiffies(unsigned long j)
{
	return (j + blk_timeout_mask) + 1;
}

static unsigned long blk_rq_timeout(unsigned long timeout)
{
	unsigned long maxt = blk_round_jiffies(jiffies + BLK_MAX_TIMEOUT);

	if (time_after(timeout, maxt))
		timeout = maxt;
	return timeout;
}

void blk_add_timer(struct request *req)
{
	struct request_queue *q = req->q;
	unsigned long expiry;

	if (!req->timeout)
		req->timeout = q->rq_timeout;

	req->rq_flags &= ~RQF_TIMED_OUT;

	expiry = jiffies + req->timeout;
	WRITE_ONCE(req->deadline, expiry);

	expiry = blk_rq_timeout(blk_round_jiffies(expiry));

	if (!timer_pending(&q->timeout) || time_before(expiry, READ_ONCE(q->timeout.expires))) {
		unsigned long diff = READ_ONCE(q->timeout.expires) - expiry;

		/* Only move an armed timer for a change of half a second or more. */
		if (!timer_pending(&q->timeout) || (diff >= HZ / 2))
			mod_timer(&q->timeout, expiry);
	}
}

void blk_rq_timed_out_timer(struct timer_list *t)
{
	struct request_queue *q = from_timer(q, t, timeout);

	kblockd_schedule_work(&q->timeout_work);
}

struct blk_expired_data {
	bool has_timedout_rq;
	unsigned long next;
	unsigned long timeout_start;
};

static bool blk_mq_req_expired(struct request *rq, struct blk_expired_data *expired)
{
	unsigned long deadline;

	if (blk_mq_rq_state(rq) != MQ_RQ_IN_FLIGHT)
		return false;
	if (rq->rq_flags & RQF_TIMED_OUT)
		return false;

	deadline = READ_ONCE(rq->deadline);
	if (time_after_eq(expired->timeout_start, deadline))
		return true;

	if (expired->next == 0)
		expired->next = deadline;
	else if (time_after(expired->next, deadline))
		expired->next = deadline;
	return false;
}

static void blk_mq_rq_timed_out(struct request *req)
{
	req->rq_flags |= RQF_TIMED_OUT;
	if (req->q->mq_ops->timeout) {
		enum blk_eh_timer_return ret;

		ret = req->q->mq_ops->timeout(req);
		if (ret == BLK_EH_DONE)
			return;
		WARN_ON_ONCE(ret != BLK_EH_RESET_TIMER);
	}

	blk_add_timer(req);
}

static bool blk_mq_check_expired(struct request *rq, void *priv)
{
	struct blk_expired_data *expired = (struct blk_expired_data *)priv;

	/* One expired request is enough to start handling; stop there. */
	if (blk_mq_req_expired(rq, expired)) {
		expired->has_timedout_rq = true;
		return false;
	}
	return true;
}

static bool blk_mq_handle_expired(struct request *rq, void *priv)
{
	struct blk_expired_data *expired = (struct blk_expired_data *)priv;

	if (blk_mq_req_expired(rq, expired))
		blk_mq_rq_timed_out(rq);
	return true;
}

void blk_mq_timeout_work(struct work_struct *work)
{
	struct request_queue *q = container_of(work, struct request_queue, timeout_work);
	struct blk_expired_data expired = {
		.has_timedout_rq = false,
		.next = 0,
		.timeout_start = jiffies,
	};
	struct blk_mq_hw_ctx *hctx;
	unsigned long i;

	/* A frozen-and-drained queue has nothing to time out. */
	if (!percpu_ref_tryget(&q->q_usage_counter))
		return;

	blk_mq_queue_tag_busy_iter(q, blk_mq_check_expired, &expired);
	if (expired.has_timedout_rq) {
		/*
		 * Let dispatch sections that may still be starting one of
		 * these requests finish first, then time them out.
		 */
		blk_mq_wait_quiesce_done(q->tag_set);

		expired.next = 0;
		blk_mq_queue_tag_busy_iter(q, blk_mq_handle_expired, &expired);
	}

	if (expired.next != 0) {
		mod_timer(&q->timeout, expired.next);
	} else {
		/* Nothing in flight: shared-tag users go idle. */
		queue_for_each_hw_ctx(q, hctx, i)
		{
			if (blk_mq_hw_queue_mapped(hctx))
				blk_mq_tag_idle(hctx);
		}
	}
	blk_queue_exit(q);
}

/* ---- freezing and quiescing ---- */

void blk_queue_usage_counter_release(struct percpu_ref *ref)
{
	struct request_queue *q = container_of(ref, struct request_queue, q_usage_counter);

	wake_up_all(&q->mq_freeze_wq);
}

/* No lockdep: no task owns a freeze, and nothing is to be released at the last unfreeze. */
static bool blk_freeze_set_owner(struct request_queue *q, struct task_struct *owner)
{
	return false;
}

static bool blk_unfreeze_check_owner(struct request_queue *q)
{
	return false;
}

bool __blk_freeze_queue_start(struct request_queue *q, struct task_struct *owner)
{
	bool freeze;

	mutex_lock(&q->mq_freeze_lock);
	freeze = blk_freeze_set_owner(q, owner);
	if (++q->mq_freeze_depth == 1) {
		percpu_ref_kill(&q->q_usage_counter);
		mutex_unlock(&q->mq_freeze_lock);
		if (queue_is_mq(q))
			blk_mq_run_hw_queues(q, false);
	} else {
		mutex_unlock(&q->mq_freeze_lock);
	}

	return freeze;
}

void blk_freeze_queue_start(struct request_queue *q)
{
	if (__blk_freeze_queue_start(q, current))
		blk_freeze_acquire_lock(q, false, false);
}

void blk_mq_freeze_queue_wait(struct request_queue *q)
{
	wait_event(q->mq_freeze_wq, percpu_ref_is_zero(&q->q_usage_counter));
}

int blk_mq_freeze_queue_wait_timeout(struct request_queue *q, unsigned long timeout)
{
	return wait_event_timeout(q->mq_freeze_wq, percpu_ref_is_zero(&q->q_usage_counter),
				  timeout);
}

/* Once it returns, no request of q is in use until the queue is unfrozen. */
void blk_freeze_queue(struct request_queue *q)
{
	blk_freeze_queue_start(q);
	blk_mq_freeze_queue_wait(q);
}

void blk_mq_freeze_queue(struct request_queue *q)
{
	blk_freeze_queue(q);
}

bool __blk_mq_unfreeze_queue(struct request_queue *q, bool force_atomic)
{
	bool unfreeze;

	mutex_lock(&q->mq_freeze_lock);
	if (force_atomic)
		q->q_usage_counter.data->force_atomic = true;
	q->mq_freeze_depth--;
	WARN_ON_ONCE(q->mq_freeze_depth < 0);
	if (!q->mq_freeze_depth) {
		percpu_ref_resurrect(&q->q_usage_counter);
		wake_up_all(&q->mq_freeze_wq);
	}
	unfreeze = blk_unfreeze_check_owner(q);
	mutex_unlock(&q->mq_freeze_lock);

	return unfreeze;
}

void blk_mq_unfreeze_queue(struct request_queue *q)
{
	if (__blk_mq_unfreeze_queue(q, false))
		blk_unfreeze_release_lock(q, false, false);
}

/*
 * Freezing and unfreezing without an owner: the task that unfreezes need
 * not be the one that froze (fragile; for callers that cannot do otherwise).
 */
void blk_freeze_queue_start_non_owner(struct request_queue *q)
{
	__blk_freeze_queue_start(q, NULL);
}

void blk_mq_unfreeze_queue_non_owner(struct request_queue *q)
{
	__blk_mq_unfreeze_queue(q, false);
}

void blk_mq_quiesce_queue_nowait(struct request_queue *q)
{
	unsigned long flags;

	spin_lock_irqsave(&q->queue_lock, flags);
	if (!q->quiesce_depth++)
		blk_queue_flag_set(QUEUE_FLAG_QUIESCED, q);
	spin_unlock_irqrestore(&q->queue_lock, flags);
}

static void blk_mq_synchronize_srcu(struct blk_mq_srcu *sp)
{
	/* The QUIESCED store is visible before we read the count: pairs with blk_mq_srcu_read_lock(). */
	smp_mb();
	wait_event(sp->wq, atomic_read(&sp->readers) == 0);
}

/* Waits until every dispatch section that might miss QUIESCED is over. */
void blk_mq_wait_quiesce_done(struct blk_mq_tag_set *set)
{
	if (set->flags & BLK_MQ_F_BLOCKING)
		blk_mq_synchronize_srcu(&set->srcu);
	else
		synchronize_rcu();
}

void blk_mq_quiesce_queue(struct request_queue *q)
{
	blk_mq_quiesce_queue_nowait(q);
	/* Only blk-mq queues have dispatch sections to wait for. */
	if (queue_is_mq(q))
		blk_mq_wait_quiesce_done(q->tag_set);
}

void blk_mq_unquiesce_queue(struct request_queue *q)
{
	unsigned long flags;
	bool run_queue = false;

	spin_lock_irqsave(&q->queue_lock, flags);
	if (WARN_ON_ONCE(q->quiesce_depth <= 0)) {
		;
	} else if (!--q->quiesce_depth) {
		blk_queue_flag_clear(QUEUE_FLAG_QUIESCED, q);
		run_queue = true;
	}
	spin_unlock_irqrestore(&q->queue_lock, flags);

	/* Dispatch whatever was queued while quiesced. */
	if (run_queue)
		blk_mq_run_hw_queues(q, true);
}

void blk_mq_quiesce_tagset(struct blk_mq_tag_set *set)
{
	struct request_queue *q;

	rcu_read_lock();
	list_for_each_entry_rcu (q, &set->tag_list, tag_set_list) {
		if (!blk_queue_skip_tagset_quiesce(q))
			blk_mq_quiesce_queue_nowait(q);
	}
	rcu_read_unlock();

	blk_mq_wait_quiesce_done(set);
}

void blk_mq_unquiesce_tagset(struct blk_mq_tag_set *set)
{
	struct request_queue *q;

	rcu_read_lock();
	list_for_each_entry_rcu (q, &set->tag_list, tag_set_list) {
		if (!blk_queue_skip_tagset_quiesce(q))
			blk_mq_unquiesce_queue(q);
	}
	rcu_read_unlock();
}

/* Kicks every task sleeping for a tag of q, so that it looks again. */
void blk_mq_wake_waiters(struct request_queue *q)
{
	struct blk_mq_hw_ctx *hctx;
	unsigned long i;

	queue_for_each_hw_ctx(q, hctx, i) if (blk_mq_hw_queue_mapped(hctx))
		blk_mq_tag_wakeup_all(hctx->tags, true);
}

void blk_rq_init(struct request_queue *q, struct request *rq)
{
	memset(rq, 0, sizeof(*rq));

	INIT_LIST_HEAD(&rq->queuelist);
	rq->q = q;
	rq->__sector = (sector_t)-1;
	INIT_HLIST_NODE(&rq->hash);
	RB_CLEAR_NODE(&rq->rb_node);
	rq->tag = BLK_MQ_NO_TAG;
	rq->internal_tag = BLK_MQ_NO_TAG;
	rq->start_time_ns = blk_time_get_ns();
	rq->part = NULL;
	blk_crypto_rq_set_defaults(rq);
}

/* ---- polling ---- */

/*
 * The kernel spins until need_resched(); with no scheduler tick here a
 * bounded spin stands in for it. Callers poll again as they like.
 */
#define BLK_HCTX_POLL_SPINS 1024

static int blk_hctx_poll(struct request_queue *q, struct blk_mq_hw_ctx *hctx,
			 struct io_comp_batch *iob, unsigned int flags)
{
	long state = get_current_state();
	unsigned int spins = 0;
	int ret;

	do {
		ret = q->mq_ops->poll(hctx, iob);
		if (ret > 0) {
			__set_current_state(TASK_RUNNING);
			return ret;
		}

		if (signal_pending_state(state, current))
			__set_current_state(TASK_RUNNING);
		if (task_is_running(current))
			return 1;

		if (ret < 0 || (flags & BLK_POLL_ONESHOT))
			break;
		cpu_relax();
	} while (++spins < BLK_HCTX_POLL_SPINS);

	__set_current_state(TASK_RUNNING);
	return 0;
}

int blk_mq_poll(struct request_queue *q, blk_qc_t cookie, struct io_comp_batch *iob,
		unsigned int flags)
{
	if (!blk_mq_can_poll(q) || cookie >= q->nr_hw_queues)
		return 0;
	return blk_hctx_poll(q, q->queue_hw_ctx[cookie], iob, flags);
}

int blk_rq_poll(struct request *rq, struct io_comp_batch *iob, unsigned int poll_flags)
{
	struct request_queue *q = rq->q;
	int ret;

	if (!blk_rq_is_poll(rq))
		return 0;
	if (!percpu_ref_tryget(&q->q_usage_counter))
		return 0;

	ret = blk_hctx_poll(q, rq->mq_hctx, iob, poll_flags);
	blk_queue_exit(q);

	return ret;
}

unsigned int blk_mq_rq_cpu(struct request *rq)
{
	return rq->mq_ctx->cpu;
}

/* ---- request memory ---- */

static size_t order_to_size(unsigned int order)
{
	return (size_t)PAGE_SIZE << order;
}

/*
 * The shim's struct page is the first byte of the page itself
 * (page_address(page) == page), so it has no room for the list link and the
 * order that the kernel keeps in page->lru and page->private: each block of
 * requests gets one of these, kmalloc'ed beside it, to hold them.
 * page_address() and __free_pages() below take it as they take a struct page.
 */
struct blk_mq_rq_page {
	struct list_head lru;
	unsigned long private_;
	struct page *page;
};

static inline void *page_address(const struct blk_mq_rq_page *page)
{
	return page_address(page->page);
}

/* Frees the block and the descriptor that tracked it. */
static void __free_pages(struct blk_mq_rq_page *page, unsigned int order)
{
	__free_pages(page->page, order);
	kfree(page);
}

/* Called before the requests of @tags are freed. */
static void blk_mq_clear_rq_mapping(struct blk_mq_tags *drv_tags, struct blk_mq_tags *tags)
{
	struct blk_mq_rq_page *page;
	unsigned long flags;

	/*
	 * Nothing to clear when the driver tags are not set up yet, or when
	 * @tags are the driver tags themselves.
	 */
	if (!drv_tags || drv_tags == tags)
		return;

	list_for_each_entry (page, &tags->page_list, lru) {
		unsigned long start = (unsigned long)page_address(page);
		unsigned long end = start + order_to_size(page->private_);
		int i;

		for (i = 0; i < (int)drv_tags->nr_tags; i++) {
			struct request *rq = drv_tags->rqs[i];
			unsigned long rq_addr = (unsigned long)rq;

			if (rq_addr >= start && rq_addr < end) {
				WARN_ON_ONCE(req_ref_read(rq) != 0);
				cmpxchg(&drv_tags->rqs[i], rq, NULL);
			}
		}
	}

	/*
	 * An iterator that found one of the cleared requests holds ->lock
	 * (blk_mq_find_and_get_req()): taking it once waits for that
	 * iteration to end, and any later one reads NULL.
	 */
	spin_lock_irqsave(&drv_tags->lock, flags);
	spin_unlock_irqrestore(&drv_tags->lock, flags);
}

void blk_mq_free_rqs(struct blk_mq_tag_set *set, struct blk_mq_tags *tags, unsigned int hctx_idx)
{
	struct blk_mq_tags *drv_tags;
	struct blk_mq_rq_page *page;

	if (list_empty(&tags->page_list))
		return;

	if (blk_mq_is_shared_tags(set->flags))
		drv_tags = set->shared_tags;
	else
		drv_tags = set->tags[hctx_idx];

	if (tags->static_rqs && set->ops->exit_request) {
		int i;

		for (i = 0; i < (int)tags->nr_tags; i++) {
			struct request *rq = tags->static_rqs[i];

			if (!rq)
				continue;
			set->ops->exit_request(set, rq, hctx_idx);
			tags->static_rqs[i] = NULL;
		}
	}

	blk_mq_clear_rq_mapping(drv_tags, tags);

	while (!list_empty(&tags->page_list)) {
		page = list_first_entry(&tags->page_list, struct blk_mq_rq_page, lru);
		list_del_init(&page->lru);
		/* Drops the kmemleak object that blk_mq_alloc_rqs() created. */
		kmemleak_free(page_address(page));
		__free_pages(page, page->private_);
	}
}

void blk_mq_free_rq_map(struct blk_mq_tags *tags)
{
	kfree(tags->rqs);
	tags->rqs = NULL;
	kfree(tags->static_rqs);
	tags->static_rqs = NULL;

	blk_mq_free_tags(tags);
}

/* Every virtual CPU sits on one node: no hardware queue has a node of its own. */
static int blk_mq_hw_queue_to_node(struct blk_mq_queue_map *qmap, unsigned int index)
{
	return NUMA_NO_NODE;
}

/* The map type whose range of hardware queues holds @hctx_idx. */
static enum hctx_type hctx_idx_to_type(struct blk_mq_tag_set *set, unsigned int hctx_idx)
{
	int i;

	for (i = 0; i < set->nr_maps; i++) {
		unsigned int start = set->map[i].queue_offset;
		unsigned int end = start + set->map[i].nr_queues;

		if (hctx_idx >= start && hctx_idx < end)
			break;
	}

	if (i >= set->nr_maps)
		i = HCTX_TYPE_DEFAULT;

	return (enum hctx_type)i;
}

static int blk_mq_get_hctx_node(struct blk_mq_tag_set *set, unsigned int hctx_idx)
{
	enum hctx_type type = hctx_idx_to_type(set, hctx_idx);

	return blk_mq_hw_queue_to_node(&set->map[type], hctx_idx);
}

static struct blk_mq_tags *blk_mq_alloc_rq_map(struct blk_mq_tag_set *set, unsigned int hctx_idx,
					       unsigned int nr_tags, unsigned int reserved_tags)
{
	int node = blk_mq_get_hctx_node(set, hctx_idx);
	struct blk_mq_tags *tags;

	if (node == NUMA_NO_NODE)
		node = set->numa_node;

	tags = blk_mq_init_tags(nr_tags, reserved_tags, node,
				BLK_MQ_FLAG_TO_ALLOC_POLICY(set->flags));
	if (!tags)
		return NULL;

	tags->rqs = (struct request **)kcalloc_node(nr_tags, sizeof(struct request *),
						    GFP_NOIO | __GFP_NOWARN | __GFP_NORETRY, node);
	if (!tags->rqs)
		goto err_free_tags;

	tags->static_rqs = (struct request **)kcalloc_node(
		nr_tags, sizeof(struct request *), GFP_NOIO | __GFP_NOWARN | __GFP_NORETRY, node);
	if (!tags->static_rqs)
		goto err_free_rqs;

	return tags;

err_free_rqs:
	kfree(tags->rqs);
err_free_tags:
	blk_mq_free_tags(tags);
	return NULL;
}

static int blk_mq_init_request(struct blk_mq_tag_set *set, struct request *rq,
			       unsigned int hctx_idx, int node)
{
	int ret;

	if (set->ops->init_request) {
		ret = set->ops->init_request(set, rq, hctx_idx, node);
		if (ret)
			return ret;
	}

	WRITE_ONCE(rq->state, MQ_RQ_IDLE);
	INIT_LIST_HEAD(&rq->queuelist);
	INIT_LIST_HEAD(&rq->ipi_list);
	return 0;
}

static int blk_mq_alloc_rqs(struct blk_mq_tag_set *set, struct blk_mq_tags *tags,
			    unsigned int hctx_idx, unsigned int depth)
{
	unsigned int i, j, entries_per_page, max_order = 4;
	int node = blk_mq_get_hctx_node(set, hctx_idx);
	size_t rq_size, left;

	if (node == NUMA_NO_NODE)
		node = set->numa_node;

	INIT_LIST_HEAD(&tags->page_list);

	/* Each request and its driver PDU, rounded up to a cache line. */
	rq_size = round_up(sizeof(struct request) + set->cmd_size, cache_line_size());
	left = rq_size * depth;

	for (i = 0; i < depth;) {
		int this_order = max_order;
		struct blk_mq_rq_page *page;
		struct page *block;
		int to_do;
		char *p;

		while (this_order && left < order_to_size(this_order - 1))
			this_order--;

		do {
			block = alloc_pages_node(
				node, GFP_NOIO | __GFP_NOWARN | __GFP_NORETRY | __GFP_ZERO,
				this_order);
			if (block)
				break;
			if (!this_order--)
				break;
			if (order_to_size(this_order) < rq_size)
				break;
		} while (1);

		if (!block)
			goto fail;

		page = (struct blk_mq_rq_page *)kmalloc_node(sizeof(*page), GFP_NOIO, node);
		if (!page) {
			__free_pages(block, this_order);
			goto fail;
		}
		page->page = block;
		page->private_ = this_order;
		list_add_tail(&page->lru, &tags->page_list);

		p = (char *)page_address(page);
		/*
		 * kmemleak scans the block: ->init_request() may keep pointers
		 * to other allocations in the PDUs.
		 */
		kmemleak_alloc(p, order_to_size(this_order), 1, GFP_NOIO);
		entries_per_page = order_to_size(this_order) / rq_size;
		to_do = min(entries_per_page, depth - i);
		left -= to_do * rq_size;
		for (j = 0; j < (unsigned int)to_do; j++) {
			struct request *rq = (struct request *)p;

			tags->static_rqs[i] = rq;
			if (blk_mq_init_request(set, rq, hctx_idx, node)) {
				tags->static_rqs[i] = NULL;
				goto fail;
			}

			p += rq_size;
			i++;
		}
	}
	return 0;

fail:
	blk_mq_free_rqs(set, tags, hctx_idx);
	return -ENOMEM;
}

struct blk_mq_tags *blk_mq_alloc_map_and_rqs(struct blk_mq_tag_set *set, unsigned int hctx_idx,
					     unsigned int depth)
{
	struct blk_mq_tags *tags;
	int ret;

	tags = blk_mq_alloc_rq_map(set, hctx_idx, depth, set->reserved_tags);
	if (!tags)
		return NULL;

	ret = blk_mq_alloc_rqs(set, tags, hctx_idx, depth);
	if (ret) {
		blk_mq_free_rq_map(tags);
		return NULL;
	}
	return tags;
}

void blk_mq_free_map_and_rqs(struct blk_mq_tag_set *set, struct blk_mq_tags *tags,
			     unsigned int hctx_idx)
{
	if (tags) {
		blk_mq_free_rqs(set, tags, hctx_idx);
		blk_mq_free_rq_map(tags);
	}
}

static bool __blk_mq_alloc_map_and_rqs(struct blk_mq_tag_set *set, int hctx_idx)
{
	if (blk_mq_is_shared_tags(set->flags)) {
		set->tags[hctx_idx] = set->shared_tags;
		return true;
	}

	set->tags[hctx_idx] = blk_mq_alloc_map_and_rqs(set, hctx_idx, set->queue_depth);
	return set->tags[hctx_idx];
}

static void __blk_mq_free_map_and_rqs(struct blk_mq_tag_set *set, unsigned int hctx_idx)
{
	if (!blk_mq_is_shared_tags(set->flags))
		blk_mq_free_map_and_rqs(set, set->tags[hctx_idx], hctx_idx);
	set->tags[hctx_idx] = NULL;
}

static int __blk_mq_alloc_rq_maps(struct blk_mq_tag_set *set)
{
	int i;

	if (blk_mq_is_shared_tags(set->flags)) {
		set->shared_tags =
			blk_mq_alloc_map_and_rqs(set, BLK_MQ_NO_HCTX_IDX, set->queue_depth);
		if (!set->shared_tags)
			return -ENOMEM;
	}

	for (i = 0; i < (int)set->nr_hw_queues; i++) {
		if (!__blk_mq_alloc_map_and_rqs(set, i))
			goto out_unwind;
		cond_resched();
	}
	return 0;

out_unwind:
	while (--i >= 0)
		__blk_mq_free_map_and_rqs(set, i);

	if (blk_mq_is_shared_tags(set->flags)) {
		blk_mq_free_map_and_rqs(set, set->shared_tags, BLK_MQ_NO_HCTX_IDX);
	}
	return -ENOMEM;
}

/*
 * Allocates the set's request maps, halving the depth after each failure
 * until the reserved tags and BLK_MQ_TAG_MIN would no longer fit; the depth
 * that worked is left in set->queue_depth.
 */
static int blk_mq_alloc_set_map_and_rqs(struct blk_mq_tag_set *set)
{
	unsigned int depth;
	int err;

	depth = set->queue_depth;
	do {
		err = __blk_mq_alloc_rq_maps(set);
		if (!err)
			break;

		set->queue_depth >>= 1;
		if (set->queue_depth < set->reserved_tags + BLK_MQ_TAG_MIN) {
			err = -ENOMEM;
			break;
		}
	} while (set->queue_depth);

	if (!set->queue_depth || err) {
		pr_err("blk-mq: failed to allocate request map\n");
		return -ENOMEM;
	}

	if (depth != set->queue_depth)
		pr_info("blk-mq: reduced tag depth (%u -> %u)\n", depth, set->queue_depth);

	return 0;
}

/* ---- queue maps ---- */

/*
 * Spreads the CPUs over the map's queues in consecutive groups (what
 * group_cpus_evenly() gives on a flat topology).
 */
void blk_mq_map_queues(struct blk_mq_queue_map *qmap)
{
	unsigned int cpu;

	if (!qmap->nr_queues) {
		for_each_possible_cpu (cpu)
			qmap->mq_map[cpu] = qmap->queue_offset;
		return;
	}
	for_each_possible_cpu (cpu) {
		unsigned int q = cpu < nr_cpu_ids ? cpu * qmap->nr_queues / nr_cpu_ids : 0;

		qmap->mq_map[cpu] = qmap->queue_offset + q;
	}
}

static void blk_mq_update_queue_map(struct blk_mq_tag_set *set)
{
	if (set->nr_maps == 1)
		set->map[HCTX_TYPE_DEFAULT].nr_queues = set->nr_hw_queues;

	if (set->ops->map_queues) {
		int i;

		/*
		 * A driver's ->map_queues sets the CPUs it maps and nothing
		 * else: start from a clean table, so that a CPU it leaves out
		 * keeps no stale entry.
		 */
		for (i = 0; i < (int)set->nr_maps; i++)
			blk_mq_clear_mq_map(&set->map[i]);

		set->ops->map_queues(set);
	} else {
		BUG_ON(set->nr_maps > 1);
		blk_mq_map_queues(&set->map[HCTX_TYPE_DEFAULT]);
	}
}

/*
 * Grows set->tags to @new_nr_hw_queues slots and allocates the maps of the
 * new hardware queues; a shrink keeps the array and the maps, which the
 * caller frees once no queue uses them.
 */
static int blk_mq_realloc_tag_set_tags(struct blk_mq_tag_set *set, int new_nr_hw_queues)
{
	struct blk_mq_tags **new_tags;
	int i;

	if ((int)set->nr_hw_queues >= new_nr_hw_queues)
		goto done;

	new_tags = (struct blk_mq_tags **)kcalloc_node(
		new_nr_hw_queues, sizeof(struct blk_mq_tags *), GFP_KERNEL, set->numa_node);
	if (!new_tags)
		return -ENOMEM;

	if (set->tags)
		memcpy(new_tags, set->tags, set->nr_hw_queues * sizeof(*set->tags));
	kfree(set->tags);
	set->tags = new_tags;

	for (i = set->nr_hw_queues; i < new_nr_hw_queues; i++) {
		if (!__blk_mq_alloc_map_and_rqs(set, i)) {
			while (--i >= (int)set->nr_hw_queues)
				__blk_mq_free_map_and_rqs(set, i);
			return -ENOMEM;
		}
		cond_resched();
	}

done:
	set->nr_hw_queues = new_nr_hw_queues;
	return 0;
}

int blk_mq_alloc_tag_set(struct blk_mq_tag_set *set)
{
	unsigned int i;
	int ret;

	blk_mq_init_once();

	if (!set->nr_hw_queues)
		return -EINVAL;
	if (!set->queue_depth)
		return -EINVAL;
	if (set->queue_depth < set->reserved_tags + BLK_MQ_TAG_MIN)
		return -EINVAL;
	if (!set->ops || !set->ops->queue_rq)
		return -EINVAL;
	if (set->queue_depth > BLK_MQ_MAX_DEPTH) {
		pr_info("blk-mq: reduced tag depth to %u\n", BLK_MQ_MAX_DEPTH);
		set->queue_depth = BLK_MQ_MAX_DEPTH;
	}

	if (!set->nr_maps)
		set->nr_maps = 1;
	else if (set->nr_maps > HCTX_MAX_TYPES)
		return -EINVAL;

	/* More hw queues than CPUs would leave some without a CPU. */
	if (set->nr_maps == 1 && set->nr_hw_queues > nr_cpu_ids)
		set->nr_hw_queues = nr_cpu_ids;

	if (set->flags & BLK_MQ_F_BLOCKING) {
		atomic_set(&set->srcu.readers, 0);
		init_waitqueue_head(&set->srcu.wq);
	}

	set->tags = (struct blk_mq_tags **)kcalloc_node(
		set->nr_hw_queues, sizeof(struct blk_mq_tags *), GFP_KERNEL, set->numa_node);
	if (!set->tags)
		return -ENOMEM;

	ret = -ENOMEM;
	for (i = 0; i < set->nr_maps; i++) {
		set->map[i].mq_map = (unsigned int *)kcalloc_node(
			nr_cpu_ids > NR_CPUS ? nr_cpu_ids : NR_CPUS, sizeof(set->map[i].mq_map[0]),
			GFP_KERNEL, set->numa_node);
		if (!set->map[i].mq_map)
			goto out_free_mq_map;
		set->map[i].nr_queues = set->nr_hw_queues;
	}

	blk_mq_update_queue_map(set);

	ret = blk_mq_alloc_set_map_and_rqs(set);
	if (ret)
		goto out_free_mq_map;

	mutex_init(&set->tag_list_lock);
	INIT_LIST_HEAD(&set->tag_list);
	return 0;

out_free_mq_map:
	for (i = 0; i < set->nr_maps; i++) {
		kfree(set->map[i].mq_map);
		set->map[i].mq_map = NULL;
	}
	kfree(set->tags);
	set->tags = NULL;
	return ret;
}

/* A tag set of one hardware queue and one map. */
int blk_mq_alloc_sq_tag_set(struct blk_mq_tag_set *set, const struct blk_mq_ops *ops,
			    unsigned int queue_depth, unsigned int set_flags)
{
	memset((void *)set, 0, sizeof(*set));
	set->ops = ops;
	set->nr_hw_queues = 1;
	set->nr_maps = 1;
	set->queue_depth = queue_depth;
	set->numa_node = NUMA_NO_NODE;
	set->flags = set_flags;
	return blk_mq_alloc_tag_set(set);
}

void blk_mq_free_tag_set(struct blk_mq_tag_set *set)
{
	unsigned int i, j;

	for (i = 0; i < set->nr_hw_queues; i++)
		__blk_mq_free_map_and_rqs(set, i);

	if (blk_mq_is_shared_tags(set->flags)) {
		blk_mq_free_map_and_rqs(set, set->shared_tags, BLK_MQ_NO_HCTX_IDX);
		set->shared_tags = NULL;
	}

	for (j = 0; j < set->nr_maps; j++) {
		kfree(set->map[j].mq_map);
		set->map[j].mq_map = NULL;
	}

	kfree(set->tags);
	set->tags = NULL;
}

/* ---- hardware and software contexts ---- */

static struct blk_mq_hw_ctx *blk_mq_alloc_hctx(struct request_queue *q, struct blk_mq_tag_set *set,
					       int node)
{
	struct blk_mq_hw_ctx *hctx;

	hctx = (struct blk_mq_hw_ctx *)kzalloc_node(sizeof(*hctx), GFP_KERNEL, node);
	if (!hctx)
		return NULL;

	if (!zalloc_cpumask_var_node(&hctx->cpumask, GFP_KERNEL, node))
		goto free_hctx;

	spin_lock_init(&hctx->lock);
	INIT_LIST_HEAD(&hctx->dispatch);
	INIT_DELAYED_WORK(&hctx->run_work, blk_mq_run_work_fn);
	INIT_HLIST_NODE(&hctx->cpuhp_dead);
	INIT_HLIST_NODE(&hctx->cpuhp_online);
	hctx->queue = q;
	hctx->flags = set->flags & ~BLK_MQ_F_TAG_QUEUE_SHARED;
	hctx->numa_node = node;

	INIT_LIST_HEAD(&hctx->hctx_list);

	hctx->ctxs =
		(struct blk_mq_ctx **)kcalloc_node(nr_cpu_ids, sizeof(void *), GFP_KERNEL, node);
	if (!hctx->ctxs)
		goto free_hctx;

	if (sbitmap_init_node(&hctx->ctx_map, nr_cpu_ids, ilog2(8), GFP_KERNEL, node, false, false))
		goto free_ctxs;
	hctx->nr_ctx = 0;

	spin_lock_init(&hctx->dispatch_wait_lock);
	init_waitqueue_func_entry(&hctx->dispatch_wait, blk_mq_dispatch_wake);
	INIT_LIST_HEAD(&hctx->dispatch_wait.entry);
	return hctx;

free_ctxs:
	kfree(hctx->ctxs);
	free_cpumask_var(hctx->cpumask);
free_hctx:
	kfree(hctx);
	return NULL;
}

static int blk_mq_init_hctx(struct request_queue *q, struct blk_mq_tag_set *set,
			    struct blk_mq_hw_ctx *hctx, unsigned int hctx_idx)
{
	hctx->queue_num = hctx_idx;
	clear_bit(BLK_MQ_S_INACTIVE, &hctx->state);

	hctx->tags = set->tags[hctx_idx];

	if (set->ops->init_hctx && set->ops->init_hctx(hctx, set->driver_data, hctx_idx))
		goto fail;

	if (!(hctx->flags & BLK_MQ_F_STACKING))
		cpuhp_state_add_instance_nocalls(CPUHP_AP_BLK_MQ_ONLINE, &hctx->cpuhp_online);
	cpuhp_state_add_instance_nocalls(CPUHP_BLK_MQ_DEAD, &hctx->cpuhp_dead);

	return 0;

fail:
	return -1;
}

struct rq_iter_data {
	struct blk_mq_hw_ctx *hctx;
	bool has_rq;
};

/* Stops the walk at the first request of @data's hctx. */
static bool blk_mq_has_request(struct request *rq, void *data)
{
	struct rq_iter_data *iter_data = (struct rq_iter_data *)data;

	if (READ_ONCE(rq->mq_hctx) != iter_data->hctx)
		return true;
	iter_data->has_rq = true;
	return false;
}

/* Whether any request of @hctx holds a tag (allocated, queued or started). */
static bool blk_mq_hctx_has_requests(struct blk_mq_hw_ctx *hctx)
{
	struct blk_mq_tags *tags = hctx->sched_tags ? hctx->sched_tags : hctx->tags;
	struct rq_iter_data data = {
		.hctx = hctx,
	};

	blk_mq_all_tag_iter(tags, blk_mq_has_request, &data);
	return data.has_rq;
}

/*
 * Whether a CPU other than @this_cpu is online and mapped to @hctx. The
 * queue map decides, not hctx->cpumask, which would leave isolated CPUs out.
 */
static bool blk_mq_hctx_has_online_cpu(struct blk_mq_hw_ctx *hctx, unsigned int this_cpu)
{
	enum hctx_type type = (enum hctx_type)hctx->type;
	int cpu;

	for_each_online_cpu (cpu) {
		struct blk_mq_hw_ctx *h = blk_mq_map_queue_type(hctx->queue, type, cpu);

		if (h != hctx)
			continue;

		if (this_cpu != (unsigned int)cpu)
			return true;
	}

	return false;
}

/*
 * CPUHP_AP_BLK_MQ_ONLINE teardown, on @cpu before it goes: when it is the
 * last online CPU of @hctx, stop tag allocation there and wait until the
 * requests @hctx has out are all freed.
 */
static int blk_mq_hctx_notify_offline(unsigned int cpu, struct hlist_node *node)
{
	struct blk_mq_hw_ctx *hctx = hlist_entry_safe(node, struct blk_mq_hw_ctx, cpuhp_online);
	int ret = 0;

	if (!hctx->nr_ctx || blk_mq_hctx_has_online_cpu(hctx, cpu))
		return 0;

	/*
	 * The barrier orders the INACTIVE bit before the tag walk below; it
	 * pairs with the acquire of the tag bit in sbitmap_get(), after which
	 * blk_mq_get_tag() tests INACTIVE and hands the tag back.
	 */
	set_bit(BLK_MQ_S_INACTIVE, &hctx->state);
	smp_mb__after_atomic();

	/* No reference: the queue is frozen, so no request is out. */
	if (percpu_ref_tryget(&hctx->queue->q_usage_counter)) {
		while (blk_mq_hctx_has_requests(hctx)) {
			/* A wakeup event during suspend: give up, stay active. */
			if (pm_wakeup_pending()) {
				clear_bit(BLK_MQ_S_INACTIVE, &hctx->state);
				ret = -EBUSY;
				break;
			}
			msleep(5);
		}
		percpu_ref_put(&hctx->queue->q_usage_counter);
	}

	return ret;
}

/* CPUHP_AP_BLK_MQ_ONLINE startup, on @cpu: its hctx takes requests again. */
static int blk_mq_hctx_notify_online(unsigned int cpu, struct hlist_node *node)
{
	struct blk_mq_hw_ctx *hctx = hlist_entry_safe(node, struct blk_mq_hw_ctx, cpuhp_online);

	if (blk_mq_cpu_mapped_to_hctx(cpu, hctx))
		clear_bit(BLK_MQ_S_INACTIVE, &hctx->state);
	return 0;
}

/*
 * CPUHP_BLK_MQ_DEAD teardown, on another CPU once @cpu is dead: requests
 * left in @cpu's software queue for @hctx go to the hctx's dispatch list,
 * and the hctx runs.
 */
static int blk_mq_hctx_notify_dead(unsigned int cpu, struct hlist_node *node)
{
	struct blk_mq_hw_ctx *hctx;
	struct blk_mq_ctx *ctx;
	LIST_HEAD(tmp);
	enum hctx_type type;

	hctx = hlist_entry_safe(node, struct blk_mq_hw_ctx, cpuhp_dead);
	if (!blk_mq_cpu_mapped_to_hctx(cpu, hctx))
		return 0;

	ctx = __blk_mq_get_ctx(hctx->queue, cpu);
	type = (enum hctx_type)hctx->type;

	spin_lock(&ctx->lock);
	if (!list_empty(&ctx->rq_lists[type])) {
		list_splice_init(&ctx->rq_lists[type], &tmp);
		blk_mq_hctx_clear_pending(hctx, ctx);
	}
	spin_unlock(&ctx->lock);

	if (list_empty(&tmp))
		return 0;

	spin_lock(&hctx->lock);
	list_splice_tail_init(&tmp, &hctx->dispatch);
	spin_unlock(&hctx->lock);

	blk_mq_run_hw_queue(hctx, true);
	return 0;
}

static void __blk_mq_remove_cpuhp(struct blk_mq_hw_ctx *hctx)
{
	lockdep_assert_held(&blk_mq_cpuhp_lock);

	if (!(hctx->flags & BLK_MQ_F_STACKING) && !hlist_unhashed(&hctx->cpuhp_online)) {
		cpuhp_state_remove_instance_nocalls(CPUHP_AP_BLK_MQ_ONLINE, &hctx->cpuhp_online);
		INIT_HLIST_NODE(&hctx->cpuhp_online);
	}

	if (!hlist_unhashed(&hctx->cpuhp_dead)) {
		cpuhp_state_remove_instance_nocalls(CPUHP_BLK_MQ_DEAD, &hctx->cpuhp_dead);
		INIT_HLIST_NODE(&hctx->cpuhp_dead);
	}
}

static void blk_mq_remove_cpuhp(struct blk_mq_hw_ctx *hctx)
{
	mutex_lock(&blk_mq_cpuhp_lock);
	__blk_mq_remove_cpuhp(hctx);
	mutex_unlock(&blk_mq_cpuhp_lock);
}

static void __blk_mq_add_cpuhp(struct blk_mq_hw_ctx *hctx)
{
	lockdep_assert_held(&blk_mq_cpuhp_lock);

	if (!(hctx->flags & BLK_MQ_F_STACKING) && hlist_unhashed(&hctx->cpuhp_online))
		cpuhp_state_add_instance_nocalls(CPUHP_AP_BLK_MQ_ONLINE, &hctx->cpuhp_online);

	if (hlist_unhashed(&hctx->cpuhp_dead))
		cpuhp_state_add_instance_nocalls(CPUHP_BLK_MQ_DEAD, &hctx->cpuhp_dead);
}

static void __blk_mq_remove_cpuhp_list(struct list_head *head)
{
	struct blk_mq_hw_ctx *hctx;

	lockdep_assert_held(&blk_mq_cpuhp_lock);

	list_for_each_entry (hctx, head, hctx_list)
		__blk_mq_remove_cpuhp(hctx);
}

/*
 * Takes the exited hctxs out of the cpuhp states; the list is moved aside
 * meanwhile, as the cpuhp mutex may not nest in the spinlock.
 */
static void blk_mq_remove_hw_queues_cpuhp(struct request_queue *q)
{
	LIST_HEAD(hctx_list);

	spin_lock(&q->unused_hctx_lock);
	list_splice_init(&q->unused_hctx_list, &hctx_list);
	spin_unlock(&q->unused_hctx_lock);

	mutex_lock(&blk_mq_cpuhp_lock);
	__blk_mq_remove_cpuhp_list(&hctx_list);
	mutex_unlock(&blk_mq_cpuhp_lock);

	spin_lock(&q->unused_hctx_lock);
	list_splice(&hctx_list, &q->unused_hctx_list);
	spin_unlock(&q->unused_hctx_lock);
}

/* Puts every hctx of @q in the cpuhp states it is not in yet. */
static void blk_mq_add_hw_queues_cpuhp(struct request_queue *q)
{
	struct blk_mq_hw_ctx *hctx;
	unsigned long i;

	mutex_lock(&blk_mq_cpuhp_lock);
	queue_for_each_hw_ctx(q, hctx, i) __blk_mq_add_cpuhp(hctx);
	mutex_unlock(&blk_mq_cpuhp_lock);
}

static void blk_mq_exit_hctx(struct request_queue *q, struct blk_mq_tag_set *set,
			     struct blk_mq_hw_ctx *hctx, unsigned int hctx_idx)
{
	if (blk_mq_hw_queue_mapped(hctx))
		blk_mq_tag_idle(hctx);
	if (set->ops->exit_hctx)
		set->ops->exit_hctx(hctx, hctx_idx);

	spin_lock(&q->unused_hctx_lock);
	list_add(&hctx->hctx_list, &q->unused_hctx_list);
	spin_unlock(&q->unused_hctx_lock);
}

static void blk_mq_free_hctx(struct blk_mq_hw_ctx *hctx)
{
	free_cpumask_var(hctx->cpumask);
	sbitmap_free(&hctx->ctx_map);
	kfree(hctx->ctxs);
	kfree(hctx);
}

static void blk_mq_init_cpu_queues(struct request_queue *q, unsigned int nr_hw_queues)
{
	unsigned int i, j;

	for_each_possible_cpu (i) {
		struct blk_mq_ctx *__ctx = per_cpu_ptr(q->queue_ctx, i);

		__ctx->cpu = i;
		spin_lock_init(&__ctx->lock);
		for (j = 0; j < HCTX_MAX_TYPES; j++)
			INIT_LIST_HEAD(&__ctx->rq_lists[j]);
		__ctx->queue = q;
	}
}

/* Wires every CPU's software queue to its hardware queue, per map type. */
static void blk_mq_map_swqueue(struct request_queue *q)
{
	unsigned int j, hctx_idx;
	unsigned long i;
	struct blk_mq_hw_ctx *hctx;
	struct blk_mq_ctx *ctx;
	struct blk_mq_tag_set *set = q->tag_set;

	queue_for_each_hw_ctx(q, hctx, i)
	{
		cpumask_clear(hctx->cpumask);
		hctx->nr_ctx = 0;
		hctx->dispatch_from = NULL;
		hctx->type = HCTX_TYPE_DEFAULT;
	}

	for (i = 0; i < nr_cpu_ids; i++) {
		ctx = per_cpu_ptr(q->queue_ctx, i);
		for (j = 0; j < set->nr_maps; j++) {
			if (!set->map[j].nr_queues) {
				ctx->hctxs[j] = blk_mq_map_queue_type(q, HCTX_TYPE_DEFAULT, i);
				continue;
			}
			hctx_idx = set->map[j].mq_map[i];
			hctx = blk_mq_map_queue_type(q, (enum hctx_type)j, i);
			ctx->hctxs[j] = hctx;

			/* A CPU may map to the same hctx through several types. */
			if (cpumask_test_cpu(i, hctx->cpumask))
				continue;

			cpumask_set_cpu(i, hctx->cpumask);
			hctx->type = j;
			ctx->index_hw[hctx->type] = hctx->nr_ctx;
			hctx->ctxs[hctx->nr_ctx++] = ctx;
			(void)hctx_idx;
		}

		for (; j < HCTX_MAX_TYPES; j++)
			ctx->hctxs[j] = blk_mq_map_queue_type(q, HCTX_TYPE_DEFAULT, i);
	}
	for (i = nr_cpu_ids; i < NR_CPUS; i++) {
		ctx = per_cpu_ptr(q->queue_ctx, i);
		for (j = 0; j < HCTX_MAX_TYPES; j++)
			ctx->hctxs[j] = q->queue_hw_ctx[0];
	}

	queue_for_each_hw_ctx(q, hctx, i)
	{
		int cpu;

		hctx->tags = set->tags[i];
		if (!hctx->nr_ctx)
			continue;
		sbitmap_resize(&hctx->ctx_map, hctx->nr_ctx);

		/* no kernel work on the CPUs kept for applications */
		for_each_cpu(cpu, hctx->cpumask)
		{
			if (cpu_is_isolated(cpu))
				cpumask_clear_cpu(cpu, hctx->cpumask);
		}

		/* asynchronous runs start on the first mapped CPU */
		WRITE_ONCE(hctx->next_cpu, blk_mq_first_mapped_cpu(hctx));
		WRITE_ONCE(hctx->next_cpu_batch, BLK_MQ_CPU_WORK_BATCH);
	}
}

static void queue_set_hctx_shared(struct request_queue *q, bool shared)
{
	struct blk_mq_hw_ctx *hctx;
	unsigned long i;

	queue_for_each_hw_ctx(q, hctx, i)
	{
		if (shared) {
			hctx->flags |= BLK_MQ_F_TAG_QUEUE_SHARED;
		} else {
			blk_mq_tag_idle(hctx);
			hctx->flags &= ~BLK_MQ_F_TAG_QUEUE_SHARED;
		}
	}
}

static void blk_mq_update_tag_set_shared(struct blk_mq_tag_set *set, bool shared)
{
	struct request_queue *q;

	lockdep_assert_held(&set->tag_list_lock);

	list_for_each_entry (q, &set->tag_list, tag_set_list) {
		blk_mq_freeze_queue(q);
		queue_set_hctx_shared(q, shared);
		blk_mq_unfreeze_queue(q);
	}
}

static void blk_mq_add_queue_tag_set(struct blk_mq_tag_set *set, struct request_queue *q)
{
	mutex_lock(&set->tag_list_lock);

	/* The second user: everybody starts fair sharing. */
	if (!list_empty(&set->tag_list) && !(set->flags & BLK_MQ_F_TAG_QUEUE_SHARED)) {
		set->flags |= BLK_MQ_F_TAG_QUEUE_SHARED;
		blk_mq_update_tag_set_shared(set, true);
	}
	if (set->flags & BLK_MQ_F_TAG_QUEUE_SHARED)
		queue_set_hctx_shared(q, true);
	list_add_tail_rcu(&q->tag_set_list, &set->tag_list);

	mutex_unlock(&set->tag_list_lock);
}

static void blk_mq_del_queue_tag_set(struct request_queue *q)
{
	struct blk_mq_tag_set *set = q->tag_set;

	mutex_lock(&set->tag_list_lock);
	list_del_rcu(&q->tag_set_list);
	if (list_is_singular(&set->tag_list)) {
		/* Down to a single queue: fair sharing no longer applies. */
		set->flags &= ~BLK_MQ_F_TAG_QUEUE_SHARED;
		blk_mq_update_tag_set_shared(set, false);
	}
	mutex_unlock(&set->tag_list_lock);
}

static void blk_mq_exit_hw_queues(struct request_queue *q, struct blk_mq_tag_set *set, int nr_queue)
{
	struct blk_mq_hw_ctx *hctx;
	unsigned long i;

	queue_for_each_hw_ctx(q, hctx, i)
	{
		if ((int)i == nr_queue)
			break;
		blk_mq_remove_cpuhp(hctx);
		blk_mq_exit_hctx(q, set, hctx, i);
	}
}

/* Every hctx is on q->unused_hctx_list by now (exited). */
static void blk_mq_free_hw_queues(struct request_queue *q)
{
	struct blk_mq_hw_ctx *hctx, *next;
	unsigned int i;

	for (i = 0; i < q->nr_hw_queues; i++)
		WARN_ON_ONCE(q->queue_hw_ctx[i] && list_empty(&q->queue_hw_ctx[i]->hctx_list));

	list_for_each_entry_safe (hctx, next, &q->unused_hctx_list, hctx_list) {
		list_del_init(&hctx->hctx_list);
		blk_mq_free_hctx(hctx);
	}
	kfree(q->queue_hw_ctx);
	q->queue_hw_ctx = NULL;
	q->nr_hw_queues = 0;
}

/*
 * Gives @q set->nr_hw_queues hardware contexts. A context @q already has is
 * exited and initialized again for its index (the kernel's reuse of an
 * exited context); only the contexts beyond @q's present count are
 * allocated. When one of those cannot be made, the new ones are exited and
 * q->nr_hw_queues keeps its value, which the caller compares with the set's;
 * contexts beyond a smaller count are exited. Exited contexts leave the
 * cpuhp states and wait on q->unused_hctx_list for blk_mq_release().
 */
static void blk_mq_realloc_hw_ctxs(struct blk_mq_tag_set *set, struct request_queue *q)
{
	struct blk_mq_hw_ctx **hctxs = q->queue_hw_ctx;
	unsigned int i, j;

	if (set->nr_hw_queues > q->nr_hw_queues) {
		hctxs = (struct blk_mq_hw_ctx **)kcalloc_node(set->nr_hw_queues, sizeof(*hctxs),
							      GFP_KERNEL, set->numa_node);
		if (!hctxs)
			return;
		if (q->nr_hw_queues)
			memcpy(hctxs, q->queue_hw_ctx, q->nr_hw_queues * sizeof(*hctxs));
		kfree(q->queue_hw_ctx);
		q->queue_hw_ctx = hctxs;
	}

	for (i = 0; i < set->nr_hw_queues; i++) {
		struct blk_mq_hw_ctx *hctx = i < q->nr_hw_queues ? hctxs[i] : NULL;

		if (hctx) {
			/* Exited, out of the cpuhp states and off the unused list: reusable. */
			blk_mq_exit_hctx(q, set, hctx, i);
			blk_mq_remove_cpuhp(hctx);
			spin_lock(&q->unused_hctx_lock);
			list_del_init(&hctx->hctx_list);
			spin_unlock(&q->unused_hctx_lock);
			WARN_ON_ONCE(blk_mq_init_hctx(q, set, hctx, i));
			continue;
		}
		hctx = blk_mq_alloc_hctx(q, set, set->numa_node);
		if (!hctx)
			break;
		if (blk_mq_init_hctx(q, set, hctx, i)) {
			blk_mq_free_hctx(hctx);
			break;
		}
		hctxs[i] = hctx;
	}

	if (i != set->nr_hw_queues) {
		j = q->nr_hw_queues;
	} else {
		j = i;
		i = q->nr_hw_queues;
		q->nr_hw_queues = set->nr_hw_queues;
	}
	/* the contexts from j up to i are not @q's any more: on the unused list */
	for (; j < i; j++) {
		blk_mq_exit_hctx(q, set, hctxs[j], j);
		hctxs[j] = NULL;
	}
	if (!q->nr_hw_queues) {
		kfree(q->queue_hw_ctx);
		q->queue_hw_ctx = NULL;
	}

	/* unregister cpuhp callbacks for exited hctxs */
	blk_mq_remove_hw_queues_cpuhp(q);

	/* register cpuhp for new initialized hctxs */
	blk_mq_add_hw_queues_cpuhp(q);
	if (set->flags & BLK_MQ_F_TAG_QUEUE_SHARED)
		queue_set_hctx_shared(q, true);
}

/* Freed by blk_mq_release(), when the last reference to the queue goes. */
static int blk_mq_alloc_ctxs(struct request_queue *q)
{
	struct blk_mq_ctxs *ctxs;
	int cpu;

	ctxs = (struct blk_mq_ctxs *)kzalloc(sizeof(*ctxs), GFP_KERNEL);
	if (!ctxs)
		return -ENOMEM;

	ctxs->queue_ctx = alloc_percpu(struct blk_mq_ctx);
	if (!ctxs->queue_ctx)
		goto fail;

	for_each_possible_cpu (cpu) {
		struct blk_mq_ctx *ctx = per_cpu_ptr(ctxs->queue_ctx, cpu);
		ctx->ctxs = ctxs;
	}

	q->mq_ctxs = ctxs;
	q->queue_ctx = ctxs->queue_ctx;

	return 0;
fail:
	kfree(ctxs);
	return -ENOMEM;
}

/*
 * The blk-mq part of freeing a queue: its hardware contexts (exited by
 * blk_mq_exit_queue()) and its software queues. blk_free_queue() calls it
 * when the last reference goes.
 */
void blk_mq_release(struct request_queue *q)
{
	struct blk_mq_ctxs *ctxs = q->mq_ctxs;

	blk_mq_free_hw_queues(q);

	q->queue_ctx = NULL;
	q->mq_ctxs = NULL;
	free_percpu(ctxs->queue_ctx);
	kfree(ctxs);
}

static int blk_mq_init_allocated_queue(struct blk_mq_tag_set *set, struct request_queue *q)
{
	q->mq_ops = set->ops;
	q->tag_set = set;

	if (blk_mq_alloc_ctxs(q))
		goto err_exit;

	INIT_LIST_HEAD(&q->unused_hctx_list);
	spin_lock_init(&q->unused_hctx_lock);

	blk_mq_realloc_hw_ctxs(set, q);
	if (!q->nr_hw_queues)
		goto err_hctxs;

	INIT_WORK(&q->timeout_work, blk_mq_timeout_work);
	blk_queue_rq_timeout(q, set->timeout ? set->timeout : 30 * HZ);

	INIT_LIST_HEAD(&q->requeue_list);
	spin_lock_init(&q->requeue_lock);
	INIT_DELAYED_WORK(&q->requeue_work, blk_mq_requeue_work);

	q->nr_requests = set->queue_depth;

	blk_mq_init_cpu_queues(q, set->nr_hw_queues);
	blk_mq_add_queue_tag_set(set, q);
	blk_mq_map_swqueue(q);
	return 0;

err_hctxs:
	blk_mq_release(q);
err_exit:
	q->mq_ops = NULL;
	return -ENOMEM;
}

void blk_queue_rq_timeout(struct request_queue *q, unsigned int timeout)
{
	q->rq_timeout = timeout;
}

/* blk_alloc_queue(): the queue itself (block/blk-core.c). */
static struct request_queue *blk_alloc_queue(struct queue_limits *lim, int node_id)
{
	struct request_queue *q;

	q = (struct request_queue *)kzalloc_node(sizeof(*q), GFP_KERNEL, node_id);
	if (!q)
		return NULL;

	if (percpu_ref_init(&q->q_usage_counter, blk_queue_usage_counter_release,
			    PERCPU_REF_INIT_ATOMIC, GFP_KERNEL)) {
		kfree(q);
		return NULL;
	}
	if (lim)
		q->limits = *lim;
	if (!q->limits.logical_block_size)
		q->limits.logical_block_size = SECTOR_SIZE;
	if (!q->limits.max_hw_sectors)
		q->limits.max_hw_sectors = 255;
	if (!q->limits.max_sectors)
		q->limits.max_sectors = q->limits.max_hw_sectors;

	mutex_init(&q->mq_freeze_lock);
	init_waitqueue_head(&q->mq_freeze_wq);
	spin_lock_init(&q->queue_lock);
	timer_setup(&q->timeout, blk_rq_timed_out_timer, 0);
	INIT_LIST_HEAD(&q->tag_set_list);
	refcount_set(&q->refs, 1);
	/* Complete on the submitting CPU (QUEUE_FLAG_MQ_DEFAULT). */
	q->queue_flags = (1UL << QUEUE_FLAG_SAME_COMP) | (1UL << QUEUE_FLAG_NOMERGES);
	return q;
}

/*
 * After a grace period: a percpu_ref callback that is still running (the
 * confirmation of the switch to atomic, whose put may be the last and wake
 * mq_freeze_wq) ends before the queue goes.
 */
static void blk_free_queue_rcu(struct rcu_head *rcu_head)
{
	struct request_queue *q = container_of(rcu_head, struct request_queue, rcu_head);

	percpu_ref_exit(&q->q_usage_counter);
	kfree(q);
}

static void blk_free_queue(struct request_queue *q)
{
	if (queue_is_mq(q))
		blk_mq_release(q);
	call_rcu(&q->rcu_head, blk_free_queue_rcu);
}

void blk_put_queue(struct request_queue *q)
{
	if (refcount_dec_and_test(&q->refs))
		blk_free_queue(q);
}

struct request_queue *blk_mq_alloc_queue(struct blk_mq_tag_set *set, struct queue_limits *lim,
					 void *queuedata)
{
	struct queue_limits default_lim = {};
	struct request_queue *q;
	int ret;

	if (!lim)
		lim = &default_lim;
	lim->features |= BLK_FEAT_IO_STAT | BLK_FEAT_NOWAIT;
	if (set->nr_maps > HCTX_TYPE_POLL)
		lim->features |= BLK_FEAT_POLL;

	q = blk_alloc_queue(lim, set->numa_node);
	if (!q)
		return (struct request_queue *)ERR_PTR(-ENOMEM);
	q->queuedata = queuedata;
	ret = blk_mq_init_allocated_queue(set, q);
	if (ret) {
		blk_put_queue(q);
		return (struct request_queue *)ERR_PTR(ret);
	}
	if (blk_mq_can_poll(q))
		blk_queue_flag_set(QUEUE_FLAG_POLL, q);

	/* Set up: from now on gets and puts are per CPU. */
	blk_queue_flag_set(QUEUE_FLAG_INIT_DONE, q);
	percpu_ref_switch_to_percpu(&q->q_usage_counter);
	return q;
}

struct request_queue *blk_mq_init_queue(struct blk_mq_tag_set *set)
{
	return blk_mq_alloc_queue(set, NULL, NULL);
}

/* Tears the queue down (blk_mq_exit_queue); the struct lives on until blk_put_queue(). */
void blk_mq_exit_queue(struct request_queue *q)
{
	struct blk_mq_tag_set *set = q->tag_set;

	blk_mq_exit_hw_queues(q, set, set->nr_hw_queues);
	blk_mq_del_queue_tag_set(q);
}

void blk_mq_cancel_work_sync(struct request_queue *q)
{
	struct blk_mq_hw_ctx *hctx;
	unsigned long i;

	cancel_delayed_work_sync(&q->requeue_work);

	queue_for_each_hw_ctx(q, hctx, i) cancel_delayed_work_sync(&hctx->run_work);
}

/*
 * Marks the queue dying, drains it, stops its timer and work, and exits
 * its hardware contexts. Drops the caller's (the driver's) reference; the
 * contexts are freed with the queue (blk_mq_release()).
 */
void blk_mq_destroy_queue(struct request_queue *q)
{
	WARN_ON_ONCE(!queue_is_mq(q));
	WARN_ON_ONCE(blk_queue_registered(q));

	might_sleep();

	blk_queue_flag_set(QUEUE_FLAG_DYING, q);
	blk_queue_start_drain(q);
	blk_mq_freeze_queue_wait(q);

	blk_sync_queue(q);
	blk_mq_cancel_work_sync(q);
	blk_mq_exit_queue(q);

	blk_put_queue(q);
}

/*
 * Changes the depth of @q's tags to @nr (the nr_requests attribute): the
 * queue must be frozen. Without a scheduler, the driver tags only shrink
 * or grow back up to their size; with shared tags the set's one bitmap
 * is resized.
 */
int blk_mq_update_nr_requests(struct request_queue *q, unsigned int nr)
{
	struct blk_mq_tag_set *set = q->tag_set;
	struct blk_mq_hw_ctx *hctx;
	int ret;
	unsigned long i;

	if (WARN_ON_ONCE(!q->mq_freeze_depth))
		return -EINVAL;

	if (!set)
		return -EINVAL;

	if (q->nr_requests == nr)
		return 0;

	blk_mq_quiesce_queue(q);

	ret = 0;
	queue_for_each_hw_ctx(q, hctx, i)
	{
		if (!hctx->tags)
			continue;
		/* with a scheduler, only its tags would change */
		if (hctx->sched_tags) {
			ret = blk_mq_tag_update_depth(hctx, &hctx->sched_tags, nr, true);
		} else {
			ret = blk_mq_tag_update_depth(hctx, &hctx->tags, nr, false);
		}
		if (ret)
			break;
		if (q->elevator && q->elevator->type->ops.depth_updated)
			q->elevator->type->ops.depth_updated(hctx);
	}
	if (!ret) {
		q->nr_requests = nr;
		if (blk_mq_is_shared_tags(set->flags)) {
			if (q->elevator)
				blk_mq_tag_update_sched_shared_tags(q);
			else
				blk_mq_tag_resize_shared_tags(set, nr);
		}
	}

	blk_mq_unquiesce_queue(q);

	return ret;
}

struct gendisk *__blk_mq_alloc_disk(struct blk_mq_tag_set *set, struct queue_limits *lim,
				    void *queuedata, struct lock_class_key *lkclass)
{
	struct request_queue *q;
	struct gendisk *disk;

	q = blk_mq_alloc_queue(set, lim, queuedata);
	if (IS_ERR(q))
		return (struct gendisk *)ERR_CAST(q);

	disk = __alloc_disk_node(q, set->numa_node, lkclass);
	if (!disk) {
		blk_mq_destroy_queue(q);
		return (struct gendisk *)ERR_PTR(-ENOMEM);
	}
	/* blk_mq_destroy_queue() drops the driver's reference, not this one */
	refcount_inc(&q->refs);
	set_bit(GD_OWNS_QUEUE, &disk->state);
	return disk;
}

struct gendisk *blk_mq_alloc_disk_for_queue(struct request_queue *q, struct lock_class_key *lkclass)
{
	struct gendisk *disk;

	if (!blk_get_queue(q))
		return NULL;
	disk = __alloc_disk_node(q, NUMA_NO_NODE, lkclass);
	if (!disk)
		blk_put_queue(q);
	return disk;
}

/*
 * Live change of the number of hardware queues: every queue of the set is
 * frozen, the set's tags grown, each queue's contexts rebuilt on the new
 * maps, and the queues unfrozen. When a queue cannot have the new count,
 * every queue falls back to the previous one.
 */
static void __blk_mq_update_nr_hw_queues(struct blk_mq_tag_set *set, int nr_hw_queues)
{
	struct request_queue *q;
	int prev_nr_hw_queues = set->nr_hw_queues;
	int i;

	lockdep_assert_held(&set->tag_list_lock);

	if (set->nr_maps == 1 && nr_hw_queues > (int)nr_cpu_ids)
		nr_hw_queues = nr_cpu_ids;
	if (nr_hw_queues < 1)
		return;
	if (set->nr_maps == 1 && nr_hw_queues == (int)set->nr_hw_queues)
		return;

	list_for_each_entry (q, &set->tag_list, tag_set_list)
		blk_mq_freeze_queue(q);

	if (blk_mq_realloc_tag_set_tags(set, nr_hw_queues) < 0)
		goto unfreeze;

fallback:
	blk_mq_update_queue_map(set);
	list_for_each_entry (q, &set->tag_list, tag_set_list) {
		blk_mq_realloc_hw_ctxs(set, q);

		if (q->nr_hw_queues != set->nr_hw_queues) {
			int i = prev_nr_hw_queues;

			pr_warn("Increasing nr_hw_queues to %d fails, fallback to %d\n",
				nr_hw_queues, prev_nr_hw_queues);
			for (; i < (int)set->nr_hw_queues; i++)
				__blk_mq_free_map_and_rqs(set, i);

			set->nr_hw_queues = prev_nr_hw_queues;
			goto fallback;
		}
		blk_mq_map_swqueue(q);
	}

unfreeze:
	list_for_each_entry (q, &set->tag_list, tag_set_list)
		blk_mq_unfreeze_queue(q);

	/* the maps of the queues a shrink took away */
	for (i = set->nr_hw_queues; i < prev_nr_hw_queues; i++)
		__blk_mq_free_map_and_rqs(set, i);
}

void blk_mq_update_nr_hw_queues(struct blk_mq_tag_set *set, int nr_hw_queues)
{
	mutex_lock(&set->tag_list_lock);
	__blk_mq_update_nr_hw_queues(set, nr_hw_queues);
	mutex_unlock(&set->tag_list_lock);
}
