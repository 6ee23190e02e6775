/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Wait queues (include/linux/wait.h, kernel/sched/wait.c): a spinlock and a
 * list of entries, each with a wake function. Sleepers use the kernel's
 * prepare_to_wait()/condition/schedule() loop; wakers walk the list under
 * the lock and stop after nr_exclusive exclusive entries accepted.
 * __wake_up() returns how many exclusive waiters were woken (6.2+).
 *
 * Upstream: include/linux/wait.h @ v6.12
 */
#ifndef UK_LINUX_WAIT_H
#define UK_LINUX_WAIT_H

#include <uk/linux/list.h>
#include <uk/linux/sched.h>
#include <uk/linux/sched/signal.h>
#include <uk/linux/spinlock.h>

typedef unsigned int __poll_t;

typedef struct wait_queue_entry wait_queue_entry_t;

typedef int (*wait_queue_func_t)(struct wait_queue_entry *wq_entry, unsigned mode, int flags,
				 void *key);
int default_wake_function(struct wait_queue_entry *wq_entry, unsigned mode, int flags, void *key);

/* wait_queue_entry::flags */
#define WQ_FLAG_EXCLUSIVE 0x01
#define WQ_FLAG_WOKEN 0x02
#define WQ_FLAG_CUSTOM 0x04
#define WQ_FLAG_DONE 0x08
#define WQ_FLAG_PRIORITY 0x10

/* The kernel's `private` field: a C++ keyword, so it is spelled private_. */
struct wait_queue_entry {
	unsigned int flags;
	void *private_;
	wait_queue_func_t func;
	struct list_head entry;
};

struct wait_queue_head {
	spinlock_t lock;
	struct list_head head;
};
typedef struct wait_queue_head wait_queue_head_t;

void __init_waitqueue_head(struct wait_queue_head *wq_head, const char *name,
			   struct lock_class_key *key);

#define init_waitqueue_head(wq_head) __init_waitqueue_head((wq_head), #wq_head, nullptr)

/* A statically initialised head: the list points at itself. */
/* clang-format off */
#define __WAIT_QUEUE_HEAD_INITIALIZER(name) { .lock = {}, .head = { &(&(name))->head, &(&(name))->head } }
/* clang-format on */
#define DECLARE_WAIT_QUEUE_HEAD(name) \
	struct wait_queue_head name = __WAIT_QUEUE_HEAD_INITIALIZER(name)
#define DECLARE_WAIT_QUEUE_HEAD_ONSTACK(name) DECLARE_WAIT_QUEUE_HEAD(name)

/* clang-format off */
#define __WAITQUEUE_INITIALIZER(name, tsk)                                                  \
	{ .flags = 0, .private_ = (tsk), .func = default_wake_function, .entry = { nullptr, nullptr } }
/* clang-format on */
#define DECLARE_WAITQUEUE(name, tsk) \
	struct wait_queue_entry name = __WAITQUEUE_INITIALIZER(name, tsk)

static inline void init_waitqueue_entry(struct wait_queue_entry *wq_entry, struct task_struct *p)
{
	wq_entry->flags = 0;
	wq_entry->private_ = p;
	wq_entry->func = default_wake_function;
}

static inline void init_waitqueue_func_entry(struct wait_queue_entry *wq_entry,
					     wait_queue_func_t func)
{
	wq_entry->flags = 0;
	wq_entry->private_ = nullptr;
	wq_entry->func = func;
}

/* Lockless "anyone queued?": callers need a barrier pairing, see wq_has_sleeper(). */
static inline int waitqueue_active(struct wait_queue_head *wq_head)
{
	return !list_empty(&wq_head->head);
}

static inline bool wq_has_single_sleeper(struct wait_queue_head *wq_head)
{
	return list_is_singular(&wq_head->head);
}

/*
 * waitqueue_active() preceded by a full barrier: orders the waker's
 * condition update before its look at the list; pairs with the barrier in
 * set_current_state() inside prepare_to_wait*() on the sleeper side.
 */
static inline bool wq_has_sleeper(struct wait_queue_head *wq_head)
{
	smp_mb();
	return waitqueue_active(wq_head);
}

