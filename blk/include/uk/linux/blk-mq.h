/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * blk-mq structures and API (include/linux/blk-mq.h): tag sets, hardware
 * and software contexts, requests with a driver PDU, and the driver
 * interface (struct blk_mq_ops). Field names and meanings are the kernel's;
 * fields nothing here uses are left out.
 *
 * Upstream: include/linux/blk-mq.h @ v6.12
 */
#ifndef UK_LINUX_BLK_MQ_H
#define UK_LINUX_BLK_MQ_H

#include <uk/linux/atomic.h>
#include <uk/linux/blk_types.h>
#include <uk/linux/blkdev.h>
#include <uk/linux/cpumask.h>
#include <uk/linux/ioprio.h>
#include <uk/linux/workqueue.h>
#include <uk/linux/list.h>
#include <uk/linux/mutex.h>
#include <uk/linux/rbtree.h>
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
/* Goes through an I/O scheduler: never set here, there is none. */
#define RQF_USE_SCHED ((req_flags_t)(1U << 6))

enum rq_end_io_ret {
	RQ_END_IO_NONE,
	RQ_END_IO_FREE,
};

typedef enum rq_end_io_ret(rq_end_io_fn)(struct request *, blk_status_t);

#define RQF_STARTED ((req_flags_t)(1U << 1))
/* Part of a flush sequence: never set here, there is no flush state machine. */
#define RQF_FLUSH_SEQ ((req_flags_t)(1U << 4))
/* Errors of this request are not printed (blk_print_req_error()). */
#define RQF_QUIET ((req_flags_t)(1U << 11))
/* Counted in the disk's I/O statistics (<uk/linux/part_stat.h>). */
#define RQF_IO_STAT ((req_flags_t)(1U << 12))
/* Allocated with BLK_MQ_REQ_PM: a runtime power-management request. */
#define RQF_PM ((req_flags_t)(1U << 13))
/* Completion time tracked for blk-stat callbacks: never set, none exist here. */
#define RQF_STATS ((req_flags_t)(1U << 15))
#define RQF_TIMED_OUT ((req_flags_t)(1U << 21))

/*
 * A block request: preallocated per tag (blk_mq_alloc_rqs), followed in
 * memory by the driver's PDU of tag_set->cmd_size bytes.
 */
struct request {
	struct request_queue *q;
	struct blk_mq_ctx *mq_ctx;
	struct blk_mq_hw_ctx *mq_hctx;

	blk_opf_t cmd_flags;
	req_flags_t rq_flags;

	int tag;
	int internal_tag;

	unsigned int timeout;

	/* Block-core private: read them through blk_rq_bytes() / blk_rq_pos(). */
	unsigned int __data_len; /* bytes left to transfer */
	sector_t __sector;	 /* current position, in sectors */

	struct bio *bio;
	struct bio *biotail;

	/* The partition accounted against (blk_account_io_start()). */
	struct block_device *part;
	/* Time stamps, ns: when the request was first used, and issued. */
	u64 start_time_ns;
	u64 io_start_time_ns;
	/* Sectors when issued, for blk-stat. */
	unsigned short stats_sectors;

	unsigned short nr_phys_segments;

	/* On a plug's lists a request is singly linked; elsewhere a list_head. */
	union {
		struct list_head queuelist; /* dispatch / requeue / driver lists */
		struct request *rq_next;    /* struct rq_list (plugs, ->queue_rqs) */
	};
	struct list_head ipi_list; /* BLOCK_SOFTIRQ completion list */
	/* An elevator's merge hash and sort tree: unused (no elevator). */
	struct hlist_node hash;
	struct rb_node rb_node;

	enum mq_rq_state state;
	atomic_t ref;

	unsigned long deadline;

	rq_end_io_fn *end_io;
	void *end_io_data;
};

#define req_op(req) ((enum req_op)((req)->cmd_flags & REQ_OP_MASK))

static inline sector_t blk_rq_pos(const struct request *rq)
{
	return rq->__sector;
}

static inline unsigned int blk_rq_bytes(const struct request *rq)
{
	return rq->__data_len;
}

