// SPDX-License-Identifier: GPL-2.0-only
//
// kernel/sched/completion.c over a wait_queue_head (the kernel's swait
// queue is the same idea with a raw lock and task-only entries): the queue
// lock guards ->done; waiters queue exclusively at the tail and are woken
// one per complete().
//
// Upstream: kernel/sched/completion.c @ v6.12
#include <uk/linux/completion.h>

static void complete_locked_wake(struct completion *x)
{
	unsigned long flags;

	spin_lock_irqsave(&x->wait.lock, flags);
	if (x->done != UINT_MAX)
		WRITE_ONCE(x->done, x->done + 1);
	__wake_up_locked(&x->wait, TASK_NORMAL, 1);
	spin_unlock_irqrestore(&x->wait.lock, flags);
}

void complete(struct completion *x)
{
	complete_locked_wake(x);
}

void complete_on_current_cpu(struct completion *x)
{
	complete_locked_wake(x);
}

void complete_all(struct completion *x)
{
	unsigned long flags;

	spin_lock_irqsave(&x->wait.lock, flags);
	WRITE_ONCE(x->done, UINT_MAX);
	__wake_up_locked(&x->wait, TASK_NORMAL, 0);
	spin_unlock_irqrestore(&x->wait.lock, flags);
}

/* Called with x->wait.lock held (irqs off); drops it around each sleep. */
static long do_wait_for_common(struct completion *x, long (*action)(long), long timeout, int state)
{
	if (!x->done) {
		DECLARE_WAITQUEUE(wait, get_current());

		INIT_LIST_HEAD(&wait.entry);
		__add_wait_queue_entry_tail_exclusive(&x->wait, &wait);
		do {
			if (signal_pending_state(state, get_current())) {
				timeout = -ERESTARTSYS;
				break;
			}
			/* ->done is re-read under the lock complete() takes, so a
			 * plain state store is enough here. */
			__set_current_state(state);
			spin_unlock_irq(&x->wait.lock);
			timeout = action(timeout);
			spin_lock_irq(&x->wait.lock);
		} while (!x->done && timeout);
		__remove_wait_queue(&x->wait, &wait);
		__set_current_state(TASK_RUNNING);
		if (!x->done)
			return timeout;
	}
	if (x->done != UINT_MAX)
		WRITE_ONCE(x->done, x->done - 1);
	return timeout ?: 1;
}

static long __wait_for_common(struct completion *x, long (*action)(long), long timeout, int state)
{
	might_sleep();
	spin_lock_irq(&x->wait.lock);
	timeout = do_wait_for_common(x, action, timeout, state);
	spin_unlock_irq(&x->wait.lock);
	return timeout;
}

static long __sched wait_for_common(struct completion *x, long timeout, int state)
{
	return __wait_for_common(x, schedule_timeout, timeout, state);
}

static long __sched wait_for_common_io(struct completion *x, long timeout, int state)
{
	return __wait_for_common(x, io_schedule_timeout, timeout, state);
}

void __sched wait_for_completion(struct completion *x)
{
	wait_for_common(x, MAX_SCHEDULE_TIMEOUT, TASK_UNINTERRUPTIBLE);
}

unsigned long __sched wait_for_completion_timeout(struct completion *x, unsigned long timeout)
{
	return wait_for_common(x, timeout, TASK_UNINTERRUPTIBLE);
}

void __sched wait_for_completion_io(struct completion *x)
{
	wait_for_common_io(x, MAX_SCHEDULE_TIMEOUT, TASK_UNINTERRUPTIBLE);
}

unsigned long __sched wait_for_completion_io_timeout(struct completion *x, unsigned long timeout)
{
	return wait_for_common_io(x, timeout, TASK_UNINTERRUPTIBLE);
}

int __sched wait_for_completion_interruptible(struct completion *x)
{
	long t = wait_for_common(x, MAX_SCHEDULE_TIMEOUT, TASK_INTERRUPTIBLE);

	if (t == -ERESTARTSYS)
		return t;
	return 0;
}

long __sched wait_for_completion_interruptible_timeout(struct completion *x, unsigned long timeout)
{
	return wait_for_common(x, timeout, TASK_INTERRUPTIBLE);
}

int __sched wait_for_completion_killable(struct completion *x)
{
	long t = wait_for_common(x, MAX_SCHEDULE_TIMEOUT, TASK_KILLABLE);

	if (t == -ERESTARTSYS)
		return t;
	return 0;
}

int __sched wait_for_completion_state(struct completion *x, unsigned int state)
{
	long t = wait_for_common(x, MAX_SCHEDULE_TIMEOUT, state);

	if (t == -ERESTARTSYS)
		return t;
	return 0;
}

long __sched wait_for_completion_killable_timeout(struct completion *x, unsigned long timeout)
{
	return wait_for_common(x, timeout, TASK_KILLABLE);
}

bool try_wait_for_completion(struct completion *x)
{
	unsigned long flags;
	bool ret = true;

	/* A lockless peek first, as the kernel does: no lock traffic when
	 * nothing is there. */
	if (!READ_ONCE(x->done))
		return false;

	spin_lock_irqsave(&x->wait.lock, flags);
	if (!x->done)
		ret = false;
	else if (x->done != UINT_MAX)
		WRITE_ONCE(x->done, x->done - 1);
	spin_unlock_irqrestore(&x->wait.lock, flags);
	return ret;
}

bool completion_done(struct completion *x)
{
	unsigned long flags;

	if (!READ_ONCE(x->done))
		return false;

	/* Wait for a complete() that may still hold the lock and be about to
	 * touch x, so the caller may free it after we return true. */
	spin_lock_irqsave(&x->wait.lock, flags);
	spin_unlock_irqrestore(&x->wait.lock, flags);
	return true;
}
