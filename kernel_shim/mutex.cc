// SPDX-License-Identifier: GPL-2.0-only
// kernel/locking/mutex.c: the interruptible forms.
#include <uk/linux/mutex.h>
#include <uk/linux/sched/signal.h>
#include <uk/shim/futex.h>

/* Sleep for the lock, but give up with -EINTR once a signal is pending. */
static int mutex_lock_signal(struct mutex *m, bool fatal_only)
{
	struct timespec slice = { 0, 1000000 }; /* re-check signals every 1 ms */

	might_sleep();
	while (!mutex_trylock(m)) {
		if (fatal_only ? fatal_signal_pending(current) : signal_pending(current))
			return -EINTR;
		uint32_t w = m->word.load(std::memory_order_relaxed);
		if (w == 0)
			continue;
		if (w == 1 && !m->word.compare_exchange_weak(w, 2, std::memory_order_relaxed))
			continue;
		uk::futex_wait(&m->word, 2, &slice);
		/* the lock word stays 2 while sleepers may exist */
		uint32_t z = 0;
		if (m->word.compare_exchange_strong(z, 2, std::memory_order_acquire,
						    std::memory_order_relaxed)) {
			m->owner.store(uk::lock_owner_self(), std::memory_order_relaxed);
			__uk_explore_lock(m, UK_LOCK_ACQUIRE);
			return 0;
		}
	}
	return 0;
}

int mutex_lock_interruptible(struct mutex *m)
{
	return mutex_lock_signal(m, false);
}

int mutex_lock_killable(struct mutex *m)
{
	return mutex_lock_signal(m, true);
}