static inline unsigned int blk_rq_sectors(const struct request *rq)
{
	return blk_rq_bytes(rq) >> SECTOR_SHIFT;
}

static inline unsigned short req_get_ioprio(struct request *req)
{
	if (req->bio)
		return req->bio->bi_ioprio;
	return 0;
}

static inline bool blk_rq_is_passthrough(const struct request *rq)
{
	return blk_op_is_passthrough(rq->cmd_flags);
}

/*
 * Whether @rq needs its start and end time: for the I/O statistics, blk-stat
 * or an I/O scheduler. Passthrough requests feed none of them.
 */
static inline bool blk_mq_need_time_stamp(struct request *rq)
{
	if (blk_rq_is_passthrough(rq))
		return false;
	return (rq->rq_flags & (RQF_IO_STAT | RQF_STATS | RQF_USE_SCHED));
}

#define rq_data_dir(rq) (op_is_write(req_op(rq)) ? WRITE : READ)

#define __rq_for_each_bio(_bio, rq) \
	if ((rq->bio))              \
		for (_bio = (rq)->bio; _bio; _bio = _bio->bi_next)

/* Where rq_for_each_segment() stands: the bio and the place in it. */
struct req_iterator {
	struct bvec_iter iter;
	struct bio *bio;
};

/* Every single-page segment of every bio of @_rq. */
#define rq_for_each_segment(bvl, _rq, _iter) \
	__rq_for_each_bio(_iter.bio, _rq) bio_for_each_segment(bvl, _iter.bio, _iter.iter)

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

/*
 * Tag set and hctx flags, v6.12's layout. With no elevator here,
 * SHOULD_MERGE, NO_SCHED and NO_SCHED_BY_DEFAULT are recorded and change
 * nothing. The tag allocation policy (BLK_TAG_ALLOC_*) sits in the bits
 * from BLK_MQ_F_ALLOC_POLICY_START_BIT.
 */
enum {
	BLK_MQ_F_SHOULD_MERGE = 1 << 0,
	BLK_MQ_F_TAG_QUEUE_SHARED = 1 << 1,
	/* the device completes its I/O through another blk-mq device */
	BLK_MQ_F_STACKING = 1 << 2,
	BLK_MQ_F_TAG_HCTX_SHARED = 1 << 3,
	BLK_MQ_F_BLOCKING = 1 << 4,
	BLK_MQ_F_NO_SCHED = 1 << 5,
	BLK_MQ_F_NO_SCHED_BY_DEFAULT = 1 << 6,
	BLK_MQ_F_ALLOC_POLICY_START_BIT = 7,
	BLK_MQ_F_ALLOC_POLICY_BITS = 1,
};
#define BLK_MQ_FLAG_TO_ALLOC_POLICY(flags) \
	((flags >> BLK_MQ_F_ALLOC_POLICY_START_BIT) & ((1 << BLK_MQ_F_ALLOC_POLICY_BITS) - 1))
#define BLK_ALLOC_POLICY_TO_MQ_FLAG(policy) \
	((policy & ((1 << BLK_MQ_F_ALLOC_POLICY_BITS) - 1)) << BLK_MQ_F_ALLOC_POLICY_START_BIT)

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

struct blk_mq_queue_data {
	struct request *rq;
	bool last;
};

enum blk_eh_timer_return {
	BLK_EH_DONE,
	BLK_EH_RESET_TIMER,
};

/*
 * Requests a ->poll() handler completed, gathered by blk_mq_add_to_batch() so
 * that the poller ends them together (->complete, normally
 * blk_mq_end_request_batch()) once it is done polling.
 */
struct io_comp_batch {
	struct rq_list req_list;
	bool need_ts;
	void (*complete)(struct io_comp_batch *);
};

#define DEFINE_IO_COMP_BATCH(name) struct io_comp_batch name = {}

/* struct rq_list is in <uk/linux/blkdev.h>, as upstream. */
static inline int rq_list_empty(const struct rq_list *rl)
{
	return rl->head == NULL;
}

static inline void rq_list_init(struct rq_list *rl)
{
	rl->head = NULL;
	rl->tail = NULL;
}