void add_wait_queue(struct wait_queue_head *wq_head, struct wait_queue_entry *wq_entry);
void add_wait_queue_exclusive(struct wait_queue_head *wq_head, struct wait_queue_entry *wq_entry);
void add_wait_queue_priority(struct wait_queue_head *wq_head, struct wait_queue_entry *wq_entry);
void remove_wait_queue(struct wait_queue_head *wq_head, struct wait_queue_entry *wq_entry);

static inline void __add_wait_queue(struct wait_queue_head *wq_head,
				    struct wait_queue_entry *wq_entry)
{
	struct list_head *head = &wq_head->head;
	struct wait_queue_entry *wq;

	/* priority waiters stay in front of everything else */
	list_for_each_entry (wq, &wq_head->head, entry) {
		if (!(wq->flags & WQ_FLAG_PRIORITY))
			break;
		head = &wq->entry;
	}
	list_add(&wq_entry->entry, head);
}

static inline void __add_wait_queue_exclusive(struct wait_queue_head *wq_head,
					      struct wait_queue_entry *wq_entry)
{
	wq_entry->flags |= WQ_FLAG_EXCLUSIVE;
	__add_wait_queue(wq_head, wq_entry);
}

static inline void __add_wait_queue_entry_tail(struct wait_queue_head *wq_head,
					       struct wait_queue_entry *wq_entry)
{
	list_add_tail(&wq_entry->entry, &wq_head->head);
}

static inline void __add_wait_queue_entry_tail_exclusive(struct wait_queue_head *wq_head,
							 struct wait_queue_entry *wq_entry)
{
	wq_entry->flags |= WQ_FLAG_EXCLUSIVE;
	__add_wait_queue_entry_tail(wq_head, wq_entry);
}

static inline void __remove_wait_queue(struct wait_queue_head *wq_head,
				       struct wait_queue_entry *wq_entry)
{
	list_del(&wq_entry->entry);
}

/* Wake-up entry points; each returns the number of exclusive waiters woken. */
int __wake_up(struct wait_queue_head *wq_head, unsigned int mode, int nr_exclusive, void *key);
void __wake_up_on_current_cpu(struct wait_queue_head *wq_head, unsigned int mode, void *key);
void __wake_up_locked_key(struct wait_queue_head *wq_head, unsigned int mode, void *key);
void __wake_up_sync_key(struct wait_queue_head *wq_head, unsigned int mode, void *key);
void __wake_up_locked_sync_key(struct wait_queue_head *wq_head, unsigned int mode, void *key);
void __wake_up_locked(struct wait_queue_head *wq_head, unsigned int mode, int nr);
void __wake_up_sync(struct wait_queue_head *wq_head, unsigned int mode);
void __wake_up_pollfree(struct wait_queue_head *wq_head);

#define wake_up(x) __wake_up(x, TASK_NORMAL, 1, nullptr)
#define wake_up_nr(x, nr) __wake_up(x, TASK_NORMAL, nr, nullptr)
#define wake_up_all(x) __wake_up(x, TASK_NORMAL, 0, nullptr)
#define wake_up_locked(x) __wake_up_locked((x), TASK_NORMAL, 1)
#define wake_up_all_locked(x) __wake_up_locked((x), TASK_NORMAL, 0)
#define wake_up_sync(x) __wake_up_sync(x, TASK_NORMAL)

#define wake_up_interruptible(x) __wake_up(x, TASK_INTERRUPTIBLE, 1, nullptr)
#define wake_up_interruptible_nr(x, nr) __wake_up(x, TASK_INTERRUPTIBLE, nr, nullptr)
#define wake_up_interruptible_all(x) __wake_up(x, TASK_INTERRUPTIBLE, 0, nullptr)
#define wake_up_interruptible_sync(x) __wake_up_sync((x), TASK_INTERRUPTIBLE)

