/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * blk-mq structures (include/linux/blk-mq.h), reduced to what the tag code
 * (blk/blk-mq-tag.cc) touches. The request path extends them later; keep
 * field names and meanings the kernel's.
 */
#ifndef UK_LINUX_BLK_MQ_H
#define UK_LINUX_BLK_MQ_H

#include <uk/linux/atomic.h>
#include <uk/linux/blk_types.h>
#include <uk/linux/list.h>
#include <uk/linux/mutex.h>
#include <uk/linux/rcupdate.h>
#include <uk/linux/sbitmap.h>
#include <uk/linux/spinlock.h>
#include <uk/linux/wait.h>

struct blk_mq_tags;
struct blk_mq_hw_ctx;
struct blk_mq_ctx;
struct request_queue;
struct request;

enum hctx_type {
	HCTX_TYPE_DEFAULT,
	HCTX_TYPE_READ,
	HCTX_TYPE_POLL,

	HCTX_MAX_TYPES,
};

enum mq_rq_state {
	MQ_RQ_IDLE = 0,
	MQ_RQ_IN_FLIGHT = 1,
	MQ_RQ_COMPLETE = 2,
};

typedef __u32 req_flags_t;
#define RQF_SCHED_TAGS ((req_flags_t)(1U << 5))

/* The part of struct request the tag code needs. */
struct request {
	struct request_queue *q;
	struct blk_mq_ctx *mq_ctx;
	struct blk_mq_hw_ctx *mq_hctx;

	blk_opf_t cmd_flags;
	req_flags_t rq_flags;

	int tag;
	int internal_tag;

	enum mq_rq_state state;
	atomic_t ref;
};

static inline enum mq_rq_state blk_mq_rq_state(struct request *rq)
{
	return (enum mq_rq_state)READ_ONCE(rq->state);
}

static inline int blk_mq_request_started(struct request *rq)
{
	return blk_mq_rq_state(rq) != MQ_RQ_IDLE;
}

static inline int blk_mq_request_completed(struct request *rq)
{
	return blk_mq_rq_state(rq) == MQ_RQ_COMPLETE;
}

/* Tags of one hardware queue, or of the whole set when host-wide. */
struct blk_mq_tags {
	unsigned int nr_tags;
	unsigned int nr_reserved_tags;
	unsigned int active_queues; /* under @lock; read with READ_ONCE */

	struct sbitmap_queue bitmap_tags;
	struct sbitmap_queue breserved_tags;

	struct request **rqs;
	struct request **static_rqs;
	struct list_head page_list;

	/* Clearing rqs[] vs iteration, and active_queues updates. */
	spinlock_t lock;
	struct rcu_head rcu_head;
};

struct blk_mq_queue_map {
	unsigned int *mq_map;
	unsigned int nr_queues;
	unsigned int queue_offset;
};

#define BLK_MQ_F_TAG_QUEUE_SHARED (1 << 1)
#define BLK_MQ_F_STACKING (1 << 2)
#define BLK_MQ_F_TAG_HCTX_SHARED (1 << 3)
#define BLK_MQ_F_BLOCKING (1 << 4)
#define BLK_MQ_F_TAG_RR (1 << 5)
#define BLK_MQ_F_NO_SCHED_BY_DEFAULT (1 << 6)
#define BLK_MQ_F_MAX 7

/* hctx->state bits. */
enum {
	BLK_MQ_S_STOPPED,
	BLK_MQ_S_TAG_ACTIVE,
	BLK_MQ_S_SCHED_RESTART,
	BLK_MQ_S_INACTIVE,
	BLK_MQ_S_MAX
};

#define BLK_MQ_MAX_DEPTH (10240)
#define BLK_MQ_NO_HCTX_IDX (-1U)

#define BLK_MQ_NO_TAG (-1U)
#define BLK_MQ_TAG_MIN 1
#define BLK_MQ_TAG_MAX (BLK_MQ_NO_TAG - 1)

#define BLK_MQ_UNIQUE_TAG_BITS 16
#define BLK_MQ_UNIQUE_TAG_MASK ((1 << BLK_MQ_UNIQUE_TAG_BITS) - 1)

