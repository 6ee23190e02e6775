// SPDX-License-Identifier: GPL-2.0-only
/*
 * drivers/block/null_blk/main.c, the blk-mq half: tag sets (per device or
 * the global shared one), nullb_queues, queue maps, null_queue_rq with its
 * fault injection and throttling, command processing, completion by
 * irqmode (inline / blk_mq_complete_request / per-command hrtimer),
 * timeouts and polling. Configuration and storage are in null_blk_main.cc
 * and null_blk_storage.cc.
 *
 * Upstream: drivers/block/null_blk/main.c @ v6.12
 */
#include <cstring>

#include <uk/devices/null_blk.h>
#include <uk/linux/err.h>
#include <uk/linux/errno.h>
#include <uk/linux/jiffies.h>
#include <uk/linux/kconfig.h>
#include <uk/linux/kernel.h>
#include <uk/linux/slab.h>
#include <uk/linux/smp.h>

#undef pr_fmt
#define pr_fmt(fmt) "null_blk: " fmt

/* The global tag set, built by the first shared_tags device. */
static struct blk_mq_tag_set tag_set;

static inline bool blk_should_fake_timeout(struct request_queue *q)
{
	return false; /* no debugfs fail_io_timeout */
}

static inline struct nullb *null_rq_nullb(struct request *rq)
{
	return (struct nullb *)rq->q->queuedata;
}

/* ---- command processing ---- */

static blk_status_t null_handle_rq(struct nullb_cmd *cmd, sector_t nr_sectors)
{
	struct request *rq = blk_mq_rq_from_pdu(cmd);
	struct nullb *nullb = cmd->nq->dev->nullb;
	blk_status_t err = BLK_STS_OK;
	unsigned int len;
	loff_t pos = (loff_t)blk_rq_pos(rq) << SECTOR_SHIFT;
	size_t max_bytes = nr_sectors << SECTOR_SHIFT;
	size_t transferred_bytes = 0;
	struct bvec_iter iter;
	struct bio_vec bvec;
	struct bio *bio;

	spin_lock_irq(&nullb->lock);
	__rq_for_each_bio(bio, rq)
	{
		bio_for_each_segment(bvec, bio, iter)
		{
			len = bvec.bv_len;
			if (transferred_bytes + len > max_bytes)
				len = max_bytes - transferred_bytes;
			err = null_transfer(nullb, bvec.bv_page, len, bvec.bv_offset,
					    op_is_write(req_op(rq)), pos, rq->cmd_flags & REQ_FUA);
			if (err)
				goto out;
			pos += len;
			transferred_bytes += len;
			if (transferred_bytes >= max_bytes)
				goto out;
		}
	}
out:
	spin_unlock_irq(&nullb->lock);
	return err;
}

static inline blk_status_t null_handle_memory_backed(struct nullb_cmd *cmd, enum req_op op,
						     sector_t sector, sector_t nr_sectors)
{
	struct nullb_device *dev = cmd->nq->dev;

	if (op == REQ_OP_DISCARD)
		return null_handle_discard(dev, sector, nr_sectors);
	return null_handle_rq(cmd, nr_sectors);
}

static blk_status_t null_process_cmd(struct nullb_cmd *cmd, enum req_op op, sector_t sector,
				     unsigned int nr_sectors)
{
	struct nullb_device *dev = cmd->nq->dev;
	blk_status_t badblocks_ret = BLK_STS_OK;
	blk_status_t ret;

	if (dev->badblocks.shift != -1)
		badblocks_ret = null_handle_badblocks(dev, sector, &nr_sectors);

	if (dev->memory_backed && nr_sectors) {
		ret = null_handle_memory_backed(cmd, op, sector, nr_sectors);
		if (ret != BLK_STS_OK)
			return ret;
	}
	return badblocks_ret;
}

static void null_complete_rq(struct request *rq)
{
	struct nullb_cmd *cmd = (struct nullb_cmd *)blk_mq_rq_to_pdu(rq);

	blk_mq_end_request(rq, cmd->error);
}

static enum hrtimer_restart null_cmd_timer_expired(struct hrtimer *timer)
{
	struct nullb_cmd *cmd = container_of(timer, struct nullb_cmd, timer);

	blk_mq_end_request(blk_mq_rq_from_pdu(cmd), cmd->error);
	return HRTIMER_NORESTART;
}

