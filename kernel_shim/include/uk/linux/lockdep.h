/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * lockdep_assert_held() and friends: real checks of who holds the lock
 * (no lock-order validation).
 */
#ifndef UK_LINUX_LOCKDEP_H
#define UK_LINUX_LOCKDEP_H

#include <uk/linux/printk.h>

struct raw_spinlock;
struct spinlock;
struct mutex;

namespace uk
{
bool lock_is_held(const struct raw_spinlock *l);
bool lock_is_held(const struct spinlock *l);
bool lock_is_held(const struct mutex *l);
} // namespace uk

#define lockdep_is_held(l) (::uk::lock_is_held(l))
#define lockdep_assert_held(l) WARN_ON(!lockdep_is_held(l))
#define lockdep_assert_not_held(l) WARN_ON(lockdep_is_held(l))
#define lockdep_assert_held_once(l) WARN_ON_ONCE(!lockdep_is_held(l))
#define lockdep_assert_held_write(l) lockdep_assert_held(l)
#define lockdep_assert_held_read(l) lockdep_assert_held(l)
#define lockdep_set_class(l, k) \
	do {                    \
	} while (0)
#define lockdep_set_class_and_name(l, k, n) \
	do {                                \
	} while (0)
#define lockdep_set_novalidate_class(l) \
	do {                            \
	} while (0)
#define lockdep_assert_preemption_disabled() WARN_ON_ONCE(!in_atomic())
#define lockdep_assert_in_softirq() WARN_ON_ONCE(!in_softirq())
/* PREEMPT_RT's check that hard interrupt context is threaded: no PREEMPT_RT. */
#define lockdep_assert_RT_in_threaded_ctx() \
	do {                                \
	} while (0)
#define might_lock(l) \
	do {          \
	} while (0)
struct lock_class_key {
};

/* Lock-order validation is not modelled: a map is empty and acquiring it does nothing. */
struct lockdep_map {
};
#define rwsem_acquire(l, s, t, i) \
	do {                      \
		(void)(l);        \
	} while (0)
#define rwsem_acquire_read(l, s, t, i) rwsem_acquire(l, s, t, i)
#define rwsem_release(l, i) \
	do {                \
		(void)(l);  \
	} while (0)
#define _RET_IP_ ((unsigned long)__builtin_return_address(0))

#endif /* UK_LINUX_LOCKDEP_H */
