/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Workqueues (include/linux/workqueue.h, kernel/workqueue.c).
 *
 * A work item's data word holds WORK_STRUCT_PENDING and, while queued, the
 * pool_workqueue it sits on; once it starts running, the id of the pool
 * that ran it (so flush_work()/cancel_work_sync() can find the running
 * instance). Worker threads belong to pools: two per-CPU pools (normal and
 * highpri) per virtual CPU, whose workers are pinned to that CPU and are
 * concurrency-managed through schedule(), and two unbound pools.
 *
 * Upstream: include/linux/workqueue.h @ v6.12
 */
#ifndef UK_LINUX_WORKQUEUE_H
#define UK_LINUX_WORKQUEUE_H

#include <uk/linux/atomic.h>
#include <uk/linux/bitops.h>
#include <uk/linux/cpumask.h>
#include <uk/linux/list.h>
#include <uk/linux/rcupdate.h>
#include <uk/linux/timer.h>

struct workqueue_struct;
struct work_struct;
typedef void (*work_func_t)(struct work_struct *work);
void delayed_work_timer_fn(struct timer_list *t);

enum work_bits {
	WORK_STRUCT_PENDING_BIT = 0,
	WORK_STRUCT_INACTIVE_BIT,
	WORK_STRUCT_PWQ_BIT,
	WORK_STRUCT_LINKED_BIT,
	WORK_STRUCT_FLAG_BITS,

	WORK_STRUCT_COLOR_SHIFT = WORK_STRUCT_FLAG_BITS,
	WORK_STRUCT_COLOR_BITS = 4,

	WORK_STRUCT_PWQ_SHIFT = WORK_STRUCT_COLOR_SHIFT + WORK_STRUCT_COLOR_BITS,

	/* off-queue: flags after the struct flags, then the pool id */
	WORK_OFFQ_FLAG_SHIFT = WORK_STRUCT_FLAG_BITS,
	WORK_OFFQ_CANCELING_BIT = WORK_OFFQ_FLAG_SHIFT,
	WORK_OFFQ_FLAG_END,
	WORK_OFFQ_POOL_SHIFT = WORK_OFFQ_FLAG_END,
	WORK_OFFQ_POOL_BITS = 31,
};

enum work_flags {
	WORK_STRUCT_PENDING = 1 << WORK_STRUCT_PENDING_BIT,
	WORK_STRUCT_INACTIVE = 1 << WORK_STRUCT_INACTIVE_BIT,
	WORK_STRUCT_PWQ = 1 << WORK_STRUCT_PWQ_BIT,
	WORK_STRUCT_LINKED = 1 << WORK_STRUCT_LINKED_BIT,
	WORK_STRUCT_STATIC = 0,
};

enum wq_misc_consts {
	WORK_NR_COLORS = (1 << WORK_STRUCT_COLOR_BITS) - 1,
	WORK_NO_COLOR = WORK_NR_COLORS, /* barriers: not counted by flushes */
	WORK_CPU_UNBOUND = NR_CPUS,
	WORK_BUSY_PENDING = 1 << 0,
	WORK_BUSY_RUNNING = 1 << 1,
	WORKER_DESC_LEN = 24,
};

#define WORK_OFFQ_CANCELING (1ul << WORK_OFFQ_CANCELING_BIT)
#define WORK_OFFQ_POOL_NONE ((1ul << WORK_OFFQ_POOL_BITS) - 1)
#define WORK_STRUCT_NO_POOL (WORK_OFFQ_POOL_NONE << WORK_OFFQ_POOL_SHIFT)
#define WORK_STRUCT_FLAG_MASK ((1ul << WORK_STRUCT_FLAG_BITS) - 1)
#define WORK_STRUCT_WQ_DATA_MASK (~((1ul << WORK_STRUCT_PWQ_SHIFT) - 1))

struct work_struct {
	atomic_long_t data;
	struct list_head entry;
	work_func_t func;
};

#define WORK_DATA_INIT() ATOMIC_LONG_INIT((unsigned long)WORK_STRUCT_NO_POOL)
#define WORK_DATA_STATIC_INIT() \
	ATOMIC_LONG_INIT((unsigned long)(WORK_STRUCT_NO_POOL | WORK_STRUCT_STATIC))

struct delayed_work {
	struct work_struct work;
	struct timer_list timer;
	/* where the timer callback puts ->work: this workqueue, this CPU */
	struct workqueue_struct *wq;
	int cpu;
};

struct rcu_work {
	struct work_struct work;
	struct rcu_head rcu;
	/* the workqueue that receives ->work once the grace period ends */
	struct workqueue_struct *wq;
};

static inline struct delayed_work *to_delayed_work(struct work_struct *work)
{
	return container_of(work, struct delayed_work, work);
}