static void null_cmd_end_timer(struct nullb_cmd *cmd)
{
	ktime_t kt = cmd->nq->dev->completion_nsec;

	hrtimer_start(&cmd->timer, kt, HRTIMER_MODE_REL);
}

static void nullb_zero_read_cmd_buffer(struct nullb_cmd *cmd)
{
	struct request *rq = blk_mq_rq_from_pdu(cmd);
	struct nullb_device *dev = cmd->nq->dev;
	struct bio *bio;

	if (!dev->memory_backed && req_op(rq) == REQ_OP_READ) {
		/* clang-format off */
		__rq_for_each_bio(bio, rq)
			zero_fill_bio(bio);
		/* clang-format on */
	}
}

static inline void nullb_complete_cmd(struct nullb_cmd *cmd)
{
	struct request *rq = blk_mq_rq_from_pdu(cmd);

	/*
	 * A device that is not memory backed never writes the buffers of a
	 * read. That is harmless, but KMSAN reports the uninitialized data
	 * when the caller reads it, so a KMSAN build clears them first.
	 */
	if (IS_ENABLED(CONFIG_KMSAN))
		nullb_zero_read_cmd_buffer(cmd);

	/* Inline, from the completion softirq, or when the timer fires. */
	switch (cmd->nq->dev->irqmode) {
	case NULL_IRQ_SOFTIRQ:
		blk_mq_complete_request(rq);
		break;
	case NULL_IRQ_NONE:
		blk_mq_end_request(rq, cmd->error);
		break;
	case NULL_IRQ_TIMER:
		null_cmd_end_timer(cmd);
		break;
	}
}

static void null_handle_cmd(struct nullb_cmd *cmd, sector_t sector, sector_t nr_sectors,
			    enum req_op op)
{
	struct nullb_device *dev = cmd->nq->dev;
	struct nullb *nullb = dev->nullb;
	blk_status_t sts;

	if (op == REQ_OP_FLUSH) {
		cmd->error = null_handle_flush(nullb);
		goto out;
	}

	if (dev->zoned)
		sts = null_process_zoned_cmd(cmd, op, sector, nr_sectors);
	else
		sts = null_process_cmd(cmd, op, sector, nr_sectors);

	/* An earlier error (a timeout) wins. */
	if (cmd->error == BLK_STS_OK)
		cmd->error = sts;

out:
	nullb_complete_cmd(cmd);
}

/* ---- blk_mq_ops ---- */

static enum blk_eh_timer_return null_timeout_rq(struct request *rq)
{
	struct blk_mq_hw_ctx *hctx = rq->mq_hctx;
	struct nullb_cmd *cmd = (struct nullb_cmd *)blk_mq_rq_to_pdu(rq);

	if (hctx->type == HCTX_TYPE_POLL) {
		struct nullb_queue *nq = (struct nullb_queue *)hctx->driver_data;

		spin_lock(&nq->poll_lock);
		/* null_poll() may have picked it up already. */
		if (blk_mq_request_completed(rq)) {
			spin_unlock(&nq->poll_lock);
			return BLK_EH_DONE;
		}
		list_del_init(&rq->queuelist);
		spin_unlock(&nq->poll_lock);
	}

	pr_info("rq %p timed out\n", rq);

	/*
	 * A faked timeout (or a polled request nobody polls) is completed
	 * here; a real one is completed by its pending completion, now with
	 * BLK_STS_TIMEOUT.
	 */
	cmd->error = BLK_STS_TIMEOUT;
	if (cmd->fake_timeout || hctx->type == HCTX_TYPE_POLL)
		blk_mq_complete_request(rq);
	return BLK_EH_DONE;
}

