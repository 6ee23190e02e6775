// SPDX-License-Identifier: GPL-2.0-only
/*
 * block/blk-mq-tag.c: tag allocation on sbitmap_queue, with active-queue
 * tracking for fair sharing of a tag map between queues.
 *
 * Upstream: block/blk-mq-tag.c @ v6.12
 */
#include <uk/linux/delay.h>
#include <uk/linux/sched.h>

#include "blk-mq-tag.h"

/* A shared tag map's wake batch follows its number of active users. */
static void blk_mq_update_wake_batch(struct blk_mq_tags *tags, unsigned int users)
{
	if (!users)
		return;

	sbitmap_queue_recalculate_wake_batch(&tags->bitmap_tags, users);
	sbitmap_queue_recalculate_wake_batch(&tags->breserved_tags, users);
}

/*
 * Marks @hctx (or its queue, with shared tags) active and raises
 * active_queues. Done ahead of the first allocation: even if that one fails,
 * hctx_may_queue() on the other sharers already sets a slice aside for it.
 */
void __blk_mq_tag_busy(struct blk_mq_hw_ctx *hctx)
{
	unsigned int users;
	unsigned long flags;
	struct blk_mq_tags *tags = hctx->tags;

	/* Plain test first: an active queue does not dirty the line. */
	if (blk_mq_is_shared_tags(hctx->flags)) {
		struct request_queue *q = hctx->queue;

		if (test_bit(QUEUE_FLAG_HCTX_ACTIVE, &q->queue_flags) ||
		    test_and_set_bit(QUEUE_FLAG_HCTX_ACTIVE, &q->queue_flags))
			return;
	} else {
		if (test_bit(BLK_MQ_S_TAG_ACTIVE, &hctx->state) ||
		    test_and_set_bit(BLK_MQ_S_TAG_ACTIVE, &hctx->state))
			return;
	}

	spin_lock_irqsave(&tags->lock, flags);
	users = tags->active_queues + 1;
	WRITE_ONCE(tags->active_queues, users);
	blk_mq_update_wake_batch(tags, users);
	spin_unlock_irqrestore(&tags->lock, flags);
}

void blk_mq_tag_wakeup_all(struct blk_mq_tags *tags, bool include_reserve)
{
	sbitmap_queue_wake_all(&tags->bitmap_tags);
	if (include_reserve)
		sbitmap_queue_wake_all(&tags->breserved_tags);
}

/*
 * Drops @hctx from active_queues. Fewer users means a larger per-user limit,
 * so every sleeper is woken to retry its allocation.
 */
void __blk_mq_tag_idle(struct blk_mq_hw_ctx *hctx)
{
	struct blk_mq_tags *tags = hctx->tags;
	unsigned int users;

	if (blk_mq_is_shared_tags(hctx->flags)) {
		struct request_queue *q = hctx->queue;

		if (!test_and_clear_bit(QUEUE_FLAG_HCTX_ACTIVE, &q->queue_flags))
			return;
	} else {
		if (!test_and_clear_bit(BLK_MQ_S_TAG_ACTIVE, &hctx->state))
			return;
	}

	spin_lock_irq(&tags->lock);
	users = tags->active_queues - 1;
	WRITE_ONCE(tags->active_queues, users);
	blk_mq_update_wake_batch(tags, users);
	spin_unlock_irq(&tags->lock);

	blk_mq_tag_wakeup_all(tags, false);
}

static int __blk_mq_get_tag(struct blk_mq_alloc_data *data, struct sbitmap_queue *bt)
{
	/*
	 * Without a scheduler the tag is the driver tag: apply fair sharing
	 * here (v5.x..v6.1x; later kernels do it in the driver-tag path).
	 */
	if (!data->q->elevator && !(data->flags & BLK_MQ_REQ_RESERVED) &&
	    !hctx_may_queue(data->hctx, bt))
		return BLK_MQ_NO_TAG;

	if (data->shallow_depth)
		return sbitmap_queue_get_shallow(bt, data->shallow_depth);
	else
		return __sbitmap_queue_get(bt);
}

