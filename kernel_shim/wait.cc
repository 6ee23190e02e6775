// SPDX-License-Identifier: GPL-2.0-only
//
// kernel/sched/wait.c: wait-queue heads, entries and the wake-up walk.
//
// Upstream: kernel/sched/wait.c @ v6.12
#include <sys/epoll.h>

#include <uk/linux/wait.h>

/* include/uapi/asm-generic/poll.h's: the queue is being freed. */
#ifndef POLLFREE
#define POLLFREE ((__poll_t)0x4000)
#endif

void __init_waitqueue_head(struct wait_queue_head *wq_head, const char *name,
			   struct lock_class_key *key)
{
	spin_lock_init(&wq_head->lock);
	lockdep_set_class_and_name(&wq_head->lock, key, name);
	INIT_LIST_HEAD(&wq_head->head);
}

void add_wait_queue(struct wait_queue_head *wq_head, struct wait_queue_entry *wq_entry)
{
	unsigned long flags;

	wq_entry->flags &= ~WQ_FLAG_EXCLUSIVE;
	spin_lock_irqsave(&wq_head->lock, flags);
	__add_wait_queue(wq_head, wq_entry);
	spin_unlock_irqrestore(&wq_head->lock, flags);
}

void add_wait_queue_exclusive(struct wait_queue_head *wq_head, struct wait_queue_entry *wq_entry)
{
	unsigned long flags;

	wq_entry->flags |= WQ_FLAG_EXCLUSIVE;
	spin_lock_irqsave(&wq_head->lock, flags);
	__add_wait_queue_entry_tail(wq_head, wq_entry);
	spin_unlock_irqrestore(&wq_head->lock, flags);
}

void add_wait_queue_priority(struct wait_queue_head *wq_head, struct wait_queue_entry *wq_entry)
{
	unsigned long flags;

	wq_entry->flags |= WQ_FLAG_EXCLUSIVE | WQ_FLAG_PRIORITY;
	spin_lock_irqsave(&wq_head->lock, flags);
	__add_wait_queue(wq_head, wq_entry);
	spin_unlock_irqrestore(&wq_head->lock, flags);
}

void remove_wait_queue(struct wait_queue_head *wq_head, struct wait_queue_entry *wq_entry)
{
	unsigned long flags;

	spin_lock_irqsave(&wq_head->lock, flags);
	__remove_wait_queue(wq_head, wq_entry);
	spin_unlock_irqrestore(&wq_head->lock, flags);
}

/*
 * Walk the queue calling each entry's wake function. Non-exclusive entries
 * are all woken; the walk stops once @nr_exclusive exclusive entries said
 * yes (0 or less: no limit). A negative return from a wake function stops
 * the walk. Returns what is left of @nr_exclusive.
 */
static int __wake_up_common(struct wait_queue_head *wq_head, unsigned int mode, int nr_exclusive,
			    int wake_flags, void *key)
{
	wait_queue_entry_t *curr, *next;

	lockdep_assert_held(&wq_head->lock);

	curr = list_first_entry(&wq_head->head, wait_queue_entry_t, entry);
	for (; &curr->entry != &wq_head->head; curr = next) {
		unsigned flags = curr->flags;
		int ret;

		/* the wake function may unlink (and free) curr: read next first */
		next = list_entry(curr->entry.next, wait_queue_entry_t, entry);

		ret = curr->func(curr, mode, wake_flags, key);
		if (ret < 0)
			break;
		if (ret && (flags & WQ_FLAG_EXCLUSIVE) && !--nr_exclusive)
			break;
	}
	return nr_exclusive;
}

static int __wake_up_common_lock(struct wait_queue_head *wq_head, unsigned int mode,
				 int nr_exclusive, int wake_flags, void *key)
{
	unsigned long flags;
	int remaining;

	spin_lock_irqsave(&wq_head->lock, flags);
	remaining = __wake_up_common(wq_head, mode, nr_exclusive, wake_flags, key);
	spin_unlock_irqrestore(&wq_head->lock, flags);

	return nr_exclusive - remaining;
}

int __wake_up(struct wait_queue_head *wq_head, unsigned int mode, int nr_exclusive, void *key)
{
	return __wake_up_common_lock(wq_head, mode, nr_exclusive, 0, key);
}

