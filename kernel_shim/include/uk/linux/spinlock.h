/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * spinlock_t, raw_spinlock_t and rwlock_t (include/linux/spinlock.h).
 *
 * spin_lock() disables preemption, so the holder owns its virtual CPU; the
 * _irq/_irqsave forms also keep that CPU's interrupt work out and the _bh
 * forms its softirqs, exactly as in the kernel. lockdep_assert_held() checks
 * that the caller holds the lock.
 */
#ifndef UK_LINUX_SPINLOCK_H
#define UK_LINUX_SPINLOCK_H

#include <atomic>

#include <uk/linux/bottom_half.h>
#include <uk/linux/cleanup.h>
#include <uk/linux/irqflags.h>
#include <uk/linux/preempt.h>
#include <uk/linux/printk.h>
#include <uk/shim/lockword.h>

namespace uk
{
/* A stable per-thread identity for lock owners. */
static __always_inline const void *lock_owner_self(void)
{
	return &tls_cpu;
}
} // namespace uk

typedef struct raw_spinlock {
	std::atomic<uint32_t> word{ 0 };
	std::atomic<const void *> owner{ nullptr };
} raw_spinlock_t;

typedef struct spinlock {
	struct raw_spinlock rlock;
} spinlock_t;

/* clang-format off */
#define __RAW_SPIN_LOCK_UNLOCKED(name) {}
#define __SPIN_LOCK_UNLOCKED(name) {}
/* clang-format on */
#define DEFINE_RAW_SPINLOCK(x) raw_spinlock_t x
#define DEFINE_SPINLOCK(x) spinlock_t x

static inline void raw_spin_lock_init(raw_spinlock_t *lock)
{
	lock->word.store(0, std::memory_order_relaxed);
	lock->owner.store(nullptr, std::memory_order_relaxed);
}

static inline void spin_lock_init(spinlock_t *lock)
{
	raw_spin_lock_init(&lock->rlock);
}

static __always_inline void do_raw_spin_lock(raw_spinlock_t *lock)
{
	::uk::sched_point("spin_lock");
	::uk::lockword_lock(&lock->word, 1000);
	lock->owner.store(::uk::lock_owner_self(), std::memory_order_relaxed);
	__uk_explore_lock(lock, UK_LOCK_ACQUIRE);
}

static __always_inline bool do_raw_spin_trylock(raw_spinlock_t *lock)
{
	if (!::uk::lockword_trylock(&lock->word))
		return false;
	lock->owner.store(::uk::lock_owner_self(), std::memory_order_relaxed);
	__uk_explore_lock(lock, UK_LOCK_TRY);
	return true;
}

static __always_inline void do_raw_spin_unlock(raw_spinlock_t *lock)
{
	__uk_explore_lock(lock, UK_LOCK_RELEASE);
	lock->owner.store(nullptr, std::memory_order_relaxed);
	::uk::lockword_unlock(&lock->word);
}

static __always_inline void raw_spin_lock(raw_spinlock_t *lock)
{
	preempt_disable();
	do_raw_spin_lock(lock);
}

static __always_inline void raw_spin_unlock(raw_spinlock_t *lock)
{
	do_raw_spin_unlock(lock);
	preempt_enable();
}

static __always_inline int raw_spin_trylock(raw_spinlock_t *lock)
{
	preempt_disable();
	if (do_raw_spin_trylock(lock))
		return 1;
	preempt_enable();
	return 0;
}

static __always_inline void raw_spin_lock_irq(raw_spinlock_t *lock)
{
	local_irq_disable();
	preempt_disable();
	do_raw_spin_lock(lock);
}

static __always_inline void raw_spin_unlock_irq(raw_spinlock_t *lock)
{
	do_raw_spin_unlock(lock);
	__uk_preempt_count_dec();
	local_irq_enable();
	__uk_preempt_release();
}

static __always_inline void raw_spin_lock_bh(raw_spinlock_t *lock)
{
	local_bh_disable();
	preempt_disable();
	do_raw_spin_lock(lock);
}

static __always_inline void raw_spin_unlock_bh(raw_spinlock_t *lock)
{
	do_raw_spin_unlock(lock);
	preempt_enable();
	local_bh_enable();
}

static __always_inline bool raw_spin_is_locked(raw_spinlock_t *lock)
{
	return lock->word.load(std::memory_order_relaxed) != 0;
}

#define raw_spin_lock_irqsave(lock, flags) \
	do {                               \
		local_irq_save(flags);     \
		preempt_disable();         \
		do_raw_spin_lock(lock);    \
	} while (0)

#define raw_spin_unlock_irqrestore(lock, flags) \
	do {                                    \
		do_raw_spin_unlock(lock);       \
		__uk_preempt_count_dec();       \
		local_irq_restore(flags);       \
		__uk_preempt_release();         \
	} while (0)

#define raw_spin_trylock_irqsave(lock, flags)     \
	({                                        \
		local_irq_save(flags);            \
		raw_spin_trylock(lock) ? 1 : ({   \
			local_irq_restore(flags); \
			0;                        \
		});                               \
	})