static inline struct rcu_work *to_rcu_work(struct work_struct *work)
{
	return container_of(work, struct rcu_work, work);
}

#define work_data_bits(work) ((unsigned long *)(&(work)->data.counter))

#define __INIT_WORK(_work, _func, _onstack)                                 \
	do {                                                                \
		atomic_long_set(&(_work)->data, (long)WORK_STRUCT_NO_POOL); \
		INIT_LIST_HEAD(&(_work)->entry);                            \
		(_work)->func = (_func);                                    \
	} while (0)

#define INIT_WORK(_work, _func) __INIT_WORK((_work), (_func), 0)
#define INIT_WORK_ONSTACK(_work, _func) __INIT_WORK((_work), (_func), 1)

#define __INIT_DELAYED_WORK(_work, _func, _tflags)                                              \
	do {                                                                                    \
		INIT_WORK(&(_work)->work, (_func));                                             \
		timer_setup(&(_work)->timer, delayed_work_timer_fn, (_tflags) | TIMER_IRQSAFE); \
		(_work)->wq = nullptr;                                                          \
		(_work)->cpu = 0;                                                               \
	} while (0)

#define INIT_DELAYED_WORK(_work, _func) __INIT_DELAYED_WORK(_work, _func, 0)
#define INIT_DELAYED_WORK_ONSTACK(_work, _func) __INIT_DELAYED_WORK(_work, _func, 0)
#define INIT_DEFERRABLE_WORK(_work, _func) __INIT_DELAYED_WORK(_work, _func, TIMER_DEFERRABLE)
#define INIT_RCU_WORK(_work, _func) INIT_WORK(&(_work)->work, (_func))
#define INIT_RCU_WORK_ONSTACK(_work, _func) INIT_WORK_ONSTACK(&(_work)->work, (_func))

/* clang-format off */
#define __WORK_INITIALIZER(n, f)                                                            \
	{ .data = WORK_DATA_STATIC_INIT(), .entry = { &(n).entry, &(n).entry }, .func = (f) }
/* clang-format on */

/* clang-format off */
#define __DELAYED_WORK_INITIALIZER(n, f, tflags)                                            \
	{                                                                                   \
		.work = __WORK_INITIALIZER((n).work, (f)),                                  \
		.timer = __TIMER_INITIALIZER(delayed_work_timer_fn, (tflags) | TIMER_IRQSAFE), \
		.wq = nullptr, .cpu = 0,                                                    \
	}
/* clang-format on */

#define DECLARE_WORK(n, f) struct work_struct n = __WORK_INITIALIZER(n, f)
#define DECLARE_DELAYED_WORK(n, f) struct delayed_work n = __DELAYED_WORK_INITIALIZER(n, f, 0)
#define DECLARE_DEFERRABLE_WORK(n, f) \
	struct delayed_work n = __DELAYED_WORK_INITIALIZER(n, f, TIMER_DEFERRABLE)

static inline void destroy_work_on_stack(struct work_struct *work) {}
static inline void destroy_delayed_work_on_stack(struct delayed_work *work) {}

#define work_pending(work) test_bit(WORK_STRUCT_PENDING_BIT, work_data_bits(work))
#define delayed_work_pending(w) work_pending(&(w)->work)

/* alloc_workqueue() flags */
enum wq_flags {
	WQ_BH = 1 << 0,
	WQ_UNBOUND = 1 << 1,
	WQ_FREEZABLE = 1 << 2,
	WQ_MEM_RECLAIM = 1 << 3,
	WQ_HIGHPRI = 1 << 4,
	WQ_CPU_INTENSIVE = 1 << 5,
	WQ_SYSFS = 1 << 6,
	WQ_POWER_EFFICIENT = 1 << 7,
	WQ_PERCPU = 1 << 8,

	__WQ_DESTROYING = 1 << 15,
	__WQ_DRAINING = 1 << 16,
	__WQ_ORDERED = 1 << 17,
	__WQ_LEGACY = 1 << 18,

	WQ_MAX_ACTIVE = 512,
	WQ_UNBOUND_MAX_ACTIVE = WQ_MAX_ACTIVE,
	WQ_DFL_ACTIVE = WQ_MAX_ACTIVE / 2,
};

extern struct workqueue_struct *system_wq;
extern struct workqueue_struct *system_percpu_wq;
extern struct workqueue_struct *system_highpri_wq;
extern struct workqueue_struct *system_long_wq;
extern struct workqueue_struct *system_unbound_wq;
extern struct workqueue_struct *system_dfl_wq;
extern struct workqueue_struct *system_freezable_wq;
extern struct workqueue_struct *system_power_efficient_wq;
extern struct workqueue_struct *system_freezable_power_efficient_wq;

