// SPDX-License-Identifier: GPL-2.0-only
//
// Percpu reference counts (lib/percpu-refcount.c). See
// <uk/linux/percpu-refcount.h> for the model and docs/rcu.md.
//
// Port notes:
//  - percpu_count_ptr is read locklessly by the fast paths, so every access
//    here is a READ_ONCE/WRITE_ONCE (relaxed atomic) or the release store
//    of __percpu_ref_switch_to_percpu(); writers hold percpu_ref_switch_lock
//    as in the kernel (the confirmation callback aside, as in the kernel).
//    The kernel's `|=` and `&=` on it are WRITE_ONCE(x, x | v) here.
//  - ->confirm_switch is cleared by the RCU callback and polled by waiters
//    on percpu_ref_switch_waitq, marked on both sides; uk_tsan_release() and
//    uk_tsan_acquire() give ThreadSanitizer the order a waiter that finds it
//    clear relies on (the callback's work, ->confirm_switch() included).
//  - percpu_ref_switch_v47 ("percpu_ref.switch=v47") runs the mode switches
//    without percpu_ref_switch_lock, as before 33e465ce7cb3 ("percpu_ref:
//    allow operation mode switching operations to be called concurrently",
//    4.8), for the explorer's historical race: the *_v47 functions below,
//    entered through a one-statement seam at the top of each switch.
//  - percpu_ref_init_hook, when set, may change percpu_ref_init()'s flags:
//    AIO's era mode aio.ref=atomic starts its kioctx refs atomic with it.
//
// Upstream: lib/percpu-refcount.c @ v6.12
#define KBUILD_MODNAME "percpu_ref"

#include <climits>

#include <uk/linux/moduleparam.h>
#include <uk/linux/percpu-refcount.h>
#include <uk/linux/slab.h>
#include <uk/linux/spinlock.h>
#include <uk/linux/wait.h>

#define PERCPU_COUNT_BIAS (1LU << (BITS_PER_LONG - 1))

static DEFINE_SPINLOCK(percpu_ref_switch_lock);

bool percpu_ref_switch_v47;
static const char *const percpu_ref_switch_names[] = { "current", "v47" };
module_param_enum(switch, percpu_ref_switch_v47, percpu_ref_switch_names, 0644);
MODULE_PARM_DESC(switch, "Mode switches: current (4.8+, under percpu_ref_switch_lock), "
			 "v47 (no lock, before 33e465ce7cb3)");

unsigned int (*percpu_ref_init_hook)(percpu_ref_func_t *release, unsigned int flags);

static DECLARE_WAIT_QUEUE_HEAD(percpu_ref_switch_waitq);

static void percpu_ref_switch_to_atomic_v47(struct percpu_ref *ref,
					    percpu_ref_func_t *confirm_switch);
static void percpu_ref_switch_to_percpu_v47(struct percpu_ref *ref);
static void percpu_ref_kill_and_confirm_v47(struct percpu_ref *ref,
					    percpu_ref_func_t *confirm_kill);
static void percpu_ref_resurrect_v47(struct percpu_ref *ref);

static unsigned long __percpu *percpu_count_ptr(struct percpu_ref *ref)
{
	return (unsigned long __percpu *)(READ_ONCE(ref->percpu_count_ptr) &
					  ~(unsigned long)__PERCPU_REF_ATOMIC_DEAD);
}

/**
 * percpu_ref_init - set up a percpu_ref and its counters
 * @ref: the percpu_ref being set up
 * @release: callback run by the put that takes the count to zero
 * @flags: any combination of the PERCPU_REF_INIT_* bits
 * @gfp: GFP mask for the counter and data allocations
 *
 * Returns 0, or -ENOMEM when an allocation fails. By default @ref comes up
 * live in percpu mode, holding one reference that belongs to the caller;
 * PERCPU_REF_INIT_ATOMIC makes it start in atomic mode instead, and
 * PERCPU_REF_INIT_DEAD makes it start dead (atomic) with a count of zero.
 */
