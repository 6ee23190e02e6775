/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Simple wait queues (include/linux/swait.h, kernel/sched/swait.c): a raw
 * spinlock and a list of sleeping tasks, with no wake functions, keys or
 * flags. Every waiter is exclusive: swake_up_one() wakes the oldest,
 * swake_up_all() wakes them all. Completions sleep on one.
 *
 * Upstream: include/linux/swait.h @ v6.12
 */
#ifndef UK_LINUX_SWAIT_H
#define UK_LINUX_SWAIT_H

#include <uk/linux/list.h>
#include <uk/linux/spinlock.h>
#include <uk/linux/wait.h>

struct task_struct;

struct swait_queue_head {
	raw_spinlock_t lock;
	struct list_head task_list;
};

struct swait_queue {
	struct task_struct *task;
	struct list_head task_list;
};

/*
 * The initializers name the object they initialize as (&(name))->member:
 * clang's -Wuninitialized takes (name).member inside the variable's own
 * initializer for a read of it.
 */
/* clang-format off */
#define __SWAITQUEUE_INITIALIZER(name) { .task = current, .task_list = LIST_HEAD_INIT((&(name))->task_list) }
/* clang-format on */
#define DECLARE_SWAITQUEUE(name) struct swait_queue name = __SWAITQUEUE_INITIALIZER(name)

/* clang-format off */
#define __SWAIT_QUEUE_HEAD_INITIALIZER(name) \
	{ .lock = __RAW_SPIN_LOCK_UNLOCKED(name.lock), .task_list = LIST_HEAD_INIT((&(name))->task_list) }
/* clang-format on */
#define DECLARE_SWAIT_QUEUE_HEAD(name) \
	struct swait_queue_head name = __SWAIT_QUEUE_HEAD_INITIALIZER(name)
#define DECLARE_SWAIT_QUEUE_HEAD_ONSTACK(name) DECLARE_SWAIT_QUEUE_HEAD(name)

void __init_swait_queue_head(struct swait_queue_head *q, const char *name,
			     struct lock_class_key *key);

/* No lockdep: no class key per call site, as init_waitqueue_head() has none. */
#define init_swait_queue_head(q) __init_swait_queue_head((q), #q, nullptr)

/* Lockless "anyone queued?": callers need a barrier pairing, see swq_has_sleeper(). */
static inline int swait_active(struct swait_queue_head *wq)
{
	return !list_empty(&wq->task_list);
}

/*
 * swait_active() after a full barrier: the waker's store to its condition
 * is ordered before its look at the list. Pairs with the barrier of
 * set_current_state() in prepare_to_swait_exclusive()/prepare_to_swait_event()
 * on the sleeping side, which orders the list_add() before the sleeper's
 * look at the condition.
 */
static inline bool swq_has_sleeper(struct swait_queue_head *wq)
{
	smp_mb();
	return swait_active(wq);
}

void swake_up_one(struct swait_queue_head *q);
void swake_up_all(struct swait_queue_head *q);
void swake_up_locked(struct swait_queue_head *q, int wake_flags);
void swake_up_all_locked(struct swait_queue_head *q);

void __prepare_to_swait(struct swait_queue_head *q, struct swait_queue *wait);
void prepare_to_swait_exclusive(struct swait_queue_head *q, struct swait_queue *wait, int state);
long prepare_to_swait_event(struct swait_queue_head *q, struct swait_queue *wait, int state);

void __finish_swait(struct swait_queue_head *q, struct swait_queue *wait);
void finish_swait(struct swait_queue_head *q, struct swait_queue *wait);

/*
 * The loop of ___wait_event() with an exclusive entry on a simple queue.
 * An interrupted wait skips finish_swait(), since prepare_to_swait_event()
 * has already taken the entry off the queue. The kernel jumps over it to a
 * local label; a flag does the same here.
 */
#define ___swait_event(wq, condition, state, ret, cmd)                              \
	({                                                                          \
		struct swait_queue __wait;                                          \
		long __ret = ret;                                                   \
		bool __interrupted = false;                                         \
                                                                                    \
		INIT_LIST_HEAD(&__wait.task_list);                                  \
		for (;;) {                                                          \
			long __int = prepare_to_swait_event(&(wq), &__wait, state); \
                                                                                    \
			if (condition)                                              \
				break;                                              \
			if (___wait_is_interruptible(state) && __int) {             \
				__ret = __int;                                      \
				__interrupted = true;                               \
				break;                                              \
			}                                                           \
			cmd;                                                        \
		}                                                                   \
		if (!__interrupted)                                                 \
			finish_swait(&(wq), &__wait);                               \
		__ret;                                                              \
	})

#define __swait_event(wq, condition) \
	(void)___swait_event(wq, condition, TASK_UNINTERRUPTIBLE, 0, schedule())

#define swait_event_exclusive(wq, condition)  \
	do {                                  \
		if (condition)                \
			break;                \
		__swait_event(wq, condition); \
	} while (0)

#define __swait_event_timeout(wq, condition, timeout)                                      \
	___swait_event(wq, ___wait_cond_timeout(condition), TASK_UNINTERRUPTIBLE, timeout, \
		       __ret = schedule_timeout(__ret))

#define swait_event_timeout_exclusive(wq, condition, timeout)                  \
	({                                                                     \
		long __ret = timeout;                                          \
		if (!___wait_cond_timeout(condition))                          \
			__ret = __swait_event_timeout(wq, condition, timeout); \
		__ret;                                                         \
	})

#define __swait_event_interruptible(wq, condition) \
	___swait_event(wq, condition, TASK_INTERRUPTIBLE, 0, schedule())

#define swait_event_interruptible_exclusive(wq, condition)                  \
	({                                                                  \
		int __ret = 0;                                              \
		if (!(condition))                                           \
			__ret = __swait_event_interruptible(wq, condition); \
		__ret;                                                      \
	})

#define __swait_event_interruptible_timeout(wq, condition, timeout)                      \
	___swait_event(wq, ___wait_cond_timeout(condition), TASK_INTERRUPTIBLE, timeout, \
		       __ret = schedule_timeout(__ret))

#define swait_event_interruptible_timeout_exclusive(wq, condition, timeout)                  \
	({                                                                                   \
		long __ret = timeout;                                                        \
		if (!___wait_cond_timeout(condition))                                        \
			__ret = __swait_event_interruptible_timeout(wq, condition, timeout); \
		__ret;                                                                       \
	})

#define __swait_event_idle(wq, condition) \
	(void)___swait_event(wq, condition, TASK_IDLE, 0, schedule())

#define swait_event_idle_exclusive(wq, condition)  \
	do {                                       \
		if (condition)                     \
			break;                     \
		__swait_event_idle(wq, condition); \
	} while (0)

#define __swait_event_idle_timeout(wq, condition, timeout)                      \
	___swait_event(wq, ___wait_cond_timeout(condition), TASK_IDLE, timeout, \
		       __ret = schedule_timeout(__ret))

#define swait_event_idle_timeout_exclusive(wq, condition, timeout)                  \
	({                                                                          \
		long __ret = timeout;                                               \
		if (!___wait_cond_timeout(condition))                               \
			__ret = __swait_event_idle_timeout(wq, condition, timeout); \
		__ret;                                                              \
	})

#endif /* UK_LINUX_SWAIT_H */