static blk_status_t null_queue_rq(struct blk_mq_hw_ctx *hctx, const struct blk_mq_queue_data *bd)
{
	struct request *rq = bd->rq;
	struct nullb_cmd *cmd = (struct nullb_cmd *)blk_mq_rq_to_pdu(rq);
	struct nullb_queue *nq = (struct nullb_queue *)hctx->driver_data;
	sector_t nr_sectors = blk_rq_sectors(rq);
	sector_t sector = blk_rq_pos(rq);
	const bool is_poll = hctx->type == HCTX_TYPE_POLL;

	might_sleep_if(hctx->flags & BLK_MQ_F_BLOCKING);

	if (!is_poll && nq->dev->irqmode == NULL_IRQ_TIMER) {
		hrtimer_init(&cmd->timer, CLOCK_MONOTONIC, HRTIMER_MODE_REL);
		cmd->timer.function = null_cmd_timer_expired;
	}
	cmd->error = BLK_STS_OK;
	cmd->nq = nq;
	cmd->fake_timeout = should_timeout_request(nq->dev) || blk_should_fake_timeout(rq->q);

	if (should_requeue_request(nq->dev)) {
		/*
		 * An odd count hands the request back with BLK_STS_RESOURCE so
		 * the block core retries it; an even one requeues it from here
		 * via blk_mq_requeue_request(). The counter is bumped without a
		 * lock (direct issue and the requeue work may both reach this
		 * for one queue); upstream accepts the same race, whose only
		 * effect is that one path is taken twice in a row.
		 */
		data_race(nq->requeue_selection++);
		if (data_race(nq->requeue_selection) & 1)
			return BLK_STS_RESOURCE;
		blk_mq_requeue_request(rq, true);
		return BLK_STS_OK;
	}

	if (test_bit(NULLB_DEV_FL_THROTTLED, &nq->dev->flags)) {
		blk_status_t sts = null_handle_throttled(null_rq_nullb(rq), blk_rq_bytes(rq));

		if (sts != BLK_STS_OK)
			return sts;
	}

	blk_mq_start_request(rq);

	if (is_poll) {
		spin_lock(&nq->poll_lock);
		list_add_tail(&rq->queuelist, &nq->poll_list);
		spin_unlock(&nq->poll_lock);
		return BLK_STS_OK;
	}
	if (cmd->fake_timeout)
		return BLK_STS_OK;

	null_handle_cmd(cmd, sector, nr_sectors, req_op(rq));
	return BLK_STS_OK;
}

/* A plug's requests, one null_queue_rq() each; the refused stay on the list. */
static void null_queue_rqs(struct rq_list *rqlist)
{
	struct rq_list requeue_list = {};
	struct blk_mq_queue_data bd = {};
	blk_status_t ret;

	do {
		struct request *rq = rq_list_pop(rqlist);

		bd.rq = rq;
		ret = null_queue_rq(rq->mq_hctx, &bd);
		if (ret != BLK_STS_OK)
			rq_list_add_tail(&requeue_list, rq);
	} while (!rq_list_empty(rqlist));

	*rqlist = requeue_list;
}

static int null_poll(struct blk_mq_hw_ctx *hctx, struct io_comp_batch *iob)
{
	struct nullb_queue *nq = (struct nullb_queue *)hctx->driver_data;
	LIST_HEAD(list);
	int nr = 0;
	struct request *rq;

	spin_lock(&nq->poll_lock);
	list_splice_init(&nq->poll_list, &list);
	list_for_each_entry (rq, &list, queuelist)
		blk_mq_set_request_complete(rq);
	spin_unlock(&nq->poll_lock);

	while (!list_empty(&list)) {
		struct nullb_cmd *cmd;
		struct request *req;

		req = list_first_entry(&list, struct request, queuelist);
		list_del_init(&req->queuelist);
		cmd = (struct nullb_cmd *)blk_mq_rq_to_pdu(req);
		cmd->error =
			null_process_cmd(cmd, req_op(req), blk_rq_pos(req), blk_rq_sectors(req));
		if (!blk_mq_add_to_batch(req, iob, cmd->error != BLK_STS_OK,
					 blk_mq_end_request_batch))
			blk_mq_end_request(req, cmd->error);
		nr++;
	}

	return nr;
}

static bool should_init_hctx_fail(struct nullb_device *dev)
{
	return should_fail(&dev->init_hctx_fault_config.attr, 1);
}

static void null_init_queue(struct nullb *nullb, struct nullb_queue *nq)
{
	nq->dev = nullb->dev;
	INIT_LIST_HEAD(&nq->poll_list);
	spin_lock_init(&nq->poll_lock);
}

static int null_init_hctx(struct blk_mq_hw_ctx *hctx, void *driver_data, unsigned int hctx_idx)
{
	struct nullb *nullb = (struct nullb *)hctx->queue->queuedata;
	struct nullb_queue *nq;

	if (should_init_hctx_fail(nullb->dev))
		return -EFAULT;

	nq = &nullb->queues[hctx_idx];
	hctx->driver_data = nq;
	null_init_queue(nullb, nq);

	return 0;
}

static void null_exit_hctx(struct blk_mq_hw_ctx *hctx, unsigned int hctx_idx)
{
	struct nullb_queue *nq = (struct nullb_queue *)hctx->driver_data;

	if (nq)
		WARN_ON_ONCE(!list_empty(&nq->poll_list));
}