int percpu_ref_init(struct percpu_ref *ref, percpu_ref_func_t *release, unsigned int flags,
		    gfp_t gfp)
{
	size_t align = max_t(size_t, 1 << __PERCPU_REF_FLAG_BITS, __alignof__(unsigned long));
	unsigned long start_count = 0;
	unsigned long ptr;
	struct percpu_ref_data *data;

	if (unlikely(percpu_ref_init_hook))
		flags = percpu_ref_init_hook(release, flags);

	ptr = (unsigned long)(void *)__alloc_percpu_gfp(sizeof(unsigned long), align,
							gfp | __GFP_PCPU_COUNTER);
	if (!ptr) {
		ref->percpu_count_ptr = 0;
		ref->data = NULL;
		return -ENOMEM;
	}

	data = kzalloc(sizeof(*ref->data), gfp);
	if (!data) {
		free_percpu((void *)ptr);
		ref->percpu_count_ptr = 0;
		ref->data = NULL;
		return -ENOMEM;
	}

	data->force_atomic = flags & PERCPU_REF_INIT_ATOMIC;
	data->allow_reinit = flags & PERCPU_REF_ALLOW_REINIT;

	if (flags & (PERCPU_REF_INIT_ATOMIC | PERCPU_REF_INIT_DEAD)) {
		ptr |= __PERCPU_REF_ATOMIC;
		data->allow_reinit = true;
	} else {
		start_count += PERCPU_COUNT_BIAS;
	}

	if (flags & PERCPU_REF_INIT_DEAD)
		ptr |= __PERCPU_REF_DEAD;
	else
		start_count++;

	atomic_long_set(&data->count, start_count);

	data->release = release;
	data->confirm_switch = NULL;
	data->ref = ref;
	ref->data = data;
	WRITE_ONCE(ref->percpu_count_ptr, ptr);
	return 0;
}

static void __percpu_ref_exit(struct percpu_ref *ref)
{
	unsigned long __percpu *percpu_count = percpu_count_ptr(ref);

	if (percpu_count) {
		/* a switch still in flight would use the counters */
		WARN_ON_ONCE(ref->data && READ_ONCE(ref->data->confirm_switch));
		free_percpu(percpu_count);
		WRITE_ONCE(ref->percpu_count_ptr, (unsigned long)__PERCPU_REF_ATOMIC_DEAD);
	}
}

/**
 * percpu_ref_exit - tear down what percpu_ref_init() set up
 * @ref: the percpu_ref being torn down
 *
 * Frees the percpu counters and the out-of-line data. The final count is
 * kept in @ref so percpu_ref_is_zero() still answers. Legal from the
 * release callback and on a ref whose init failed.
 */
void percpu_ref_exit(struct percpu_ref *ref)
{
	struct percpu_ref_data *data = ref->data;
	unsigned long flags;

	__percpu_ref_exit(ref);

	if (!data)
		return;

	spin_lock_irqsave(&percpu_ref_switch_lock, flags);
	WRITE_ONCE(ref->percpu_count_ptr, READ_ONCE(ref->percpu_count_ptr) |
						  (unsigned long)atomic_long_read(&ref->data->count)
							  << __PERCPU_REF_FLAG_BITS);
	ref->data = NULL;
	spin_unlock_irqrestore(&percpu_ref_switch_lock, flags);

	kfree(data);
}

static void percpu_ref_call_confirm_rcu(struct rcu_head *rcu)
{
	struct percpu_ref_data *data = container_of(rcu, struct percpu_ref_data, rcu);
	struct percpu_ref *ref = data->ref;

	data->confirm_switch(ref);
	/* pairs with uk_tsan_acquire() after the waits on ->confirm_switch */
	uk_tsan_release(&data->confirm_switch);
	WRITE_ONCE(data->confirm_switch, NULL);
	wake_up_all(&percpu_ref_switch_waitq);

	if (!data->allow_reinit)
		__percpu_ref_exit(ref);

	/* the reference taken by __percpu_ref_switch_to_atomic() */
	percpu_ref_put(ref);
}

