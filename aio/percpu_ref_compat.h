/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * percpu_ref for aio: H2's <uk/linux/percpu-refcount.h> when it exists,
 * otherwise a minimal atomic-mode stand-in with the same API subset
 * (init/exit/get/put/tryget_live/kill), so aio builds on its own.
 */
#ifndef UK_AIO_PERCPU_REF_COMPAT_H
#define UK_AIO_PERCPU_REF_COMPAT_H

#if __has_include(<uk/linux/percpu-refcount.h>)
#include <uk/linux/percpu-refcount.h>
#define UK_AIO_HAVE_PERCPU_REF 1
#else
#include <uk/linux/atomic.h>
#include <uk/linux/gfp.h>
#include <uk/linux/printk.h>

struct percpu_ref;
typedef void(percpu_ref_func_t)(struct percpu_ref *);

#define PERCPU_REF_INIT_ATOMIC (1 << 0)
#define PERCPU_REF_INIT_DEAD (1 << 1)
#define PERCPU_REF_ALLOW_REINIT (1 << 2)

struct percpu_ref {
	atomic_long_t count;
	atomic_t dead;
	percpu_ref_func_t *release;
};

static inline int percpu_ref_init(struct percpu_ref *ref, percpu_ref_func_t *release,
				  unsigned int flags, gfp_t gfp)
{
	atomic_long_set(&ref->count, 1);
	atomic_set(&ref->dead, 0);
	ref->release = release;
	return 0;
}

static inline void percpu_ref_exit(struct percpu_ref *ref)
{
}

static inline void percpu_ref_get(struct percpu_ref *ref)
{
	atomic_long_inc(&ref->count);
}

static inline void percpu_ref_put(struct percpu_ref *ref)
{
	if (atomic_long_dec_return(&ref->count) == 0)
		ref->release(ref);
}

static inline bool percpu_ref_tryget_live(struct percpu_ref *ref)
{
	long c = atomic_long_read(&ref->count);

	if (atomic_read(&ref->dead))
		return false;
	do {
		if (c == 0)
			return false;
	} while (!__atomic_compare_exchange_n(&ref->count.counter, &c, c + 1, false,
					      __ATOMIC_SEQ_CST, __ATOMIC_RELAXED));
	return true;
}

static inline void percpu_ref_kill(struct percpu_ref *ref)
{
	WARN_ON(atomic_xchg(&ref->dead, 1));
	percpu_ref_put(ref);
}
#endif

#endif /* UK_AIO_PERCPU_REF_COMPAT_H */