static void null_map_queues(struct blk_mq_tag_set *set)
{
	struct nullb *nullb = (struct nullb *)set->driver_data;
	int i, qoff;
	unsigned int submit_queues = g_submit_queues;
	unsigned int poll_queues = g_poll_queues;

	if (nullb) {
		struct nullb_device *dev = nullb->dev;

		/*
		 * A failed nr_hw_queues update leaves the set as it was:
		 * map with the previous counts then.
		 */
		if (set->nr_hw_queues == dev->submit_queues + dev->poll_queues) {
			submit_queues = dev->submit_queues;
			poll_queues = dev->poll_queues;
		} else if (set->nr_hw_queues == dev->prev_submit_queues + dev->prev_poll_queues) {
			submit_queues = dev->prev_submit_queues;
			poll_queues = dev->prev_poll_queues;
		} else {
			pr_warn("tag set has unexpected nr_hw_queues: %d\n", set->nr_hw_queues);
			WARN_ON_ONCE(true);
			submit_queues = 1;
			poll_queues = 0;
		}
	}

	for (i = 0, qoff = 0; i < (int)set->nr_maps; i++) {
		struct blk_mq_queue_map *map = &set->map[i];

		switch (i) {
		case HCTX_TYPE_DEFAULT:
			map->nr_queues = submit_queues;
			break;
		case HCTX_TYPE_READ:
			map->nr_queues = 0;
			continue;
		case HCTX_TYPE_POLL:
			map->nr_queues = poll_queues;
			break;
		}
		map->queue_offset = qoff;
		qoff += map->nr_queues;
		blk_mq_map_queues(map);
	}
}

static const struct blk_mq_ops null_mq_ops = {
	.queue_rq = null_queue_rq,
	.commit_rqs = NULL,
	.queue_rqs = null_queue_rqs,
	.timeout = null_timeout_rq,
	.poll = null_poll,
	.complete = null_complete_rq,
	.init_hctx = null_init_hctx,
	.exit_hctx = null_exit_hctx,
	.init_request = NULL,
	.exit_request = NULL,
	.map_queues = null_map_queues,
};

/* ---- tag sets, queues, disk ---- */

static int null_init_tag_set(struct blk_mq_tag_set *set, int poll_queues)
{
	set->ops = &null_mq_ops;
	set->cmd_size = sizeof(struct nullb_cmd);
	set->timeout = 5 * HZ;
	set->nr_maps = 1;
	if (poll_queues) {
		set->nr_hw_queues += poll_queues;
		set->nr_maps += 2;
	}
	return blk_mq_alloc_tag_set(set);
}

static int null_init_global_tag_set(void)
{
	int error;

	if (tag_set.ops)
		return 0;

	tag_set.nr_hw_queues = g_submit_queues;
	tag_set.queue_depth = g_hw_queue_depth;
	tag_set.numa_node = g_home_node;
	tag_set.flags = BLK_MQ_F_SHOULD_MERGE;
	if (g_no_sched)
		tag_set.flags |= BLK_MQ_F_NO_SCHED;
	if (g_shared_tag_bitmap)
		tag_set.flags |= BLK_MQ_F_TAG_HCTX_SHARED;
	if (g_blocking)
		tag_set.flags |= BLK_MQ_F_BLOCKING;

	error = null_init_tag_set(&tag_set, g_poll_queues);
	if (error)
		tag_set.ops = NULL;
	return error;
}

void null_free_global_tag_set(void)
{
	if (tag_set.ops) {
		blk_mq_free_tag_set(&tag_set);
		memset((void *)&tag_set, 0, sizeof(tag_set));
	}
}

static int null_setup_tagset(struct nullb *nullb)
{
	if (nullb->dev->shared_tags) {
		nullb->tag_set = &tag_set;
		return null_init_global_tag_set();
	}

	nullb->tag_set = &nullb->__tag_set;
	nullb->tag_set->driver_data = nullb;
	nullb->tag_set->nr_hw_queues = nullb->dev->submit_queues;
	nullb->tag_set->queue_depth = nullb->dev->hw_queue_depth;
	nullb->tag_set->numa_node = nullb->dev->home_node;
	nullb->tag_set->flags = BLK_MQ_F_SHOULD_MERGE;
	if (nullb->dev->no_sched)
		nullb->tag_set->flags |= BLK_MQ_F_NO_SCHED;
	if (nullb->dev->shared_tag_bitmap)
		nullb->tag_set->flags |= BLK_MQ_F_TAG_HCTX_SHARED;
	if (nullb->dev->blocking)
		nullb->tag_set->flags |= BLK_MQ_F_BLOCKING;
	return null_init_tag_set(nullb->tag_set, nullb->dev->poll_queues);
}