static void percpu_ref_switch_to_atomic_rcu(struct rcu_head *rcu)
{
	struct percpu_ref_data *data = container_of(rcu, struct percpu_ref_data, rcu);
	struct percpu_ref *ref = data->ref;
	unsigned long __percpu *percpu_count = percpu_count_ptr(ref);
	static atomic_t underflows;
	unsigned long count = 0;
	int cpu;

	/*
	 * A grace period has passed since __PERCPU_REF_ATOMIC was set: every
	 * get/put that saw percpu mode has finished (the RCU read-side
	 * sections of the fast paths), so the counters are final.
	 */
	for_each_possible_cpu (cpu)
		count += READ_ONCE(*per_cpu_ptr(percpu_count, cpu));

	pr_debug("global %lu percpu %lu\n", atomic_long_read(&data->count), count);

	/* Add the percpu sum and drop the bias in one go, so that the count
	 * cannot hit zero half way. */
	atomic_long_add((long)count - PERCPU_COUNT_BIAS, &data->count);

	if (WARN_ONCE(atomic_long_read(&data->count) <= 0,
		      "percpu ref (%ps) <= 0 (%ld) after switching to atomic", data->release,
		      atomic_long_read(&data->count)) &&
	    atomic_inc_return(&underflows) < 4) {
		pr_err("%s(): percpu_ref underflow", __func__);
		mem_dump_obj(data);
	}

	/* @ref now looks atomic to every CPU: confirm the switch */
	percpu_ref_call_confirm_rcu(rcu);
}

static void percpu_ref_noop_confirm_switch(struct percpu_ref *ref) {}

static void __percpu_ref_switch_to_atomic(struct percpu_ref *ref, percpu_ref_func_t *confirm_switch)
{
	if (READ_ONCE(ref->percpu_count_ptr) & __PERCPU_REF_ATOMIC) {
		if (confirm_switch)
			confirm_switch(ref);
		return;
	}

	/* from percpu to atomic: new gets/puts go to data->count from now on */
	WRITE_ONCE(ref->percpu_count_ptr, READ_ONCE(ref->percpu_count_ptr) | __PERCPU_REF_ATOMIC);

	/* a non-NULL ->confirm_switch marks the switch as in flight */
	WRITE_ONCE(ref->data->confirm_switch, confirm_switch ?: percpu_ref_noop_confirm_switch);

	percpu_ref_get(ref); /* dropped after the confirmation */
	call_rcu_hurry(&ref->data->rcu, percpu_ref_switch_to_atomic_rcu);
}

static void __percpu_ref_switch_to_percpu(struct percpu_ref *ref)
{
	unsigned long __percpu *percpu_count = percpu_count_ptr(ref);
	int cpu;

	BUG_ON(!percpu_count);

	if (!(READ_ONCE(ref->percpu_count_ptr) & __PERCPU_REF_ATOMIC))
		return;

	if (WARN_ON_ONCE(!ref->data->allow_reinit))
		return;

	atomic_long_add(PERCPU_COUNT_BIAS, &ref->data->count);

	/*
	 * Zero the counters, then clear __PERCPU_REF_ATOMIC with a release
	 * store: pairs with the acquire load in __ref_is_percpu(), so a CPU
	 * that sees percpu mode also sees the zeroes.
	 */
	for_each_possible_cpu (cpu)
		WRITE_ONCE(*per_cpu_ptr(percpu_count, cpu), 0);

	smp_store_release(&ref->percpu_count_ptr,
			  READ_ONCE(ref->percpu_count_ptr) & ~(unsigned long)__PERCPU_REF_ATOMIC);
}

static void __percpu_ref_switch_mode(struct percpu_ref *ref, percpu_ref_func_t *confirm_switch)
{
	struct percpu_ref_data *data = ref->data;

	lockdep_assert_held(&percpu_ref_switch_lock);

	/*
	 * A previous switch to atomic must be confirmed first. Callers that
	 * know none is in flight may call this from any context.
	 */
	wait_event_lock_irq(percpu_ref_switch_waitq, !READ_ONCE(data->confirm_switch),
			    percpu_ref_switch_lock);
	/* pairs with uk_tsan_release() in percpu_ref_call_confirm_rcu() */
	uk_tsan_acquire(&data->confirm_switch);

	if (data->force_atomic || percpu_ref_is_dying(ref))
		__percpu_ref_switch_to_atomic(ref, confirm_switch);
	else
		__percpu_ref_switch_to_percpu(ref);
}

/**
 * percpu_ref_switch_to_atomic - make @ref use its shared atomic counter
 * @ref: the percpu_ref to move out of percpu mode
 * @confirm_switch: callback (may be NULL) run when the switch has completed
 *
 * Sticky: kills and reinits leave @ref atomic until someone calls
 * percpu_ref_switch_to_percpu(). The per-CPU sums are folded in only once
 * an RCU grace period has elapsed, and @confirm_switch is invoked from that
 * RCU callback, so it must not sleep. If an earlier switch to atomic has
 * not been confirmed yet, the caller sleeps until it is.
 */