struct blk_mq_tag_set {
	const struct blk_mq_ops *ops;
	struct blk_mq_queue_map map[HCTX_MAX_TYPES];
	unsigned int nr_maps;
	unsigned int nr_hw_queues;
	unsigned int queue_depth; /* per hardware queue, reserved included */
	unsigned int reserved_tags;
	unsigned int cmd_size;
	int numa_node;
	unsigned int timeout;
	unsigned int flags; /* BLK_MQ_F_* */
	void *driver_data;

	struct blk_mq_tags **tags;
	struct blk_mq_tags *shared_tags; /* BLK_MQ_F_TAG_HCTX_SHARED */

	struct mutex tag_list_lock;
	struct list_head tag_list;
};

struct blk_mq_hw_ctx {
	unsigned long state; /* BLK_MQ_S_* */
	void *driver_data;

	struct blk_mq_tags *tags;
	struct blk_mq_tags *sched_tags;

	unsigned long flags; /* BLK_MQ_F_* */
	struct request_queue *queue;

	/* Which of the SBQ_WAIT_QUEUES the next sleeper on this hctx uses. */
	atomic_t wait_index;

	unsigned int numa_node;
	unsigned int queue_num;

	/* In-flight driver tags, when the tag set is shared (TAG_QUEUE_SHARED). */
	atomic_t nr_active;

	/* Software queues mapped here; 0 means "unmapped". */
	unsigned short nr_ctx;
};

/* Per-CPU software queue. */
struct blk_mq_ctx {
	unsigned int cpu;
	unsigned short index_hw[HCTX_MAX_TYPES];
	struct blk_mq_hw_ctx *hctxs[HCTX_MAX_TYPES];
	struct request_queue *queue;
};

/* queue_flags bits used here. */
#define QUEUE_FLAG_HCTX_ACTIVE 27

struct request_queue {
	unsigned long queue_flags;
	void *elevator; /* non-NULL when an I/O scheduler is attached */

	struct blk_mq_ctx __percpu *queue_ctx;
	struct blk_mq_hw_ctx **queue_hw_ctx;
	unsigned int nr_hw_queues;

	struct blk_mq_tag_set *tag_set;
	struct list_head tag_set_list;

	/* Scheduler tags shared by all hctxs (TAG_HCTX_SHARED + scheduler). */
	struct blk_mq_tags *sched_shared_tags;

	/* In-flight driver tags of this queue when tags are host-wide. */
	atomic_t nr_active_requests_shared_tags;

	unsigned int nr_requests;
};

#define queue_for_each_hw_ctx(q, hctx, i) \
	for ((i) = 0; (i) < (q)->nr_hw_queues && ({ hctx = (q)->queue_hw_ctx[i]; 1; }); (i)++)

static inline bool blk_mq_is_shared_tags(unsigned int flags)
{
	return flags & BLK_MQ_F_TAG_HCTX_SHARED;
}

/* Request allocation flags (blk_mq_req_flags_t). */
typedef __u32 blk_mq_req_flags_t;
#define BLK_MQ_REQ_NOWAIT ((blk_mq_req_flags_t)(1 << 0))
#define BLK_MQ_REQ_RESERVED ((blk_mq_req_flags_t)(1 << 1))
#define BLK_MQ_REQ_PM ((blk_mq_req_flags_t)(1 << 2))

typedef bool(busy_tag_iter_fn)(struct request *, void *);

void blk_mq_tagset_busy_iter(struct blk_mq_tag_set *tagset, busy_tag_iter_fn *fn, void *priv);
void blk_mq_tagset_wait_completed_request(struct blk_mq_tag_set *tagset);

u32 blk_mq_unique_tag(struct request *rq);

static inline u16 blk_mq_unique_tag_to_hwq(u32 unique_tag)
{
	return unique_tag >> BLK_MQ_UNIQUE_TAG_BITS;
}

static inline u16 blk_mq_unique_tag_to_tag(u32 unique_tag)
{
	return unique_tag & BLK_MQ_UNIQUE_TAG_MASK;
}

#endif /* UK_LINUX_BLK_MQ_H */