#define spin_lock(l) raw_spin_lock(&(l)->rlock)
#define spin_unlock(l) raw_spin_unlock(&(l)->rlock)
#define spin_trylock(l) raw_spin_trylock(&(l)->rlock)
#define spin_lock_irq(l) raw_spin_lock_irq(&(l)->rlock)
#define spin_unlock_irq(l) raw_spin_unlock_irq(&(l)->rlock)
#define spin_lock_bh(l) raw_spin_lock_bh(&(l)->rlock)
#define spin_unlock_bh(l) raw_spin_unlock_bh(&(l)->rlock)
#define spin_lock_irqsave(l, flags) raw_spin_lock_irqsave(&(l)->rlock, flags)
#define spin_unlock_irqrestore(l, flags) raw_spin_unlock_irqrestore(&(l)->rlock, flags)
#define spin_trylock_irqsave(l, flags) raw_spin_trylock_irqsave(&(l)->rlock, flags)
#define spin_is_locked(l) raw_spin_is_locked(&(l)->rlock)
#define spin_lock_nested(l, subclass) spin_lock(l)
#define spin_lock_irqsave_nested(l, flags, subclass) spin_lock_irqsave(l, flags)
#define assert_spin_locked(l) BUG_ON(!spin_is_locked(l))
#define assert_raw_spin_locked(l) BUG_ON(!raw_spin_is_locked(l))

static inline int spin_trylock_bh(spinlock_t *l)
{
	local_bh_disable();
	if (raw_spin_trylock(&l->rlock))
		return 1;
	local_bh_enable();
	return 0;
}

/* rwlock_t: many readers at once or one writer alone; writers are not starved. */
typedef struct rwlock {
	std::atomic<uint32_t> cnts{ 0 }; /* readers << 1 | writer bit */
} rwlock_t;

#define DEFINE_RWLOCK(x) rwlock_t x

namespace uk
{
void rwlock_read_slow(rwlock_t *l);
void rwlock_write_slow(rwlock_t *l);
} // namespace uk

#define __UK_RW_WRITER 1u
#define __UK_RW_WAITING 2u /* a writer waits: new readers hold back */
#define __UK_RW_READER 4u

static inline void rwlock_init(rwlock_t *l)
{
	l->cnts.store(0, std::memory_order_relaxed);
}

static __always_inline void do_read_lock(rwlock_t *l)
{
	uint32_t c = l->cnts.fetch_add(__UK_RW_READER, std::memory_order_acquire);

	if (unlikely(c & (__UK_RW_WRITER | __UK_RW_WAITING)))
		::uk::rwlock_read_slow(l);
}

static __always_inline void do_read_unlock(rwlock_t *l)
{
	l->cnts.fetch_sub(__UK_RW_READER, std::memory_order_release);
}

static __always_inline void do_write_lock(rwlock_t *l)
{
	uint32_t z = 0;

	if (unlikely(!l->cnts.compare_exchange_strong(z, __UK_RW_WRITER, std::memory_order_acquire,
						      std::memory_order_relaxed)))
		::uk::rwlock_write_slow(l);
	__uk_explore_lock(l, UK_LOCK_ACQUIRE);
}

static __always_inline void do_write_unlock(rwlock_t *l)
{
	__uk_explore_lock(l, UK_LOCK_RELEASE);
	l->cnts.fetch_and(~__UK_RW_WRITER, std::memory_order_release);
}

static __always_inline int do_read_trylock(rwlock_t *l)
{
	uint32_t c = l->cnts.load(std::memory_order_relaxed);

	while (!(c & (__UK_RW_WRITER | __UK_RW_WAITING)))
		if (l->cnts.compare_exchange_weak(c, c + __UK_RW_READER, std::memory_order_acquire,
						  std::memory_order_relaxed))
			return 1;
	return 0;
}

static __always_inline int do_write_trylock(rwlock_t *l)
{
	uint32_t z = 0;

	if (!l->cnts.compare_exchange_strong(z, __UK_RW_WRITER, std::memory_order_acquire,
					     std::memory_order_relaxed))
		return 0;
	__uk_explore_lock(l, UK_LOCK_TRY);
	return 1;
}

#define read_lock(l)               \
	do {                       \
		preempt_disable(); \
		do_read_lock(l);   \
	} while (0)
#define read_unlock(l)             \
	do {                       \
		do_read_unlock(l); \
		preempt_enable();  \
	} while (0)
#define write_lock(l)              \
	do {                       \
		preempt_disable(); \
		do_write_lock(l);  \
	} while (0)
#define write_unlock(l)             \
	do {                        \
		do_write_unlock(l); \
		preempt_enable();   \
	} while (0)
#define read_trylock(l)                     \
	({                                  \
		preempt_disable();          \
		do_read_trylock(l) ? 1 : ({ \
			preempt_enable();   \
			0;                  \
		});                         \
	})
#define write_trylock(l)                     \
	({                                   \
		preempt_disable();           \
		do_write_trylock(l) ? 1 : ({ \
			preempt_enable();    \
			0;                   \
		});                          \
	})
#define read_lock_irq(l)             \
	do {                         \
		local_irq_disable(); \
		read_lock(l);        \
	} while (0)