void percpu_ref_switch_to_atomic(struct percpu_ref *ref, percpu_ref_func_t *confirm_switch)
{
	unsigned long flags;

	if (unlikely(percpu_ref_switch_v47))
		return percpu_ref_switch_to_atomic_v47(ref, confirm_switch);

	spin_lock_irqsave(&percpu_ref_switch_lock, flags);

	ref->data->force_atomic = true;
	__percpu_ref_switch_mode(ref, confirm_switch);

	spin_unlock_irqrestore(&percpu_ref_switch_lock, flags);
}

/**
 * percpu_ref_switch_to_atomic_sync - atomic mode, waiting until it holds
 * @ref: the percpu_ref to move out of percpu mode
 */
void percpu_ref_switch_to_atomic_sync(struct percpu_ref *ref)
{
	percpu_ref_switch_to_atomic(ref, NULL);
	wait_event(percpu_ref_switch_waitq, !READ_ONCE(ref->data->confirm_switch));
	/* pairs with uk_tsan_release() in percpu_ref_call_confirm_rcu() */
	uk_tsan_acquire(&ref->data->confirm_switch);
}

/**
 * percpu_ref_switch_to_percpu - let @ref use its per-CPU counters again
 * @ref: the percpu_ref to return to percpu mode
 *
 * Clears the force-atomic state that PERCPU_REF_INIT_ATOMIC or
 * percpu_ref_switch_to_atomic() left behind. On a ref that is being killed
 * nothing changes now; the percpu counters come back at its next reinit
 * or resurrect.
 * Sleeps first if a switch to atomic has not been confirmed yet.
 */
void percpu_ref_switch_to_percpu(struct percpu_ref *ref)
{
	unsigned long flags;

	if (unlikely(percpu_ref_switch_v47))
		return percpu_ref_switch_to_percpu_v47(ref);

	spin_lock_irqsave(&percpu_ref_switch_lock, flags);

	ref->data->force_atomic = false;
	__percpu_ref_switch_mode(ref, NULL);

	spin_unlock_irqrestore(&percpu_ref_switch_lock, flags);
}

/**
 * percpu_ref_kill_and_confirm - kill @ref, with an optional notification
 * @ref: the percpu_ref being killed
 * @confirm_kill: optional callback, once no CPU can take a live reference
 *
 * Sets the dead bit, moves @ref to atomic mode and gives up the initial
 * reference. By the time @confirm_kill runs, percpu_ref_tryget_live() can
 * no longer succeed on any CPU. ->release() may run right after the kill:
 * a caller that wants an RCU grace period in between must wait for one
 * itself.
 */
void percpu_ref_kill_and_confirm(struct percpu_ref *ref, percpu_ref_func_t *confirm_kill)
{
	unsigned long flags;

	if (unlikely(percpu_ref_switch_v47))
		return percpu_ref_kill_and_confirm_v47(ref, confirm_kill);

	spin_lock_irqsave(&percpu_ref_switch_lock, flags);

	WARN_ONCE(percpu_ref_is_dying(ref), "%s called more than once on %ps!", __func__,
		  ref->data->release);

	WRITE_ONCE(ref->percpu_count_ptr, READ_ONCE(ref->percpu_count_ptr) | __PERCPU_REF_DEAD);
	__percpu_ref_switch_mode(ref, confirm_kill);
	percpu_ref_put(ref);

	spin_unlock_irqrestore(&percpu_ref_switch_lock, flags);
}

/**
 * percpu_ref_is_zero - report whether no references remain
 * @ref: the percpu_ref to check
 *
 * Always false in percpu mode. Also valid after percpu_ref_exit().
 */
bool percpu_ref_is_zero(struct percpu_ref *ref)
{
	unsigned long __percpu *percpu_count;
	unsigned long count, flags;

	if (__ref_is_percpu(ref, &percpu_count))
		return false;

	/* the lock keeps ->data from going away under us */
	spin_lock_irqsave(&percpu_ref_switch_lock, flags);
	if (ref->data) {
		count = atomic_long_read(&ref->data->count);
		/*
		 * Pairs with the fully ordered atomic_long_sub_and_test() of
		 * the put that reached zero: a caller that sees zero (a freeze
		 * waiter about to free the queue) comes after everything the
		 * last holder did. The load is a plain one, as in the kernel.
		 */
		uk_tsan_acquire(&ref->data->count);
	} else
		count = READ_ONCE(ref->percpu_count_ptr) >> __PERCPU_REF_FLAG_BITS;
	spin_unlock_irqrestore(&percpu_ref_switch_lock, flags);

	return count == 0;
}

