/* SPDX-License-Identifier: GPL-2.0-only */
/* struct mutex: a sleeping lock with an owner (include/linux/mutex.h). */
#ifndef UK_LINUX_MUTEX_H
#define UK_LINUX_MUTEX_H

#include <atomic>

#include <uk/linux/cleanup.h>
#include <uk/linux/kernel.h>
#include <uk/linux/lockdep.h>
#include <uk/linux/spinlock.h>

struct mutex {
	std::atomic<uint32_t> word{ 0 };
	std::atomic<const void *> owner{ nullptr };
};

#define DEFINE_MUTEX(m) struct mutex m

static inline void mutex_init(struct mutex *m)
{
	m->word.store(0, std::memory_order_relaxed);
	m->owner.store(nullptr, std::memory_order_relaxed);
}

static inline void mutex_destroy(struct mutex *m)
{
	WARN_ON(m->word.load(std::memory_order_relaxed) != 0);
}

static inline void mutex_lock(struct mutex *m)
{
	might_sleep();
	::uk::sched_point("mutex_lock");
	::uk::lockword_lock(&m->word, 100);
	m->owner.store(::uk::lock_owner_self(), std::memory_order_relaxed);
	__uk_explore_lock(m, UK_LOCK_ACQUIRE);
}

static inline int mutex_trylock(struct mutex *m)
{
	if (!::uk::lockword_trylock(&m->word))
		return 0;
	m->owner.store(::uk::lock_owner_self(), std::memory_order_relaxed);
	__uk_explore_lock(m, UK_LOCK_TRY);
	return 1;
}

static inline void mutex_unlock(struct mutex *m)
{
	WARN_ON(m->owner.load(std::memory_order_relaxed) != ::uk::lock_owner_self());
	__uk_explore_lock(m, UK_LOCK_RELEASE);
	m->owner.store(nullptr, std::memory_order_relaxed);
	::uk::lockword_unlock(&m->word);
}

static inline bool mutex_is_locked(struct mutex *m)
{
	return m->word.load(std::memory_order_relaxed) != 0;
}

/*
 * The interruptible and killable forms return -EINTR when the task has a
 * signal pending (see <uk/linux/sched/signal.h>) before it gets the lock.
 */
int mutex_lock_interruptible(struct mutex *m);
int mutex_lock_killable(struct mutex *m);
#define mutex_lock_nested(m, subclass) mutex_lock(m)
#define mutex_lock_io(m) mutex_lock(m)

DEFINE_GUARD(mutex, struct mutex *, mutex_lock(_T), mutex_unlock(_T))
DEFINE_GUARD_COND(mutex, _try, mutex_trylock(_T))
DEFINE_GUARD_COND(mutex, _intr, mutex_lock_interruptible(_T) == 0)

#endif /* UK_LINUX_MUTEX_H */