#define read_unlock_irq(l)          \
	do {                        \
		do_read_unlock(l);  \
		local_irq_enable(); \
		preempt_enable();   \
	} while (0)
#define write_lock_irq(l)            \
	do {                         \
		local_irq_disable(); \
		write_lock(l);       \
	} while (0)
#define write_unlock_irq(l)         \
	do {                        \
		do_write_unlock(l); \
		local_irq_enable(); \
		preempt_enable();   \
	} while (0)
#define read_lock_irqsave(l, f)    \
	do {                       \
		local_irq_save(f); \
		read_lock(l);      \
	} while (0)
#define read_unlock_irqrestore(l, f)  \
	do {                          \
		do_read_unlock(l);    \
		local_irq_restore(f); \
		preempt_enable();     \
	} while (0)
#define write_lock_irqsave(l, f)   \
	do {                       \
		local_irq_save(f); \
		write_lock(l);     \
	} while (0)
#define write_unlock_irqrestore(l, f) \
	do {                          \
		do_write_unlock(l);   \
		local_irq_restore(f); \
		preempt_enable();     \
	} while (0)
#define read_lock_bh(l)             \
	do {                        \
		local_bh_disable(); \
		read_lock(l);       \
	} while (0)
#define read_unlock_bh(l)          \
	do {                       \
		read_unlock(l);    \
		local_bh_enable(); \
	} while (0)
#define write_lock_bh(l)            \
	do {                        \
		local_bh_disable(); \
		write_lock(l);      \
	} while (0)
#define write_unlock_bh(l)         \
	do {                       \
		write_unlock(l);   \
		local_bh_enable(); \
	} while (0)

/* Lock guards: guard(spinlock_irqsave)(&lock), scoped_guard(spinlock, &lock). */
DEFINE_LOCK_GUARD_1(raw_spinlock, raw_spinlock_t, raw_spin_lock(_T->lock),
		    raw_spin_unlock(_T->lock))
DEFINE_LOCK_GUARD_1_COND(raw_spinlock, _try, raw_spin_trylock(_T->lock))

DEFINE_LOCK_GUARD_1(raw_spinlock_irq, raw_spinlock_t, raw_spin_lock_irq(_T->lock),
		    raw_spin_unlock_irq(_T->lock))

DEFINE_LOCK_GUARD_1(raw_spinlock_bh, raw_spinlock_t, raw_spin_lock_bh(_T->lock),
		    raw_spin_unlock_bh(_T->lock))

DEFINE_LOCK_GUARD_1(raw_spinlock_irqsave, raw_spinlock_t,
		    raw_spin_lock_irqsave(_T->lock, _T->flags),
		    raw_spin_unlock_irqrestore(_T->lock, _T->flags), unsigned long flags)
DEFINE_LOCK_GUARD_1_COND(raw_spinlock_irqsave, _try, raw_spin_trylock_irqsave(_T->lock, _T->flags))

DEFINE_LOCK_GUARD_1(spinlock, spinlock_t, spin_lock(_T->lock), spin_unlock(_T->lock))
DEFINE_LOCK_GUARD_1_COND(spinlock, _try, spin_trylock(_T->lock))

DEFINE_LOCK_GUARD_1(spinlock_irq, spinlock_t, spin_lock_irq(_T->lock), spin_unlock_irq(_T->lock))

DEFINE_LOCK_GUARD_1(spinlock_bh, spinlock_t, spin_lock_bh(_T->lock), spin_unlock_bh(_T->lock))
DEFINE_LOCK_GUARD_1_COND(spinlock_bh, _try, spin_trylock_bh(_T->lock))

DEFINE_LOCK_GUARD_1(spinlock_irqsave, spinlock_t, spin_lock_irqsave(_T->lock, _T->flags),
		    spin_unlock_irqrestore(_T->lock, _T->flags), unsigned long flags)
DEFINE_LOCK_GUARD_1_COND(spinlock_irqsave, _try, spin_trylock_irqsave(_T->lock, _T->flags))

DEFINE_LOCK_GUARD_1(read_lock, rwlock_t, read_lock(_T->lock), read_unlock(_T->lock))
DEFINE_LOCK_GUARD_1(read_lock_irq, rwlock_t, read_lock_irq(_T->lock), read_unlock_irq(_T->lock))
DEFINE_LOCK_GUARD_1(read_lock_irqsave, rwlock_t, read_lock_irqsave(_T->lock, _T->flags),
		    read_unlock_irqrestore(_T->lock, _T->flags), unsigned long flags)

DEFINE_LOCK_GUARD_1(write_lock, rwlock_t, write_lock(_T->lock), write_unlock(_T->lock))
DEFINE_LOCK_GUARD_1(write_lock_irq, rwlock_t, write_lock_irq(_T->lock), write_unlock_irq(_T->lock))
DEFINE_LOCK_GUARD_1(write_lock_irqsave, rwlock_t, write_lock_irqsave(_T->lock, _T->flags),
		    write_unlock_irqrestore(_T->lock, _T->flags), unsigned long flags)

#include <uk/linux/lockdep.h>

#endif /* UK_LINUX_SPINLOCK_H */