unsigned long blk_mq_get_tags(struct blk_mq_alloc_data *data, int nr_tags, unsigned int *offset)
{
	struct blk_mq_tags *tags = blk_mq_tags_from_data(data);
	struct sbitmap_queue *bt = &tags->bitmap_tags;
	unsigned long ret;

	if (data->shallow_depth || data->flags & BLK_MQ_REQ_RESERVED ||
	    data->hctx->flags & BLK_MQ_F_TAG_QUEUE_SHARED)
		return 0;
	ret = __sbitmap_queue_get_batch(bt, nr_tags, offset);
	*offset += tags->nr_reserved_tags;
	return ret;
}

unsigned int blk_mq_get_tag(struct blk_mq_alloc_data *data)
{
	struct blk_mq_tags *tags = blk_mq_tags_from_data(data);
	struct sbitmap_queue *bt;
	struct sbq_wait_state *ws;
	DEFINE_SBQ_WAIT(wait);
	unsigned int tag_offset;
	int tag;

	if (data->flags & BLK_MQ_REQ_RESERVED) {
		if (unlikely(!tags->nr_reserved_tags)) {
			WARN_ON_ONCE(1);
			return BLK_MQ_NO_TAG;
		}
		bt = &tags->breserved_tags;
		tag_offset = 0;
	} else {
		bt = &tags->bitmap_tags;
		tag_offset = tags->nr_reserved_tags;
	}

	tag = __blk_mq_get_tag(data, bt);
	if (tag != (int)BLK_MQ_NO_TAG)
		goto found_tag;

	if (data->flags & BLK_MQ_REQ_NOWAIT)
		return BLK_MQ_NO_TAG;

	ws = bt_wait_ptr(bt, data->hctx);
	do {
		struct sbitmap_queue *bt_prev;

		/*
		 * Before sleeping, dispatch what is queued on this hctx, so
		 * that completions (and with them free tags) can come in.
		 */
		blk_mq_run_hw_queue(data->hctx, false);

		/* Try again: completions handled by that run may have returned tags. */
		tag = __blk_mq_get_tag(data, bt);
		if (tag != (int)BLK_MQ_NO_TAG)
			break;

		sbitmap_prepare_to_wait(bt, ws, &wait, TASK_UNINTERRUPTIBLE);

		/* A free that came before we were queued is seen here. */
		tag = __blk_mq_get_tag(data, bt);
		if (tag != (int)BLK_MQ_NO_TAG)
			break;

		bt_prev = bt;
		io_schedule();

		sbitmap_finish_wait(bt, ws, &wait);

		/* We may have moved to another CPU, hence another hctx. */
		data->ctx = blk_mq_get_ctx(data->q);
		data->hctx = blk_mq_map_queue(data->q, data->cmd_flags, data->ctx);
		tags = blk_mq_tags_from_data(data);
		if (data->flags & BLK_MQ_REQ_RESERVED)
			bt = &tags->breserved_tags;
		else
			bt = &tags->bitmap_tags;

		/*
		 * We consumed one of bt_prev's wake-ups but now allocate from
		 * another map: issue a spare wake-up on bt_prev so that a
		 * sleeper there does not starve.
		 */
		if (bt != bt_prev)
			sbitmap_queue_wake_up(bt_prev, 1);

		ws = bt_wait_ptr(bt, data->hctx);
	} while (1);

	sbitmap_finish_wait(bt, ws, &wait);

found_tag:
	/*
	 * BLK_MQ_S_INACTIVE: this hctx's CPUs are going offline. Return the
	 * tag; the caller picks an active hctx and tries again.
	 */
	if (unlikely(test_bit(BLK_MQ_S_INACTIVE, &data->hctx->state))) {
		blk_mq_put_tag(tags, data->ctx, tag + tag_offset);
		return BLK_MQ_NO_TAG;
	}
	return tag + tag_offset;
}