static inline void rq_list_add_tail(struct rq_list *rl, struct request *rq)
{
	rq->rq_next = NULL;
	if (rl->tail)
		rl->tail->rq_next = rq;
	else
		rl->head = rq;
	rl->tail = rq;
}

static inline void rq_list_add_head(struct rq_list *rl, struct request *rq)
{
	rq->rq_next = rl->head;
	rl->head = rq;
	if (!rl->tail)
		rl->tail = rq;
}

static inline struct request *rq_list_pop(struct rq_list *rl)
{
	struct request *rq = rl->head;

	if (rq) {
		rl->head = rl->head->rq_next;
		if (!rl->head)
			rl->tail = NULL;
		rq->rq_next = NULL;
	}
	return rq;
}

static inline struct request *rq_list_peek(struct rq_list *rl)
{
	return rl->head;
}

#define rq_list_for_each(rl, pos) for (pos = rq_list_peek((rl)); (pos); pos = pos->rq_next)

#define rq_list_for_each_safe(rl, pos, nxt)                                  \
	for (pos = rq_list_peek((rl)), nxt = pos ? pos->rq_next : NULL; pos; \
	     pos = nxt, nxt = pos ? pos->rq_next : NULL)

struct blk_mq_ops {
	blk_status_t (*queue_rq)(struct blk_mq_hw_ctx *, const struct blk_mq_queue_data *);
	void (*commit_rqs)(struct blk_mq_hw_ctx *);
	void (*queue_rqs)(struct rq_list *rqlist);
	/*
	 * Dispatch budget (SCSI's per-device queue depth): ->get_budget
	 * returns a token >= 0, or < 0 when the device can take no more;
	 * the driver gives it back with ->put_budget, at the latest when the
	 * request completes. The token may be kept in the request through
	 * ->set_rq_budget_token / ->get_rq_budget_token.
	 */
	int (*get_budget)(struct request_queue *);
	void (*put_budget)(struct request_queue *, int);
	void (*set_rq_budget_token)(struct request *, int);
	int (*get_rq_budget_token)(struct request *);
	enum blk_eh_timer_return (*timeout)(struct request *);
	int (*poll)(struct blk_mq_hw_ctx *, struct io_comp_batch *);
	void (*complete)(struct request *);
	int (*init_hctx)(struct blk_mq_hw_ctx *, void *, unsigned int);
	void (*exit_hctx)(struct blk_mq_hw_ctx *, unsigned int);
	int (*init_request)(struct blk_mq_tag_set *set, struct request *, unsigned int,
			    unsigned int);
	void (*exit_request)(struct blk_mq_tag_set *set, struct request *, unsigned int);
	/* Whether the device is too busy for more (blk_lld_busy()); optional. */
	bool (*busy)(struct request_queue *);
	void (*map_queues)(struct blk_mq_tag_set *set);
};

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

	struct blk_mq_srcu srcu; /* BLK_MQ_F_BLOCKING dispatch sections */
};

struct blk_mq_hw_ctx {
	/*
	 * Serialises @dispatch. Upstream gives these three fields a cache
	 * line of their own; kmalloc here makes no such alignment promise.
	 */
	spinlock_t lock;
	/* Requests the driver turned away (BLK_STS_*RESOURCE), issued first. */
	struct list_head dispatch;
	unsigned long state; /* BLK_MQ_S_* */

	struct delayed_work run_work;
	void *driver_data;

	struct blk_mq_tags *tags;
	struct blk_mq_tags *sched_tags;

	unsigned long flags; /* BLK_MQ_F_* */
	struct request_queue *queue;

	/*
	 * While the driver is busy, software queues are dispatched one
	 * request at a time, round robin: the one to start from next.
	 */
	struct blk_mq_ctx *dispatch_from;
	/*
	 * Moving average of how often the driver turned requests away
	 * (blk_mq_update_dispatch_busy()).
	 */
	unsigned int dispatch_busy;

	/*
	 * The hctx's own entry on a tag map's wait queue, used while a
	 * dispatch waits for a driver tag; dispatch_wait_lock guards it.
	 */
	spinlock_t dispatch_wait_lock;
	wait_queue_entry_t dispatch_wait;

