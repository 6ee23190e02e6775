/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * block/blk-mq-tag.h, plus the few block/blk-mq.h helpers the tag code uses
 * (struct blk_mq_alloc_data, blk_mq_get_ctx, blk_mq_map_queue,
 * hctx_may_queue, active-request accounting) until blk/blk-mq.h exists.
 */
#ifndef UK_BLK_MQ_TAG_H
#define UK_BLK_MQ_TAG_H

#include <uk/linux/blk-mq.h>

struct blk_mq_alloc_data {
	/* input parameters */
	struct request_queue *q;
	blk_mq_req_flags_t flags;
	unsigned int shallow_depth;
	blk_opf_t cmd_flags;
	req_flags_t rq_flags;

	/* allocate multiple requests/tags in one go */
	unsigned int nr_tags;

	/* input & output parameter */
	struct blk_mq_ctx *ctx;
	struct blk_mq_hw_ctx *hctx;
};

static inline struct blk_mq_tags *blk_mq_tags_from_data(struct blk_mq_alloc_data *data)
{
	if (data->rq_flags & RQF_SCHED_TAGS)
		return data->hctx->sched_tags;
	return data->hctx->tags;
}

/* This CPU's software queue. */
static inline struct blk_mq_ctx *blk_mq_get_ctx(struct request_queue *q)
{
	return per_cpu_ptr(q->queue_ctx, raw_smp_processor_id());
}

/* The hardware queue a software queue maps to for @opf. */
static inline struct blk_mq_hw_ctx *blk_mq_map_queue(blk_opf_t opf, struct blk_mq_ctx *ctx)
{
	enum hctx_type type = HCTX_TYPE_DEFAULT;

	if (opf & REQ_POLLED)
		type = HCTX_TYPE_POLL;
	else if ((opf & REQ_OP_MASK) == REQ_OP_READ)
		type = HCTX_TYPE_READ;

	return ctx->hctxs[type];
}

static inline bool blk_mq_hw_queue_mapped(struct blk_mq_hw_ctx *hctx)
{
	return hctx->nr_ctx && hctx->tags;
}

/*
 * Kicks dispatch on @hctx. The request path provides the real one; until
 * then this calls blk_mq_run_hw_queue_hook when a test sets it.
 */
void blk_mq_run_hw_queue(struct blk_mq_hw_ctx *hctx, bool async);
extern void (*blk_mq_run_hw_queue_hook)(struct blk_mq_hw_ctx *hctx, bool async);

struct blk_mq_tags *blk_mq_init_tags(unsigned int nr_tags, unsigned int reserved_tags,
				     unsigned int flags, int node);
void blk_mq_free_tags(struct blk_mq_tag_set *set, struct blk_mq_tags *tags);

unsigned int blk_mq_get_tag(struct blk_mq_alloc_data *data);
unsigned long blk_mq_get_tags(struct blk_mq_alloc_data *data, int nr_tags, unsigned int *offset);
void blk_mq_put_tag(struct blk_mq_tags *tags, struct blk_mq_ctx *ctx, unsigned int tag);
void blk_mq_put_tags(struct blk_mq_tags *tags, int *tag_array, int nr_tags);
void blk_mq_tag_resize_shared_tags(struct blk_mq_tag_set *set, unsigned int size);
void blk_mq_tag_update_sched_shared_tags(struct request_queue *q, unsigned int nr);

void blk_mq_tag_wakeup_all(struct blk_mq_tags *tags, bool include_reserve);
void blk_mq_queue_tag_busy_iter(struct request_queue *q, busy_tag_iter_fn *fn, void *priv);
void blk_mq_all_tag_iter(struct blk_mq_tags *tags, busy_tag_iter_fn *fn, void *priv);

static inline struct sbq_wait_state *bt_wait_ptr(struct sbitmap_queue *bt,
						 struct blk_mq_hw_ctx *hctx)
{
	if (!hctx)
		return &bt->ws[0];
	return sbq_wait_ptr(bt, &hctx->wait_index);
}

void __blk_mq_tag_busy(struct blk_mq_hw_ctx *hctx);
void __blk_mq_tag_idle(struct blk_mq_hw_ctx *hctx);

static inline void blk_mq_tag_busy(struct blk_mq_hw_ctx *hctx)
{
	if (hctx->flags & BLK_MQ_F_TAG_QUEUE_SHARED)
		__blk_mq_tag_busy(hctx);
}

static inline void blk_mq_tag_idle(struct blk_mq_hw_ctx *hctx)
{
	if (hctx->flags & BLK_MQ_F_TAG_QUEUE_SHARED)
		__blk_mq_tag_idle(hctx);
}

static inline bool blk_mq_tag_is_reserved(struct blk_mq_tags *tags, unsigned int tag)
{
	return tag < tags->nr_reserved_tags;
}

/* Active-request accounting: only kept when the tag set is shared. */
static inline void __blk_mq_add_active_requests(struct blk_mq_hw_ctx *hctx, int val)
{
	if (blk_mq_is_shared_tags(hctx->flags))
		atomic_add(val, &hctx->queue->nr_active_requests_shared_tags);
	else
		atomic_add(val, &hctx->nr_active);
}

static inline void __blk_mq_sub_active_requests(struct blk_mq_hw_ctx *hctx, int val)
{
	if (blk_mq_is_shared_tags(hctx->flags))
		atomic_sub(val, &hctx->queue->nr_active_requests_shared_tags);
	else
		atomic_sub(val, &hctx->nr_active);
}

static inline void blk_mq_add_active_requests(struct blk_mq_hw_ctx *hctx, int val)
{
	if (hctx->flags & BLK_MQ_F_TAG_QUEUE_SHARED)
		__blk_mq_add_active_requests(hctx, val);
}

static inline void blk_mq_inc_active_requests(struct blk_mq_hw_ctx *hctx)
{
	blk_mq_add_active_requests(hctx, 1);
}

static inline void blk_mq_sub_active_requests(struct blk_mq_hw_ctx *hctx, int val)
{
	if (hctx->flags & BLK_MQ_F_TAG_QUEUE_SHARED)
		__blk_mq_sub_active_requests(hctx, val);
}

static inline void blk_mq_dec_active_requests(struct blk_mq_hw_ctx *hctx)
{
	blk_mq_sub_active_requests(hctx, 1);
}

static inline int __blk_mq_active_requests(struct blk_mq_hw_ctx *hctx)
{
	if (blk_mq_is_shared_tags(hctx->flags))
		return atomic_read(&hctx->queue->nr_active_requests_shared_tags);
	return atomic_read(&hctx->nr_active);
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

	/* Don't try dividing an ant. */
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

#endif /* UK_BLK_MQ_TAG_H */