void blk_mq_put_tag(struct blk_mq_tags *tags, struct blk_mq_ctx *ctx, unsigned int tag)
{
	if (!blk_mq_tag_is_reserved(tags, tag)) {
		const int real_tag = tag - tags->nr_reserved_tags;

		BUG_ON(real_tag >= (int)tags->nr_tags);
		sbitmap_queue_clear(&tags->bitmap_tags, real_tag, ctx->cpu);
	} else {
		sbitmap_queue_clear(&tags->breserved_tags, tag, ctx->cpu);
	}
}

void blk_mq_put_tags(struct blk_mq_tags *tags, int *tag_array, int nr_tags)
{
	sbitmap_queue_clear_batch(&tags->bitmap_tags, tags->nr_reserved_tags, tag_array, nr_tags);
}

struct bt_iter_data {
	struct blk_mq_hw_ctx *hctx;
	struct request_queue *q;
	busy_tag_iter_fn *fn;
	void *data;
	bool reserved;
};

/*
 * blk_mq_tag_iter_v513 (tests): the iterators of v5.13 and before, which
 * read tags->rqs[] without tags->lock and call ->fn without a reference on
 * the request. A request completed and freed after the iterator found it
 * still reaches ->fn (fixed in 5.14 by 2e315dc07df0, "blk-mq: grab
 * rq->refcount before calling ->fn in blk_mq_tagset_busy_iter"). The
 * explorer's Historical.BlkMqTagIterFree* tests switch it on.
 */
bool blk_mq_tag_iter_v513;

static bool bt_iter_v513(struct sbitmap *bitmap, unsigned int bitnr, void *data)
{
	struct bt_iter_data *iter_data = (struct bt_iter_data *)data;
	struct blk_mq_hw_ctx *hctx = iter_data->hctx;
	struct request_queue *q = iter_data->q;
	struct blk_mq_tags *tags;
	struct request *rq;

	if (blk_mq_is_shared_tags(q->tag_set->flags))
		tags = q->tag_set->shared_tags;
	else
		tags = hctx->tags;

	if (!iter_data->reserved)
		bitnr += tags->nr_reserved_tags;

	/* rqs[] is set after the tag bit: a NULL entry is skipped. */
	rq = tags->rqs[bitnr];
	if (rq && rq->q == q && (!hctx || rq->mq_hctx == hctx))
		return iter_data->fn(rq, iter_data->data);
	return true;
}

/*
 * rqs[] is filled after the tag bit is set, so a set bit may still have a
 * stale or NULL entry: only a request that carries this tag and still has
 * a reference counts. The lock keeps rqs[] clearing out meanwhile (v6.1).
 */
static struct request *blk_mq_find_and_get_req(struct blk_mq_tags *tags, unsigned int bitnr)
{
	struct request *rq;
	unsigned long flags;

	spin_lock_irqsave(&tags->lock, flags);
	rq = READ_ONCE(tags->rqs[bitnr]);
	if (!rq || READ_ONCE(rq->tag) != (int)bitnr || !req_ref_inc_not_zero(rq))
		rq = NULL;
	spin_unlock_irqrestore(&tags->lock, flags);
	return rq;
}

static bool bt_iter(struct sbitmap *bitmap, unsigned int bitnr, void *data)
{
	struct bt_iter_data *iter_data = (struct bt_iter_data *)data;
	struct blk_mq_hw_ctx *hctx = iter_data->hctx;
	struct request_queue *q = iter_data->q;
	struct blk_mq_tag_set *set = q->tag_set;
	struct blk_mq_tags *tags;
	struct request *rq;
	bool ret = true;

	if (unlikely(blk_mq_tag_iter_v513))
		return bt_iter_v513(bitmap, bitnr, data);

	if (blk_mq_is_shared_tags(set->flags))
		tags = set->shared_tags;
	else
		tags = hctx->tags;

	if (!iter_data->reserved)
		bitnr += tags->nr_reserved_tags;

	rq = blk_mq_find_and_get_req(tags, bitnr);
	if (!rq)
		return true;

	if (rq->q == q && (!hctx || rq->mq_hctx == hctx))
		ret = iter_data->fn(rq, iter_data->data);
	blk_mq_put_rq_ref(rq);
	return ret;
}