#define poll_to_key(m) ((void *)(uintptr_t)(__poll_t)(m))
#define key_to_poll(m) ((__poll_t)(uintptr_t)(void *)(m))
#define wake_up_poll(x, m) __wake_up(x, TASK_NORMAL, 1, poll_to_key(m))
#define wake_up_poll_on_current_cpu(x, m) __wake_up_on_current_cpu(x, TASK_NORMAL, poll_to_key(m))
#define wake_up_locked_poll(x, m) __wake_up_locked_key((x), TASK_NORMAL, poll_to_key(m))
#define wake_up_interruptible_poll(x, m) __wake_up(x, TASK_INTERRUPTIBLE, 1, poll_to_key(m))
#define wake_up_interruptible_sync_poll(x, m) \
	__wake_up_sync_key((x), TASK_INTERRUPTIBLE, poll_to_key(m))
#define wake_up_interruptible_sync_poll_locked(x, m) \
	__wake_up_locked_sync_key((x), TASK_INTERRUPTIBLE, poll_to_key(m))

static inline void wake_up_pollfree(struct wait_queue_head *wq_head)
{
	if (waitqueue_active(wq_head))
		__wake_up_pollfree(wq_head);
}

/* Entries for the open-coded loop. */
void init_wait_entry(struct wait_queue_entry *wq_entry, int flags);
void prepare_to_wait(struct wait_queue_head *wq_head, struct wait_queue_entry *wq_entry, int state);
bool prepare_to_wait_exclusive(struct wait_queue_head *wq_head, struct wait_queue_entry *wq_entry,
			       int state);
long prepare_to_wait_event(struct wait_queue_head *wq_head, struct wait_queue_entry *wq_entry,
			   int state);
void finish_wait(struct wait_queue_head *wq_head, struct wait_queue_entry *wq_entry);
long wait_woken(struct wait_queue_entry *wq_entry, unsigned mode, long timeout);
int woken_wake_function(struct wait_queue_entry *wq_entry, unsigned mode, int sync, void *key);
int autoremove_wake_function(struct wait_queue_entry *wq_entry, unsigned mode, int sync, void *key);
int do_wait_intr(wait_queue_head_t *wq, wait_queue_entry_t *wait);
int do_wait_intr_irq(wait_queue_head_t *wq, wait_queue_entry_t *wait);

#define DEFINE_WAIT_FUNC(name, function)               \
	struct wait_queue_entry name = {               \
		.flags = 0,                            \
		.private_ = get_current(),             \
		.func = function,                      \
		.entry = LIST_HEAD_INIT((name).entry), \
	}
#define DEFINE_WAIT(name) DEFINE_WAIT_FUNC(name, autoremove_wake_function)

#define init_wait_func(wait, function)            \
	do {                                      \
		(wait)->private_ = get_current(); \
		(wait)->func = function;          \
		INIT_LIST_HEAD(&(wait)->entry);   \
		(wait)->flags = 0;                \
	} while (0)
#define init_wait(wait) init_wait_func(wait, autoremove_wake_function)

/*
 * The wait_event*() family. ___wait_event() is the kernel's loop: queue
 * (setting the state with a barrier), test the condition, sleep via `cmd`,
 * repeat; an interruptible/killable wait returns the -ERESTARTSYS that
 * prepare_to_wait_event() reports when a signal is pending. `cmd` may
 * `break` out of the loop (hrtimeout does).
 */
#define ___wait_is_interruptible(state)                                                            \
	(__builtin_constant_p(state) ? ((state) == TASK_INTERRUPTIBLE || (state) == TASK_KILLABLE) \
				     : ((state) & (TASK_INTERRUPTIBLE | TASK_WAKEKILL)) != 0)

#define ___wait_cond_timeout(condition)    \
	({                                 \
		bool __cond = (condition); \
		if (__cond && !__ret)      \
			__ret = 1;         \
		__cond || !__ret;          \
	})

