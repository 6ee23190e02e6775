/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The I/O scheduler types of block/elevator.h that blk-mq reads. No
 * scheduler is ever attached here (q->elevator stays NULL, as with the
 * kernel's "none"), so only the hooks that ported code tests for are
 * declared; nothing implements them.
 */
#ifndef UK_BLK_ELEVATOR_H
#define UK_BLK_ELEVATOR_H

struct blk_mq_hw_ctx;
struct request;

struct elevator_mq_ops {
	void (*depth_updated)(struct blk_mq_hw_ctx *hctx);
	void (*finish_request)(struct request *rq);
};

struct elevator_type {
	struct elevator_mq_ops ops;
	const char *elevator_name;
};

struct elevator_queue {
	struct elevator_type *type;
	void *elevator_data;
	unsigned long flags;
};

#endif /* UK_BLK_ELEVATOR_H */