/* Calls @fn for each request of @q (and @hctx, if given) holding a tag in @bt. */
static void bt_for_each(struct blk_mq_hw_ctx *hctx, struct request_queue *q,
			struct sbitmap_queue *bt, busy_tag_iter_fn *fn, void *data, bool reserved)
{
	struct bt_iter_data iter_data = {
		.hctx = hctx,
		.q = q,
		.fn = fn,
		.data = data,
		.reserved = reserved,
	};

	sbitmap_for_each_set (&bt->sb, bt_iter, &iter_data)
		;
}

struct bt_tags_iter_data {
	struct blk_mq_tags *tags;
	busy_tag_iter_fn *fn;
	void *data;
	unsigned int flags;
};

#define BT_TAG_ITER_RESERVED (1 << 0)
#define BT_TAG_ITER_STARTED (1 << 1)
#define BT_TAG_ITER_STATIC_RQS (1 << 2)

/* v5.13's bt_tags_iter(): no tags->lock, no reference around ->fn. */
static bool bt_tags_iter_v513(struct sbitmap *bitmap, unsigned int bitnr, void *data)
{
	struct bt_tags_iter_data *iter_data = (struct bt_tags_iter_data *)data;
	struct blk_mq_tags *tags = iter_data->tags;
	struct request *rq;

	if (!(iter_data->flags & BT_TAG_ITER_RESERVED))
		bitnr += tags->nr_reserved_tags;

	if (iter_data->flags & BT_TAG_ITER_STATIC_RQS)
		rq = tags->static_rqs[bitnr];
	else
		rq = tags->rqs[bitnr];
	if (!rq)
		return true;
	if ((iter_data->flags & BT_TAG_ITER_STARTED) && !blk_mq_request_started(rq))
		return true;
	return iter_data->fn(rq, iter_data->data);
}

static bool bt_tags_iter(struct sbitmap *bitmap, unsigned int bitnr, void *data)
{
	struct bt_tags_iter_data *iter_data = (struct bt_tags_iter_data *)data;
	struct blk_mq_tags *tags = iter_data->tags;
	struct request *rq;
	bool ret = true;
	bool iter_static_rqs = !!(iter_data->flags & BT_TAG_ITER_STATIC_RQS);

	if (unlikely(blk_mq_tag_iter_v513))
		return bt_tags_iter_v513(bitmap, bitnr, data);

	if (!(iter_data->flags & BT_TAG_ITER_RESERVED))
		bitnr += tags->nr_reserved_tags;

	if (iter_static_rqs)
		rq = tags->static_rqs[bitnr];
	else
		rq = blk_mq_find_and_get_req(tags, bitnr);
	if (!rq)
		return true;

	if (!(iter_data->flags & BT_TAG_ITER_STARTED) || blk_mq_request_started(rq))
		ret = iter_data->fn(rq, iter_data->data);
	if (!iter_static_rqs)
		blk_mq_put_rq_ref(rq);
	return ret;
}

static void bt_tags_for_each(struct blk_mq_tags *tags, struct sbitmap_queue *bt,
			     busy_tag_iter_fn *fn, void *data, unsigned int flags)
{
	struct bt_tags_iter_data iter_data = {
		.tags = tags,
		.fn = fn,
		.data = data,
		.flags = flags,
	};

	if (tags->rqs)
		sbitmap_for_each_set (&bt->sb, bt_tags_iter, &iter_data)
			;
}

static void __blk_mq_all_tag_iter(struct blk_mq_tags *tags, busy_tag_iter_fn *fn, void *priv,
				  unsigned int flags)
{
	WARN_ON_ONCE(flags & BT_TAG_ITER_RESERVED);

	if (tags->nr_reserved_tags)
		bt_tags_for_each(tags, &tags->breserved_tags, fn, priv,
				 flags | BT_TAG_ITER_RESERVED);
	bt_tags_for_each(tags, &tags->bitmap_tags, fn, priv, flags);
}