#define ___wait_event(wq_head, condition, state, exclusive, ret, cmd)                       \
	({                                                                                  \
		struct wait_queue_entry __wq_entry;                                         \
		long __ret = ret;                                                           \
		bool __interrupted = false;                                                 \
                                                                                            \
		init_wait_entry(&__wq_entry, (exclusive) ? WQ_FLAG_EXCLUSIVE : 0);          \
		for (;;) {                                                                  \
			long __int = prepare_to_wait_event(&(wq_head), &__wq_entry, state); \
                                                                                            \
			if (condition)                                                      \
				break;                                                      \
			if (___wait_is_interruptible(state) && __int) {                     \
				__ret = __int;                                              \
				__interrupted = true;                                       \
				break;                                                      \
			}                                                                   \
			cmd;                                                                \
		}                                                                           \
		if (!__interrupted)                                                         \
			finish_wait(&(wq_head), &__wq_entry);                               \
		__ret;                                                                      \
	})

#define __wait_event(wq_head, condition) \
	(void)___wait_event(wq_head, condition, TASK_UNINTERRUPTIBLE, 0, 0, schedule())

#define wait_event(wq_head, condition)            \
	do {                                      \
		might_sleep();                    \
		if (condition)                    \
			break;                    \
		__wait_event(wq_head, condition); \
	} while (0)

#define __io_wait_event(wq_head, condition) \
	(void)___wait_event(wq_head, condition, TASK_UNINTERRUPTIBLE, 0, 0, io_schedule())

#define io_wait_event(wq_head, condition)            \
	do {                                         \
		might_sleep();                       \
		if (condition)                       \
			break;                       \
		__io_wait_event(wq_head, condition); \
	} while (0)

#define wait_event_freezable(wq_head, condition) wait_event_interruptible(wq_head, condition)

#define __wait_event_timeout(wq_head, condition, timeout)                                         \
	___wait_event(wq_head, ___wait_cond_timeout(condition), TASK_UNINTERRUPTIBLE, 0, timeout, \
		      __ret = schedule_timeout(__ret))

#define wait_event_timeout(wq_head, condition, timeout)                            \
	({                                                                         \
		long __ret = timeout;                                              \
		might_sleep();                                                     \
		if (!___wait_cond_timeout(condition))                              \
			__ret = __wait_event_timeout(wq_head, condition, timeout); \
		__ret;                                                             \
	})

#define wait_event_freezable_timeout(wq_head, condition, timeout) \
	wait_event_interruptible_timeout(wq_head, condition, timeout)

#define __wait_event_exclusive_cmd(wq_head, condition, cmd1, cmd2) \
	(void)___wait_event(wq_head, condition, TASK_UNINTERRUPTIBLE, 1, 0, cmd1; schedule(); cmd2)

#define wait_event_exclusive_cmd(wq_head, condition, cmd1, cmd2)            \
	do {                                                                \
		if (condition)                                              \
			break;                                              \
		__wait_event_exclusive_cmd(wq_head, condition, cmd1, cmd2); \
	} while (0)

#define __wait_event_cmd(wq_head, condition, cmd1, cmd2) \
	(void)___wait_event(wq_head, condition, TASK_UNINTERRUPTIBLE, 0, 0, cmd1; schedule(); cmd2)

#define wait_event_cmd(wq_head, condition, cmd1, cmd2)            \
	do {                                                      \
		if (condition)                                    \
			break;                                    \
		__wait_event_cmd(wq_head, condition, cmd1, cmd2); \
	} while (0)

#define __wait_event_interruptible(wq_head, condition) \
	___wait_event(wq_head, condition, TASK_INTERRUPTIBLE, 0, 0, schedule())

#define wait_event_interruptible(wq_head, condition)                            \
	({                                                                      \
		int __ret = 0;                                                  \
		might_sleep();                                                  \
		if (!(condition))                                               \
			__ret = __wait_event_interruptible(wq_head, condition); \
		__ret;                                                          \
	})

#define __wait_event_interruptible_timeout(wq_head, condition, timeout)                         \
	___wait_event(wq_head, ___wait_cond_timeout(condition), TASK_INTERRUPTIBLE, 0, timeout, \
		      __ret = schedule_timeout(__ret))

#define wait_event_interruptible_timeout(wq_head, condition, timeout)                            \
	({                                                                                       \
		long __ret = timeout;                                                            \
		might_sleep();                                                                   \
		if (!___wait_cond_timeout(condition))                                            \
			__ret = __wait_event_interruptible_timeout(wq_head, condition, timeout); \
		__ret;                                                                           \
	})