	/* Which of the SBQ_WAIT_QUEUES the next sleeper on this hctx uses. */
	atomic_t wait_index;

	/*
	 * The CPUs whose software queues map here, and the one that runs the
	 * next asynchronous runs (round robin, BLK_MQ_CPU_WORK_BATCH each).
	 */
	cpumask_var_t cpumask;
	int next_cpu;
	int next_cpu_batch;

	unsigned int numa_node;
	unsigned int queue_num;
	unsigned short type; /* enum hctx_type */

	/* In-flight driver tags, when the tag set is shared (TAG_QUEUE_SHARED). */
	atomic_t nr_active;

	/* Software queues mapped here; 0 means "unmapped". */
	unsigned short nr_ctx;
	struct blk_mq_ctx **ctxs;
	/* Which of ctxs[] hold requests. */
	struct sbitmap ctx_map;

	/*
	 * Instances of the CPU hotplug states CPUHP_AP_BLK_MQ_ONLINE and
	 * CPUHP_BLK_MQ_DEAD (unhashed while not added), and the link on
	 * q->unused_hctx_list once the hctx is exited.
	 */
	struct hlist_node cpuhp_online;
	struct hlist_node cpuhp_dead;
	struct list_head hctx_list;
};

/* Per-CPU software queue. */
struct blk_mq_ctx {
	spinlock_t lock;
	struct list_head rq_lists[HCTX_MAX_TYPES];

	unsigned int cpu;
	unsigned short index_hw[HCTX_MAX_TYPES];
	struct blk_mq_hw_ctx *hctxs[HCTX_MAX_TYPES];
	struct request_queue *queue;
	struct blk_mq_ctxs *ctxs;
};

/* The per-CPU software queues of one request queue (blk_mq_alloc_ctxs()). */
struct blk_mq_ctxs {
	struct blk_mq_ctx __percpu *queue_ctx;
};

#define queue_for_each_hw_ctx(q, hctx, i)                  \
	for ((i) = 0; (i) < (q)->nr_hw_queues && ({        \
			      hctx = (q)->queue_hw_ctx[i]; \
			      1;                           \
		      });                                  \
	     (i)++)

/* Request allocation flags (blk_mq_req_flags_t). */
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

#define BLK_MQ_RESOURCE_DELAY 3 /* ms */

/* ---- tag sets and queues ---- */
int blk_mq_alloc_tag_set(struct blk_mq_tag_set *set);
int blk_mq_alloc_sq_tag_set(struct blk_mq_tag_set *set, const struct blk_mq_ops *ops,
			    unsigned int queue_depth, unsigned int set_flags);
void blk_mq_free_tag_set(struct blk_mq_tag_set *set);
/* The default CPU -> hw queue spreading for one map. */
void blk_mq_map_queues(struct blk_mq_queue_map *qmap);
struct request_queue *blk_mq_alloc_queue(struct blk_mq_tag_set *set, struct queue_limits *lim,
					 void *queuedata);
struct request_queue *blk_mq_init_queue(struct blk_mq_tag_set *set);
void blk_mq_destroy_queue(struct request_queue *q);
void blk_mq_update_nr_hw_queues(struct blk_mq_tag_set *set, int nr_hw_queues);

/* ---- requests ---- */
static inline void *blk_mq_rq_to_pdu(struct request *rq)
{
	return rq + 1;
}

static inline struct request *blk_mq_rq_from_pdu(void *pdu)
{
	return (struct request *)pdu - 1;
}

struct request *blk_mq_alloc_request(struct request_queue *q, blk_opf_t opf,
				     blk_mq_req_flags_t flags);
void blk_mq_free_request(struct request *rq);
void blk_mq_start_request(struct request *rq);
struct bio_list;
void blk_steal_bios(struct bio_list *list, struct request *rq);
void blk_mq_end_request(struct request *rq, blk_status_t error);
void __blk_mq_end_request(struct request *rq, blk_status_t error);
void blk_mq_end_request_batch(struct io_comp_batch *iob);

