/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Percpu reference counts (include/linux/percpu-refcount.h).
 *
 * A percpu_ref starts in percpu mode: get/put touch only the current CPU's
 * counter, and the shared atomic count carries PERCPU_COUNT_BIAS so it
 * cannot reach zero. Killing it (or switching to atomic mode) sets
 * __PERCPU_REF_ATOMIC in percpu_count_ptr; after an RCU grace period, when
 * no get/put can still be using the percpu counters, their sum is folded
 * into the atomic count and the bias removed, and from then on the last put
 * calls ->release(). The get/put fast paths are RCU read-side sections.
 *
 * Upstream: include/linux/percpu-refcount.h @ v6.12
 */
#ifndef UK_LINUX_PERCPU_REFCOUNT_H
#define UK_LINUX_PERCPU_REFCOUNT_H

#include <uk/linux/atomic.h>
#include <uk/linux/gfp.h>
#include <uk/linux/kernel.h>
#include <uk/linux/percpu.h>
#include <uk/linux/rcupdate.h>
#include <uk/linux/types.h>

struct percpu_ref;
typedef void(percpu_ref_func_t)(struct percpu_ref *);

/* State bits kept below the counter address in ->percpu_count_ptr. */
enum {
	__PERCPU_REF_ATOMIC = 1LU << 0, /* counts go to data->count */
	__PERCPU_REF_DEAD = 1LU << 1,	/* kill started (or finished) */
	__PERCPU_REF_ATOMIC_DEAD = __PERCPU_REF_ATOMIC | __PERCPU_REF_DEAD,

	__PERCPU_REF_FLAG_BITS = 2,
};

/* percpu_ref_init() flags */
enum {
	/* Start in atomic mode (sticky until percpu_ref_switch_to_percpu()). */
	PERCPU_REF_INIT_ATOMIC = 1 << 0,
	/* Start dead, with count 0: percpu_ref_reinit() before use. */
	PERCPU_REF_INIT_DEAD = 1 << 1,
	/* Keep the percpu counters after a kill so the ref can be reinited. */
	PERCPU_REF_ALLOW_REINIT = 1 << 2,
};

struct percpu_ref_data {
	atomic_long_t count;
	percpu_ref_func_t *release;
	percpu_ref_func_t *confirm_switch;
	bool force_atomic : 1;
	bool allow_reinit : 1;
	struct rcu_head rcu;
	struct percpu_ref *ref;
};

struct percpu_ref {
	/*
	 * The percpu counter's address, with __PERCPU_REF_* in the low bits;
	 * after percpu_ref_exit() the last count, shifted past the flags.
	 */
	unsigned long percpu_count_ptr;
	struct percpu_ref_data *data;
};

/*
 * ukern: the mode switches of 4.7 (before 33e465ce7cb3), without
 * percpu_ref_switch_lock ("percpu_ref.switch=v47"), for the explorer.
 */
extern bool percpu_ref_switch_v47;

/*
 * ukern: an era seam at the top of percpu_ref_init(), which passes @flags
 * through it when set. AIO's aio.ref=atomic uses it to start the kioctx refs
 * in atomic mode, as the atomic_t counts they were before 3.10.
 */
extern unsigned int (*percpu_ref_init_hook)(percpu_ref_func_t *release, unsigned int flags);

int __must_check percpu_ref_init(struct percpu_ref *ref, percpu_ref_func_t *release,
				 unsigned int flags, gfp_t gfp);
void percpu_ref_exit(struct percpu_ref *ref);
void percpu_ref_switch_to_atomic(struct percpu_ref *ref, percpu_ref_func_t *confirm_switch);
void percpu_ref_switch_to_atomic_sync(struct percpu_ref *ref);
void percpu_ref_switch_to_percpu(struct percpu_ref *ref);
void percpu_ref_kill_and_confirm(struct percpu_ref *ref, percpu_ref_func_t *confirm_kill);
void percpu_ref_resurrect(struct percpu_ref *ref);
void percpu_ref_reinit(struct percpu_ref *ref);
bool percpu_ref_is_zero(struct percpu_ref *ref);