/* Every preallocated request whose tag is set, started or not. */
void blk_mq_all_tag_iter(struct blk_mq_tags *tags, busy_tag_iter_fn *fn, void *priv)
{
	__blk_mq_all_tag_iter(tags, fn, priv, BT_TAG_ITER_STATIC_RQS);
}

/* Every started request of the tag set, with a reference held around @fn. */
void blk_mq_tagset_busy_iter(struct blk_mq_tag_set *tagset, busy_tag_iter_fn *fn, void *priv)
{
	unsigned int flags = tagset->flags;
	int i, nr_tags;

	nr_tags = blk_mq_is_shared_tags(flags) ? 1 : tagset->nr_hw_queues;

	for (i = 0; i < nr_tags; i++) {
		if (tagset->tags && tagset->tags[i])
			__blk_mq_all_tag_iter(tagset->tags[i], fn, priv, BT_TAG_ITER_STARTED);
	}
}

static bool blk_mq_tagset_count_completed_rqs(struct request *rq, void *data)
{
	unsigned int *count = (unsigned int *)data;

	if (blk_mq_request_completed(rq))
		(*count)++;
	return true;
}

/* Waits until no request of the set is in the COMPLETE state. */
void blk_mq_tagset_wait_completed_request(struct blk_mq_tag_set *tagset)
{
	while (true) {
		unsigned int count = 0;

		blk_mq_tagset_busy_iter(tagset, blk_mq_tagset_count_completed_rqs, &count);
		if (!count)
			break;
		msleep(5);
	}
}

/*
 * Every request of @q holding a driver tag. With host-wide tags the shared
 * map is walked once and filtered by queue. Nothing is walked once the queue
 * is frozen: blk_mq_update_nr_hw_queues() rebuilds the hctx table only then.
 */
void blk_mq_queue_tag_busy_iter(struct request_queue *q, busy_tag_iter_fn *fn, void *priv)
{
	if (!percpu_ref_tryget(&q->q_usage_counter))
		return;

	if (blk_mq_is_shared_tags(q->tag_set->flags)) {
		struct blk_mq_tags *tags = q->tag_set->shared_tags;
		struct sbitmap_queue *bresv = &tags->breserved_tags;
		struct sbitmap_queue *btags = &tags->bitmap_tags;

		if (tags->nr_reserved_tags)
			bt_for_each(NULL, q, bresv, fn, priv, true);
		bt_for_each(NULL, q, btags, fn, priv, false);
	} else {
		struct blk_mq_hw_ctx *hctx;
		unsigned long i;

		queue_for_each_hw_ctx(q, hctx, i)
		{
			struct blk_mq_tags *tags = hctx->tags;
			struct sbitmap_queue *bresv = &tags->breserved_tags;
			struct sbitmap_queue *btags = &tags->bitmap_tags;

			/* An hctx with no ctx mapped to it holds no requests: skip it. */
			if (!blk_mq_hw_queue_mapped(hctx))
				continue;

			if (tags->nr_reserved_tags)
				bt_for_each(hctx, q, bresv, fn, priv, true);
			bt_for_each(hctx, q, btags, fn, priv, false);
		}
	}
	blk_queue_exit(q);
}

static int bt_alloc(struct sbitmap_queue *bt, unsigned int depth, bool round_robin, int node)
{
	return sbitmap_queue_init_node(bt, depth, -1, round_robin, GFP_KERNEL, node);
}

int blk_mq_init_bitmaps(struct sbitmap_queue *bitmap_tags, struct sbitmap_queue *breserved_tags,
			unsigned int queue_depth, unsigned int reserved, int node, int alloc_policy)
{
	unsigned int depth = queue_depth - reserved;
	bool round_robin = alloc_policy == BLK_TAG_ALLOC_RR;

	if (bt_alloc(bitmap_tags, depth, round_robin, node))
		return -ENOMEM;
	if (bt_alloc(breserved_tags, reserved, round_robin, node))
		goto free_bitmap_tags;

	return 0;

free_bitmap_tags:
	sbitmap_queue_free(bitmap_tags);
	return -ENOMEM;
}