/*
 * hrtimer-bounded waits: need <uk/linux/hrtimer.h> (struct hrtimer_sleeper)
 * at the point of use. Return 0, -ETIME on timeout, or -ERESTARTSYS.
 */
#define __wait_event_hrtimeout(wq_head, condition, timeout, state)                       \
	({                                                                               \
		int __ret = 0;                                                           \
		struct hrtimer_sleeper __t;                                              \
                                                                                         \
		hrtimer_setup_sleeper_on_stack(&__t, CLOCK_MONOTONIC, HRTIMER_MODE_REL); \
		if ((timeout) != KTIME_MAX) {                                            \
			hrtimer_set_expires_range_ns(&__t.timer, timeout,                \
						     get_current()->timer_slack_ns);     \
			hrtimer_sleeper_start_expires(&__t, HRTIMER_MODE_REL);           \
		}                                                                        \
                                                                                         \
		__ret = ___wait_event(                                                   \
			wq_head, condition, state, 0, 0, if (!READ_ONCE(__t.task)) {     \
				__ret = -ETIME;                                          \
				break;                                                   \
			} schedule());                                                   \
                                                                                         \
		hrtimer_cancel(&__t.timer);                                              \
		destroy_hrtimer_on_stack(&__t.timer);                                    \
		__ret;                                                                   \
	})

#define wait_event_hrtimeout(wq_head, condition, timeout)                           \
	({                                                                          \
		int __ret = 0;                                                      \
		might_sleep();                                                      \
		if (!(condition))                                                   \
			__ret = __wait_event_hrtimeout(wq_head, condition, timeout, \
						       TASK_UNINTERRUPTIBLE);       \
		__ret;                                                              \
	})

#define wait_event_interruptible_hrtimeout(wq, condition, timeout)             \
	({                                                                     \
		long __ret = 0;                                                \
		might_sleep();                                                 \
		if (!(condition))                                              \
			__ret = __wait_event_hrtimeout(wq, condition, timeout, \
						       TASK_INTERRUPTIBLE);    \
		__ret;                                                         \
	})

#define __wait_event_interruptible_exclusive(wq, condition) \
	___wait_event(wq, condition, TASK_INTERRUPTIBLE, 1, 0, schedule())

#define wait_event_interruptible_exclusive(wq, condition)                            \
	({                                                                           \
		int __ret = 0;                                                       \
		might_sleep();                                                       \
		if (!(condition))                                                    \
			__ret = __wait_event_interruptible_exclusive(wq, condition); \
		__ret;                                                               \
	})

#define __wait_event_killable_exclusive(wq, condition) \
	___wait_event(wq, condition, TASK_KILLABLE, 1, 0, schedule())

#define wait_event_killable_exclusive(wq, condition)                            \
	({                                                                      \
		int __ret = 0;                                                  \
		might_sleep();                                                  \
		if (!(condition))                                               \
			__ret = __wait_event_killable_exclusive(wq, condition); \
		__ret;                                                          \
	})

#define __wait_event_killable(wq, condition) \
	___wait_event(wq, condition, TASK_KILLABLE, 0, 0, schedule())

#define wait_event_killable(wq_head, condition)                            \
	({                                                                 \
		int __ret = 0;                                             \
		might_sleep();                                             \
		if (!(condition))                                          \
			__ret = __wait_event_killable(wq_head, condition); \
		__ret;                                                     \
	})

#define __wait_event_killable_timeout(wq_head, condition, timeout)                         \
	___wait_event(wq_head, ___wait_cond_timeout(condition), TASK_KILLABLE, 0, timeout, \
		      __ret = schedule_timeout(__ret))

#define wait_event_killable_timeout(wq_head, condition, timeout)                            \
	({                                                                                  \
		long __ret = timeout;                                                       \
		might_sleep();                                                              \
		if (!___wait_cond_timeout(condition))                                       \
			__ret = __wait_event_killable_timeout(wq_head, condition, timeout); \
		__ret;                                                                      \
	})