/* Drops the initial reference; ->release() runs once the count hits 0. */
static inline void percpu_ref_kill(struct percpu_ref *ref)
{
	percpu_ref_kill_and_confirm(ref, NULL);
}

/*
 * __ref_is_percpu(): true, with the counter's address in *percpu_countp,
 * if @ref is in percpu mode. The acquire load (free on x86) stands in for
 * the kernel's address dependency: it pairs with the smp_store_release()
 * in __percpu_ref_switch_to_percpu(), so the zeroed counters are seen.
 */
static __always_inline bool __ref_is_percpu(struct percpu_ref *ref,
					    unsigned long __percpu **percpu_countp)
{
	unsigned long percpu_ptr = __atomic_load_n(&ref->percpu_count_ptr, __ATOMIC_ACQUIRE);

	if (unlikely(percpu_ptr & __PERCPU_REF_ATOMIC_DEAD))
		return false;

	*percpu_countp = (unsigned long __percpu *)percpu_ptr;
	return true;
}

static inline void percpu_ref_get_many(struct percpu_ref *ref, unsigned long nr)
{
	unsigned long __percpu *percpu_count;

	rcu_read_lock();

	if (__ref_is_percpu(ref, &percpu_count))
		this_cpu_add(*percpu_count, nr);
	else
		atomic_long_add(nr, &ref->data->count);

	rcu_read_unlock();
}

static inline void percpu_ref_get(struct percpu_ref *ref)
{
	percpu_ref_get_many(ref, 1);
}

static inline bool percpu_ref_tryget_many(struct percpu_ref *ref, unsigned long nr)
{
	unsigned long __percpu *percpu_count;
	bool ret;

	rcu_read_lock();

	if (__ref_is_percpu(ref, &percpu_count)) {
		this_cpu_add(*percpu_count, nr);
		ret = true;
	} else {
		ret = atomic_long_add_unless(&ref->data->count, nr, 0);
	}

	rcu_read_unlock();

	return ret;
}

static inline bool percpu_ref_tryget(struct percpu_ref *ref)
{
	return percpu_ref_tryget_many(ref, 1);
}

/* Like percpu_ref_tryget_live() for callers already under rcu_read_lock(). */
static inline bool percpu_ref_tryget_live_rcu(struct percpu_ref *ref)
{
	unsigned long __percpu *percpu_count;
	bool ret = false;

	WARN_ON_ONCE(!rcu_read_lock_held());

	if (likely(__ref_is_percpu(ref, &percpu_count))) {
		this_cpu_inc(*percpu_count);
		ret = true;
	} else if (!(__atomic_load_n(&ref->percpu_count_ptr, __ATOMIC_RELAXED) &
		     __PERCPU_REF_DEAD)) {
		ret = atomic_long_inc_not_zero(&ref->data->count);
	}
	return ret;
}

/*
 * percpu_ref_tryget_live(): a reference unless @ref is dying. Fails for
 * sure only once the kill has been confirmed (see
 * percpu_ref_kill_and_confirm()).
 */
static inline bool percpu_ref_tryget_live(struct percpu_ref *ref)
{
	bool ret = false;

	rcu_read_lock();
	ret = percpu_ref_tryget_live_rcu(ref);
	rcu_read_unlock();
	return ret;
}

static inline void percpu_ref_put_many(struct percpu_ref *ref, unsigned long nr)
{
	unsigned long __percpu *percpu_count;

	rcu_read_lock();

	if (__ref_is_percpu(ref, &percpu_count))
		this_cpu_sub(*percpu_count, nr);
	else if (unlikely(atomic_long_sub_and_test(nr, &ref->data->count)))
		ref->data->release(ref);

	rcu_read_unlock();
}

static inline void percpu_ref_put(struct percpu_ref *ref)
{
	percpu_ref_put_many(ref, 1);
}

static inline bool percpu_ref_is_dying(struct percpu_ref *ref)
{
	return __atomic_load_n(&ref->percpu_count_ptr, __ATOMIC_RELAXED) & __PERCPU_REF_DEAD;
}

#endif /* UK_LINUX_PERCPU_REFCOUNT_H */