struct blk_mq_tags *blk_mq_init_tags(unsigned int total_tags, unsigned int reserved_tags, int node,
				     int alloc_policy)
{
	struct blk_mq_tags *tags;

	if (total_tags > BLK_MQ_TAG_MAX) {
		pr_err("blk-mq: tag depth too large\n");
		return NULL;
	}

	tags = kzalloc_node(sizeof(*tags), GFP_KERNEL, node);
	if (!tags)
		return NULL;

	tags->nr_tags = total_tags;
	tags->nr_reserved_tags = reserved_tags;
	spin_lock_init(&tags->lock);

	if (blk_mq_init_bitmaps(&tags->bitmap_tags, &tags->breserved_tags, total_tags,
				reserved_tags, node, alloc_policy) < 0) {
		kfree(tags);
		return NULL;
	}
	return tags;
}

/* The requests (page_list) are blk_mq_free_rqs()'s to free, before this. */
void blk_mq_free_tags(struct blk_mq_tags *tags)
{
	sbitmap_queue_free(&tags->bitmap_tags);
	sbitmap_queue_free(&tags->breserved_tags);
	kfree(tags);
}

/*
 * Sets the depth of *@tagsptr to @tdepth. Shrinking (or growing back up to
 * the number of preallocated requests) resizes the bitmap; growing past it
 * needs @can_grow (scheduler tags) and a new map with its requests.
 */
int blk_mq_tag_update_depth(struct blk_mq_hw_ctx *hctx, struct blk_mq_tags **tagsptr,
			    unsigned int tdepth, bool can_grow)
{
	struct blk_mq_tags *tags = *tagsptr;

	if (tdepth <= tags->nr_reserved_tags)
		return -EINVAL;

	/* a larger map is allocated before the old one goes */
	if (tdepth > tags->nr_tags) {
		struct blk_mq_tag_set *set = hctx->queue->tag_set;
		struct blk_mq_tags *new_tags;

		if (!can_grow)
			return -EINVAL;

		/* a bound far above any real use */
		if (tdepth > MAX_SCHED_RQ)
			return -EINVAL;

		/* shared tags were allocated at their largest depth */
		if (blk_mq_is_shared_tags(set->flags))
			return 0;

		new_tags = blk_mq_alloc_map_and_rqs(set, hctx->queue_num, tdepth);
		if (!new_tags)
			return -ENOMEM;

		blk_mq_free_map_and_rqs(set, *tagsptr, hctx->queue_num);
		*tagsptr = new_tags;
	} else {
		/* the reserved tags keep their number */
		sbitmap_queue_resize(&tags->bitmap_tags, tdepth - tags->nr_reserved_tags);
	}

	return 0;
}

void blk_mq_tag_resize_shared_tags(struct blk_mq_tag_set *set, unsigned int size)
{
	struct blk_mq_tags *tags = set->shared_tags;

	sbitmap_queue_resize(&tags->bitmap_tags, size - set->reserved_tags);
}

void blk_mq_tag_update_sched_shared_tags(struct request_queue *q)
{
	sbitmap_queue_resize(&q->sched_shared_tags->bitmap_tags,
			     q->nr_requests - q->tag_set->reserved_tags);
}

/*
 * rq->tag repeats across hctxs; combining it (low BLK_MQ_UNIQUE_TAG_BITS bits)
 * with queue_num (high bits) gives one value unique within the queue.
 */
u32 blk_mq_unique_tag(struct request *rq)
{
	return (rq->mq_hctx->queue_num << BLK_MQ_UNIQUE_TAG_BITS) |
	       (rq->tag & BLK_MQ_UNIQUE_TAG_MASK);
}
