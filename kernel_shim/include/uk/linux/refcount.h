/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * refcount_t (include/linux/refcount.h): an atomic_t reference count with the
 * kernel's ordering. A decrement releases the caller's accesses, and the one
 * that reaches zero also acquires everybody else's before the object is
 * freed. Misuse (an increment from zero, a decrement below zero) WARNs once
 * and leaves the count saturated, as the checked kernel build does.
 */
#ifndef UK_LINUX_REFCOUNT_H
#define UK_LINUX_REFCOUNT_H

#include <limits.h>

#include <uk/linux/atomic.h>
#include <uk/linux/compiler.h>
#include <uk/linux/printk.h>

typedef struct refcount_struct {
	atomic_t refs;
} refcount_t;

/* clang-format off */
#define REFCOUNT_INIT(n) { .refs = ATOMIC_INIT(n) }
/* clang-format on */
#define REFCOUNT_SATURATED (INT_MIN / 2)

static inline void refcount_set(refcount_t *r, int n)
{
	atomic_set(&r->refs, n);
}

static inline unsigned int refcount_read(const refcount_t *r)
{
	return atomic_read(&r->refs);
}

static inline void __refcount_saturate(refcount_t *r, const char *what)
{
	atomic_set(&r->refs, REFCOUNT_SATURATED);
	WARN_ONCE(1, "refcount_t: %s\n", what);
}

static inline bool refcount_inc_not_zero(refcount_t *r)
{
	int old = atomic_read(&r->refs);

	do {
		if (!old)
			break;
	} while (!atomic_try_cmpxchg_relaxed(&r->refs, &old, old + 1));

	if (unlikely(old < 0 || old == INT_MAX))
		__refcount_saturate(r, "saturated; leaking memory");
	return old;
}

static inline void refcount_inc(refcount_t *r)
{
	int old = atomic_fetch_add_relaxed(1, &r->refs);

	if (unlikely(!old))
		__refcount_saturate(r, "addition on 0; use-after-free");
	else if (unlikely(old < 0 || old == INT_MAX))
		__refcount_saturate(r, "saturated; leaking memory");
}

static inline __must_check bool refcount_dec_and_test(refcount_t *r)
{
	/*
	 * The kernel releases, then fences with acquire when it took the
	 * count to zero. ThreadSanitizer does not see fences, so the one
	 * atomic here is acquire and release at once (the same lock xadd
	 * on x86).
	 */
	int old = atomic_fetch_sub(1, &r->refs);

	if (old == 1)
		return true;
	if (unlikely(old <= 0))
		__refcount_saturate(r, "underflow; use-after-free");
	return false;
}

static inline void refcount_dec(refcount_t *r)
{
	if (unlikely(atomic_fetch_sub_release(1, &r->refs) <= 1))
		__refcount_saturate(r, "decrement hit 0; leaking memory");
}

#endif /* UK_LINUX_REFCOUNT_H */