static int setup_queues(struct nullb *nullb)
{
	int nqueues = nr_cpu_ids;

	if (g_poll_queues)
		nqueues += g_poll_queues;

	nullb->queues =
		(struct nullb_queue *)kcalloc(nqueues, sizeof(struct nullb_queue), GFP_KERNEL);
	if (!nullb->queues)
		return -ENOMEM;

	return 0;
}

static void cleanup_queues(struct nullb *nullb)
{
	kfree(nullb->queues);
	nullb->queues = NULL;
}

static void null_config_discard(struct nullb *nullb, struct queue_limits *lim)
{
	if (nullb->dev->discard == false)
		return;

	if (!nullb->dev->memory_backed) {
		nullb->dev->discard = false;
		pr_info("discard option is ignored without memory backing\n");
		return;
	}

	if (nullb->dev->zoned) {
		nullb->dev->discard = false;
		pr_info("discard option is ignored in zoned mode\n");
		return;
	}

	lim->max_hw_discard_sectors = UINT_MAX >> 9;
}

/* No CONFIG_BLK_DEV_ZONED here: zoned devices are refused as such kernels do. */
static int null_init_zoned_dev(struct nullb_device *dev, struct queue_limits *lim)
{
	pr_err("CONFIG_BLK_DEV_ZONED not enabled\n");
	return -EINVAL;
}

int null_add_dev_blk(struct nullb *nullb)
{
	struct nullb_device *dev = nullb->dev;
	struct queue_limits lim = {};
	int rv;

	rv = setup_queues(nullb);
	if (rv)
		return rv;

	rv = null_setup_tagset(nullb);
	if (rv)
		goto out_cleanup_queues;

	lim.logical_block_size = dev->blocksize;
	lim.physical_block_size = dev->blocksize;
	lim.max_hw_sectors = nullb->max_hw_sectors;
	if (dev->virt_boundary)
		lim.virt_boundary_mask = PAGE_SIZE - 1;
	null_config_discard(nullb, &lim);
	if (dev->zoned) {
		rv = null_init_zoned_dev(dev, &lim);
		if (rv)
			goto out_cleanup_tags;
	}

	nullb->disk = blk_mq_alloc_disk(nullb->tag_set, &lim, nullb);
	if (IS_ERR(nullb->disk)) {
		rv = PTR_ERR(nullb->disk);
		nullb->disk = NULL;
		goto out_cleanup_tags;
	}
	nullb->q = nullb->disk->queue;

	set_capacity(nullb->disk, nullb->capacity);
	nullb->disk->private_data = nullb;
	snprintf(nullb->disk->disk_name, DISK_NAME_LEN, "%s", nullb->disk_name);

	rv = add_disk(nullb->disk);
	if (rv)
		goto out_cleanup_disk;
	return 0;

out_cleanup_disk:
	put_disk(nullb->disk);
	nullb->disk = NULL;
	nullb->q = NULL;
out_cleanup_tags:
	if (nullb->tag_set == &nullb->__tag_set)
		blk_mq_free_tag_set(nullb->tag_set);
out_cleanup_queues:
	nullb->tag_set = NULL;
	cleanup_queues(nullb);
	return rv;
}

void null_del_dev_blk(struct nullb *nullb)
{
	if (nullb->disk)
		del_gendisk(nullb->disk);
}

void null_free_dev_blk(struct nullb *nullb)
{
	if (nullb->disk) {
		put_disk(nullb->disk);
		nullb->disk = NULL;
		nullb->q = NULL;
	}
	if (nullb->tag_set == &nullb->__tag_set)
		blk_mq_free_tag_set(nullb->tag_set);
	nullb->tag_set = NULL;
	cleanup_queues(nullb);
}

int null_update_nr_hw_queues_blk(struct nullb *nullb, unsigned int nr_hw_queues)
{
	struct blk_mq_tag_set *set = nullb->tag_set;

	if (!set || !nullb->q)
		return nr_hw_queues;
	blk_mq_update_nr_hw_queues(set, nr_hw_queues);
	return set->nr_hw_queues;
}