/*
 * Queues @req on @iob for its poller to end with @complete, if it can be
 * ended in a batch: not with scheduler tags, and for a file-system request
 * only when it succeeded and has no ->end_io. False: the caller ends it.
 */
static inline bool blk_mq_add_to_batch(struct request *req, struct io_comp_batch *iob,
				       bool is_error, void (*complete)(struct io_comp_batch *))
{
	if (!iob)
		return false;
	if (req->rq_flags & RQF_SCHED_TAGS)
		return false;
	if (!blk_rq_is_passthrough(req)) {
		if (req->end_io)
			return false;
		if (is_error)
			return false;
	}

	if (!iob->complete)
		iob->complete = complete;
	else if (iob->complete != complete)
		return false;
	iob->need_ts |= blk_mq_need_time_stamp(req);
	rq_list_add_tail(&iob->req_list, req);
	return true;
}

bool blk_update_request(struct request *rq, blk_status_t error, unsigned int nr_bytes);
void blk_mq_complete_request(struct request *rq);
bool blk_mq_complete_request_remote(struct request *rq);
void blk_mq_requeue_request(struct request *rq, bool kick_requeue_list);
void blk_mq_kick_requeue_list(struct request_queue *q);
void blk_mq_delay_kick_requeue_list(struct request_queue *q, unsigned long msecs);
/* Executes a passthrough request and waits: its status. */
blk_status_t blk_execute_rq(struct request *rq, bool at_head);
void blk_execute_rq_nowait(struct request *rq, bool at_head);
bool blk_rq_is_poll(struct request *rq);
int blk_rq_poll(struct request *rq, struct io_comp_batch *iob, unsigned int poll_flags);
void blk_rq_init(struct request_queue *q, struct request *rq);
unsigned int blk_mq_rq_cpu(struct request *rq);
bool blk_mq_queue_inflight(struct request_queue *q);

static inline void blk_mq_set_request_complete(struct request *rq)
{
	WRITE_ONCE(rq->state, MQ_RQ_COMPLETE);
}

/* ---- running, stopping and quiescing ---- */
void blk_mq_run_hw_queue(struct blk_mq_hw_ctx *hctx, bool async);
void blk_mq_run_hw_queues(struct request_queue *q, bool async);
void blk_mq_delay_run_hw_queue(struct blk_mq_hw_ctx *hctx, unsigned long msecs);
void blk_mq_delay_run_hw_queues(struct request_queue *q, unsigned long msecs);
void blk_mq_stop_hw_queue(struct blk_mq_hw_ctx *hctx);
void blk_mq_stop_hw_queues(struct request_queue *q);
void blk_mq_start_hw_queue(struct blk_mq_hw_ctx *hctx);
void blk_mq_start_hw_queues(struct request_queue *q);
void blk_mq_start_stopped_hw_queue(struct blk_mq_hw_ctx *hctx, bool async);
void blk_mq_start_stopped_hw_queues(struct request_queue *q, bool async);
bool blk_mq_queue_stopped(struct request_queue *q);
void blk_mq_quiesce_queue(struct request_queue *q);
void blk_mq_quiesce_queue_nowait(struct request_queue *q);
void blk_mq_quiesce_tagset(struct blk_mq_tag_set *set);
void blk_mq_unquiesce_tagset(struct blk_mq_tag_set *set);
void blk_mq_unquiesce_queue(struct request_queue *q);
void blk_mq_wait_quiesce_done(struct blk_mq_tag_set *set);
void blk_mq_freeze_queue(struct request_queue *q);
void blk_freeze_queue_start(struct request_queue *q);
void blk_mq_freeze_queue_wait(struct request_queue *q);
int blk_mq_freeze_queue_wait_timeout(struct request_queue *q, unsigned long timeout);
void blk_mq_unfreeze_queue(struct request_queue *q);
void blk_freeze_queue_start_non_owner(struct request_queue *q);
void blk_mq_unfreeze_queue_non_owner(struct request_queue *q);

/* ---- polling ---- */
int blk_mq_poll(struct request_queue *q, blk_qc_t cookie, struct io_comp_batch *iob,
		unsigned int flags);

#endif /* UK_LINUX_BLK_MQ_H */