void __wake_up_on_current_cpu(struct wait_queue_head *wq_head, unsigned int mode, void *key)
{
	__wake_up_common_lock(wq_head, mode, 1, WF_CURRENT_CPU, key);
}

void __wake_up_locked(struct wait_queue_head *wq_head, unsigned int mode, int nr)
{
	__wake_up_common(wq_head, mode, nr, 0, nullptr);
}

void __wake_up_locked_key(struct wait_queue_head *wq_head, unsigned int mode, void *key)
{
	__wake_up_common(wq_head, mode, 1, 0, key);
}

void __wake_up_sync_key(struct wait_queue_head *wq_head, unsigned int mode, void *key)
{
	if (unlikely(!wq_head))
		return;
	__wake_up_common_lock(wq_head, mode, 1, WF_SYNC, key);
}

void __wake_up_locked_sync_key(struct wait_queue_head *wq_head, unsigned int mode, void *key)
{
	__wake_up_common(wq_head, mode, 1, WF_SYNC, key);
}

void __wake_up_sync(struct wait_queue_head *wq_head, unsigned int mode)
{
	__wake_up_sync_key(wq_head, mode, nullptr);
}

/*
 * POLLFREE: tell every waiter the queue is going away. EPOLLHUP comes with
 * it so that a waiter that filters on its events (aio's poll) sees one of
 * them.
 */
void __wake_up_pollfree(struct wait_queue_head *wq_head)
{
	__wake_up(wq_head, TASK_NORMAL, 0, poll_to_key(EPOLLHUP | POLLFREE));
	WARN_ON_ONCE(waitqueue_active(wq_head));
}

/*
 * The sleeper's side. Queue the entry (once), then publish the sleeping
 * state with set_current_state()'s full barrier, all under the queue lock:
 * a waker that changes the condition and then takes the lock (or issues
 * wq_has_sleeper()'s barrier) either sees the entry or the sleeper sees the
 * new condition.
 */
void prepare_to_wait(struct wait_queue_head *wq_head, struct wait_queue_entry *wq_entry, int state)
{
	unsigned long flags;

	wq_entry->flags &= ~WQ_FLAG_EXCLUSIVE;
	spin_lock_irqsave(&wq_head->lock, flags);
	if (list_empty(&wq_entry->entry))
		__add_wait_queue(wq_head, wq_entry);
	set_current_state(state);
	spin_unlock_irqrestore(&wq_head->lock, flags);
}

/* Returns true if the entry was the first one queued. */
bool prepare_to_wait_exclusive(struct wait_queue_head *wq_head, struct wait_queue_entry *wq_entry,
			       int state)
{
	unsigned long flags;
	bool was_empty = false;

	wq_entry->flags |= WQ_FLAG_EXCLUSIVE;
	spin_lock_irqsave(&wq_head->lock, flags);
	if (list_empty(&wq_entry->entry)) {
		was_empty = list_empty(&wq_head->head);
		__add_wait_queue_entry_tail(wq_head, wq_entry);
	}
	set_current_state(state);
	spin_unlock_irqrestore(&wq_head->lock, flags);
	return was_empty;
}

void init_wait_entry(struct wait_queue_entry *wq_entry, int flags)
{
	wq_entry->flags = flags;
	wq_entry->private_ = current;
	wq_entry->func = autoremove_wake_function;
	INIT_LIST_HEAD(&wq_entry->entry);
}

long prepare_to_wait_event(struct wait_queue_head *wq_head, struct wait_queue_entry *wq_entry,
			   int state)
{
	unsigned long flags;
	long ret = 0;

	spin_lock_irqsave(&wq_head->lock, flags);
	if (signal_pending_state(state, current)) {
		/*
		 * Leave the queue now: the caller returns without finish_wait()
		 * and must not eat a wake-up meant for somebody else. A wake-up
		 * that already took this entry off the queue was ours, and the
		 * condition may now be true; the caller re-checks it.
		 */
		list_del_init(&wq_entry->entry);
		ret = -ERESTARTSYS;
	} else {
		if (list_empty(&wq_entry->entry)) {
			if (wq_entry->flags & WQ_FLAG_EXCLUSIVE)
				__add_wait_queue_entry_tail(wq_head, wq_entry);
			else
				__add_wait_queue(wq_head, wq_entry);
		}
		set_current_state(state);
	}
	spin_unlock_irqrestore(&wq_head->lock, flags);

	return ret;
}