#define __wait_event_idle(wq_head, condition) \
	(void)___wait_event(wq_head, condition, TASK_IDLE, 0, 0, schedule())

#define wait_event_idle(wq_head, condition)                    \
	do {                                                   \
		might_sleep();                                 \
		if (!(condition))                              \
			__wait_event_idle(wq_head, condition); \
	} while (0)

#define __wait_event_idle_exclusive(wq_head, condition) \
	(void)___wait_event(wq_head, condition, TASK_IDLE, 1, 0, schedule())

#define wait_event_idle_exclusive(wq_head, condition)                    \
	do {                                                             \
		might_sleep();                                           \
		if (!(condition))                                        \
			__wait_event_idle_exclusive(wq_head, condition); \
	} while (0)

#define __wait_event_idle_timeout(wq_head, condition, timeout)                         \
	___wait_event(wq_head, ___wait_cond_timeout(condition), TASK_IDLE, 0, timeout, \
		      __ret = schedule_timeout(__ret))

#define wait_event_idle_timeout(wq_head, condition, timeout)                            \
	({                                                                              \
		long __ret = timeout;                                                   \
		might_sleep();                                                          \
		if (!___wait_cond_timeout(condition))                                   \
			__ret = __wait_event_idle_timeout(wq_head, condition, timeout); \
		__ret;                                                                  \
	})

/* Sleep with wq_head->lock (a spinlock_t taken with _irq) held around the test. */
#define __wait_event_lock_irq(wq_head, condition, lock, cmd)                \
	(void)___wait_event(wq_head, condition, TASK_UNINTERRUPTIBLE, 0, 0, \
			    spin_unlock_irq(&lock);                         \
			    cmd; schedule(); spin_lock_irq(&lock))

#define wait_event_lock_irq_cmd(wq_head, condition, lock, cmd)        \
	do {                                                          \
		if (condition)                                        \
			break;                                        \
		__wait_event_lock_irq(wq_head, condition, lock, cmd); \
	} while (0)

#define wait_event_lock_irq(wq_head, condition, lock)              \
	do {                                                       \
		if (condition)                                     \
			break;                                     \
		__wait_event_lock_irq(wq_head, condition, lock, ); \
	} while (0)

#define __wait_event_interruptible_lock_irq(wq_head, condition, lock, cmd)                       \
	___wait_event(wq_head, condition, TASK_INTERRUPTIBLE, 0, 0, spin_unlock_irq(&lock); cmd; \
		      schedule(); spin_lock_irq(&lock))

#define wait_event_interruptible_lock_irq(wq_head, condition, lock)                              \
	({                                                                                       \
		int __ret = 0;                                                                   \
		if (!(condition))                                                                \
			__ret = __wait_event_interruptible_lock_irq(wq_head, condition, lock, ); \
		__ret;                                                                           \
	})

#define __wait_event_lock_irq_timeout(wq_head, condition, lock, timeout, state)    \
	___wait_event(wq_head, ___wait_cond_timeout(condition), state, 0, timeout, \
		      spin_unlock_irq(&lock);                                      \
		      __ret = schedule_timeout(__ret); spin_lock_irq(&lock))

#define wait_event_lock_irq_timeout(wq_head, condition, lock, timeout)                           \
	({                                                                                       \
		long __ret = timeout;                                                            \
		if (!___wait_cond_timeout(condition))                                            \
			__ret = __wait_event_lock_irq_timeout(wq_head, condition, lock, timeout, \
							      TASK_UNINTERRUPTIBLE);             \
		__ret;                                                                           \
	})

#define wait_event_interruptible_lock_irq_timeout(wq_head, condition, lock, timeout)             \
	({                                                                                       \
		long __ret = timeout;                                                            \
		if (!___wait_cond_timeout(condition))                                            \
			__ret = __wait_event_lock_irq_timeout(wq_head, condition, lock, timeout, \
							      TASK_INTERRUPTIBLE);               \
		__ret;                                                                           \
	})

#endif /* UK_LINUX_WAIT_H */