/**
 * percpu_ref_reinit - make a killed, drained percpu_ref usable again
 * @ref: a killed percpu_ref whose count reached zero
 *
 * Leaves @ref as percpu_ref_init() with the original flags would have.
 * Only for a ref made with PERCPU_REF_ALLOW_REINIT (INIT_ATOMIC and
 * INIT_DEAD imply it) on which percpu_ref_exit() has not been called.
 */
void percpu_ref_reinit(struct percpu_ref *ref)
{
	WARN_ON_ONCE(!percpu_ref_is_zero(ref));

	percpu_ref_resurrect(ref);
}

/**
 * percpu_ref_resurrect - bring a dying percpu_ref back
 * @ref: the dying percpu_ref to revive
 *
 * Like percpu_ref_reinit() but without requiring a zero count: takes a new
 * initial reference and switches back to the mode the flags ask for.
 */
void percpu_ref_resurrect(struct percpu_ref *ref)
{
	unsigned long __percpu *percpu_count;
	unsigned long flags;

	if (unlikely(percpu_ref_switch_v47))
		return percpu_ref_resurrect_v47(ref);

	spin_lock_irqsave(&percpu_ref_switch_lock, flags);

	WARN_ON_ONCE(!percpu_ref_is_dying(ref));
	WARN_ON_ONCE(__ref_is_percpu(ref, &percpu_count));

	WRITE_ONCE(ref->percpu_count_ptr,
		   READ_ONCE(ref->percpu_count_ptr) & ~(unsigned long)__PERCPU_REF_DEAD);
	percpu_ref_get(ref);
	__percpu_ref_switch_mode(ref, NULL);

	spin_unlock_irqrestore(&percpu_ref_switch_lock, flags);
}

/*
 * The mode switches of v4.7 (percpu_ref.switch=v47): the same steps as
 * above with no percpu_ref_switch_lock, so that a kill, a resurrect and
 * the switches of several tasks may interleave on one ref. The wait for an
 * unconfirmed switch sleeps without a lock to drop.
 */
static void __percpu_ref_switch_mode_v47(struct percpu_ref *ref, percpu_ref_func_t *confirm_switch)
{
	struct percpu_ref_data *data = ref->data;

	wait_event(percpu_ref_switch_waitq, !READ_ONCE(data->confirm_switch));
	/* pairs with uk_tsan_release() in percpu_ref_call_confirm_rcu() */
	uk_tsan_acquire(&data->confirm_switch);

	if (data->force_atomic || percpu_ref_is_dying(ref))
		__percpu_ref_switch_to_atomic(ref, confirm_switch);
	else
		__percpu_ref_switch_to_percpu(ref);
}

static void percpu_ref_switch_to_atomic_v47(struct percpu_ref *ref,
					    percpu_ref_func_t *confirm_switch)
{
	ref->data->force_atomic = true;
	__percpu_ref_switch_mode_v47(ref, confirm_switch);
}

static void percpu_ref_switch_to_percpu_v47(struct percpu_ref *ref)
{
	ref->data->force_atomic = false;
	__percpu_ref_switch_mode_v47(ref, NULL);
}

static void percpu_ref_kill_and_confirm_v47(struct percpu_ref *ref, percpu_ref_func_t *confirm_kill)
{
	WARN_ONCE(percpu_ref_is_dying(ref), "%s called more than once on %ps!", __func__,
		  ref->data->release);

	WRITE_ONCE(ref->percpu_count_ptr, READ_ONCE(ref->percpu_count_ptr) | __PERCPU_REF_DEAD);
	__percpu_ref_switch_mode_v47(ref, confirm_kill);
	percpu_ref_put(ref);
}

static void percpu_ref_resurrect_v47(struct percpu_ref *ref)
{
	unsigned long __percpu *percpu_count;

	WARN_ON_ONCE(!percpu_ref_is_dying(ref));
	WARN_ON_ONCE(__ref_is_percpu(ref, &percpu_count));

	WRITE_ONCE(ref->percpu_count_ptr,
		   READ_ONCE(ref->percpu_count_ptr) & ~(unsigned long)__PERCPU_REF_DEAD);
	percpu_ref_get(ref);
	__percpu_ref_switch_mode_v47(ref, NULL);
}