/* Old-style interruptible wait with the queue lock held (irqs off or on). */
int do_wait_intr(wait_queue_head_t *wq, wait_queue_entry_t *wait)
{
	if (likely(list_empty(&wait->entry)))
		__add_wait_queue_entry_tail(wq, wait);

	set_current_state(TASK_INTERRUPTIBLE);
	if (signal_pending(current))
		return -ERESTARTSYS;

	spin_unlock(&wq->lock);
	schedule();
	spin_lock(&wq->lock);

	return 0;
}

int do_wait_intr_irq(wait_queue_head_t *wq, wait_queue_entry_t *wait)
{
	if (likely(list_empty(&wait->entry)))
		__add_wait_queue_entry_tail(wq, wait);

	set_current_state(TASK_INTERRUPTIBLE);
	if (signal_pending(current))
		return -ERESTARTSYS;

	spin_unlock_irq(&wq->lock);
	schedule();
	spin_lock_irq(&wq->lock);

	return 0;
}

/*
 * Back to TASK_RUNNING and off the queue. The unlocked emptiness test is
 * safe only with the careful pair: autoremove_wake_function()'s
 * list_del_init_careful() publishes the removal with a release store that
 * list_empty_careful()'s acquire load pairs with; after it the waker no
 * longer touches the entry, so it may go out of scope.
 */
void finish_wait(struct wait_queue_head *wq_head, struct wait_queue_entry *wq_entry)
{
	unsigned long flags;

	__set_current_state(TASK_RUNNING);
	if (!list_empty_careful(&wq_entry->entry)) {
		spin_lock_irqsave(&wq_head->lock, flags);
		list_del_init(&wq_entry->entry);
		spin_unlock_irqrestore(&wq_head->lock, flags);
	}
}

int default_wake_function(struct wait_queue_entry *curr, unsigned mode, int wake_flags, void *key)
{
	(void)key;
	return try_to_wake_up(static_cast<struct task_struct *>(curr->private_), mode, wake_flags);
}

int autoremove_wake_function(struct wait_queue_entry *wq_entry, unsigned mode, int sync, void *key)
{
	int ret = default_wake_function(wq_entry, mode, sync, key);

	if (ret)
		list_del_init_careful(&wq_entry->entry);

	return ret;
}

static inline bool is_kthread_should_stop(void)
{
	return false;
}

/*
 * wait_woken()/woken_wake_function(): the waker marks the entry
 * WQ_FLAG_WOKEN, so a wake-up between the condition test and the sleep is
 * remembered in the entry rather than in the task state.
 *
 *   waiter                            waker
 *   if (cond) break;                  cond = true;
 *   set_current_state(INTERRUPTIBLE); smp_mb()  (in woken_wake_function)
 *   if (!(flags & WOKEN)) schedule(); flags |= WOKEN; try_to_wake_up()
 *   smp_store_mb(flags, ~WOKEN)
 */
long wait_woken(struct wait_queue_entry *wq_entry, unsigned mode, long timeout)
{
	/* The full barrier of set_current_state() orders the state store
	 * before the WOKEN test; pairs with the barrier in woken_wake_function(). */
	set_current_state(mode);
	if (!(READ_ONCE(wq_entry->flags) & WQ_FLAG_WOKEN) && !is_kthread_should_stop())
		timeout = schedule_timeout(timeout);
	__set_current_state(TASK_RUNNING);

	/* Clear WOKEN before the caller re-tests its condition; pairs with
	 * the barrier in woken_wake_function(). */
	smp_store_mb(wq_entry->flags, wq_entry->flags & ~WQ_FLAG_WOKEN);

	return timeout;
}

int woken_wake_function(struct wait_queue_entry *wq_entry, unsigned mode, int sync, void *key)
{
	/* Orders the waker's condition store before the WOKEN store; pairs
	 * with smp_store_mb() in wait_woken(). */
	smp_mb();
	WRITE_ONCE(wq_entry->flags, wq_entry->flags | WQ_FLAG_WOKEN);

	return default_wake_function(wq_entry, mode, sync, key);
}