__printf(1, 4) struct workqueue_struct *alloc_workqueue(const char *fmt, unsigned int flags,
							int max_active, ...);

#define alloc_ordered_workqueue(fmt, flags, args...) \
	alloc_workqueue(fmt, WQ_UNBOUND | __WQ_ORDERED | (flags), 1, ##args)
#define create_workqueue(name) alloc_workqueue("%s", __WQ_LEGACY | WQ_MEM_RECLAIM, 1, (name))
#define create_freezable_workqueue(name) \
	alloc_workqueue("%s", __WQ_LEGACY | WQ_FREEZABLE | WQ_UNBOUND | WQ_MEM_RECLAIM, 1, (name))
#define create_singlethread_workqueue(name) \
	alloc_ordered_workqueue("%s", __WQ_LEGACY | WQ_MEM_RECLAIM, name)

void destroy_workqueue(struct workqueue_struct *wq);
void workqueue_set_max_active(struct workqueue_struct *wq, int max_active);

bool queue_work_on(int cpu, struct workqueue_struct *wq, struct work_struct *work);
bool queue_work_node(int node, struct workqueue_struct *wq, struct work_struct *work);
bool queue_delayed_work_on(int cpu, struct workqueue_struct *wq, struct delayed_work *work,
			   unsigned long delay);
bool mod_delayed_work_on(int cpu, struct workqueue_struct *wq, struct delayed_work *dwork,
			 unsigned long delay);
bool queue_rcu_work(struct workqueue_struct *wq, struct rcu_work *rwork);

void __flush_workqueue(struct workqueue_struct *wq);
#define flush_workqueue(wq) __flush_workqueue(wq)
void drain_workqueue(struct workqueue_struct *wq);

bool flush_work(struct work_struct *work);
bool cancel_work(struct work_struct *work);
bool cancel_work_sync(struct work_struct *work);
bool flush_delayed_work(struct delayed_work *dwork);
bool cancel_delayed_work(struct delayed_work *dwork);
bool cancel_delayed_work_sync(struct delayed_work *dwork);
bool flush_rcu_work(struct rcu_work *rwork);

bool current_is_workqueue_rescuer(void);
bool workqueue_congested(int cpu, struct workqueue_struct *wq);
unsigned int work_busy(struct work_struct *work);
struct work_struct *current_work(void);

static inline bool queue_work(struct workqueue_struct *wq, struct work_struct *work)
{
	return queue_work_on(WORK_CPU_UNBOUND, wq, work);
}

static inline bool queue_delayed_work(struct workqueue_struct *wq, struct delayed_work *dwork,
				      unsigned long delay)
{
	return queue_delayed_work_on(WORK_CPU_UNBOUND, wq, dwork, delay);
}

static inline bool mod_delayed_work(struct workqueue_struct *wq, struct delayed_work *dwork,
				    unsigned long delay)
{
	return mod_delayed_work_on(WORK_CPU_UNBOUND, wq, dwork, delay);
}

static inline bool schedule_work_on(int cpu, struct work_struct *work)
{
	return queue_work_on(cpu, system_wq, work);
}

static inline bool schedule_work(struct work_struct *work)
{
	return queue_work(system_wq, work);
}

static inline bool schedule_delayed_work_on(int cpu, struct delayed_work *dwork,
					    unsigned long delay)
{
	return queue_delayed_work_on(cpu, system_wq, dwork, delay);
}

static inline bool schedule_delayed_work(struct delayed_work *dwork, unsigned long delay)
{
	return queue_delayed_work(system_wq, dwork, delay);
}

#define flush_scheduled_work() __flush_workqueue(system_wq)

long work_on_cpu(int cpu, long (*fn)(void *), void *arg);

namespace uk
{
/* Worker threads alive in all pools (tests keep thread counts sane). */
int wq_nr_workers(void);
/*
 * Manual mode, for a scheduler that runs one thread at a time and runs work
 * items itself (the explorer, docs/explore.md): no worker thread is woken or
 * started, and queued work waits on its pool until wq_run_one(). Switch
 * while no work item runs; leaving manual mode wakes workers for what waits.
 */
void wq_set_manual(bool manual);
/* Whether a pool of @cpu (-1: the unbound pools) has work waiting. */
bool wq_has_work(int cpu);
/*
 * Runs the first work item waiting on @cpu's pools (high priority first; -1:
 * the unbound pools) in the calling task, as a worker of that pool would;
 * for a CPU's pools the caller runs on that CPU. Returns false if none was
 * waiting.
 */
bool wq_run_one(int cpu);
} // namespace uk

#endif /* UK_LINUX_WORKQUEUE_H */
