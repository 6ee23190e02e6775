/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * RCU (include/linux/rcupdate.h). Pointer publication and access, and the
 * read-side fast paths, are here; grace periods, call_rcu() and the reader
 * registry are in kernel_shim/shim/rcu.cc (see docs/rcu.md).
 *
 * The read side follows liburcu's "memb" flavour: each thread has a reader
 * word (nesting count in the low RCU_NEST_BITS bits, a snapshot of the
 * grace-period counter above them). The outermost rcu_read_lock() copies
 * the global counter into it; the writer, after a membarrier(2) that forces
 * a full barrier on every running thread, waits for each reader whose word
 * shows a section that began before the current grace period. So readers
 * need only a compiler barrier; without membarrier they fall back to a full
 * fence.
 *
 * The fast paths test one word: an idle reader's word is 0. A thread that
 * has not registered yet, or a process without membarrier, keeps
 * RCU_READER_SLOW set in it, which sends the outermost lock and unlock to
 * the out-of-line paths (registration, fences). A nested lock or unlock
 * stays inline.
 */
#ifndef UK_LINUX_RCUPDATE_H
#define UK_LINUX_RCUPDATE_H

#include <uk/linux/barrier.h>
#include <uk/linux/bottom_half.h>
#include <uk/linux/cleanup.h>
#include <uk/linux/compiler.h>
#include <uk/linux/irqflags.h>
#include <uk/linux/preempt.h>
#include <uk/linux/rcu_reader.h>
#include <uk/linux/types.h>

struct callback_head {
	struct callback_head *next;
	void (*func)(struct callback_head *head);
} __attribute__((aligned(sizeof(void *))));
#define rcu_head callback_head
typedef void (*rcu_callback_t)(struct rcu_head *head);

/*
 * rcu_assign_pointer(): a release store, paired with the address dependency
 * (an acquire load here, which ThreadSanitizer understands) in
 * rcu_dereference().
 */
#define rcu_assign_pointer(p, v) __atomic_store_n(&(p), (__typeof__(p))(v), __ATOMIC_RELEASE)
#define RCU_INIT_POINTER(p, v) __atomic_store_n(&(p), (__typeof__(p))(v), __ATOMIC_RELAXED)
#define rcu_access_pointer(p) __atomic_load_n(&(p), __ATOMIC_RELAXED)
#define rcu_dereference_raw(p) __atomic_load_n(&(p), __ATOMIC_ACQUIRE)
#define rcu_dereference(p) rcu_dereference_raw(p)
#define rcu_dereference_bh(p) rcu_dereference_raw(p)
#define rcu_dereference_sched(p) rcu_dereference_raw(p)
#define rcu_dereference_check(p, c) rcu_dereference_raw(p)
#define rcu_dereference_protected(p, c) __atomic_load_n(&(p), __ATOMIC_RELAXED)
#define rcu_replace_pointer(rcu_ptr, ptr, c)                                           \
	({                                                                             \
		__typeof__(rcu_ptr) __tmp = rcu_dereference_protected((rcu_ptr), (c)); \
		rcu_assign_pointer((rcu_ptr), (ptr));                                  \
		__tmp;                                                                 \
	})
#define unrcu_pointer(p) (p)
#define RCU_POINTER_INITIALIZER(p, v) .p = (v)

/*
 * rcu_read_lock()/rcu_read_unlock(): a read-side critical section. They
 * nest, never block, and are legal in any context (task, softirq, hardirq).
 * As with the kernel's consolidated RCU (v4.20+), a section that disables
 * preemption, bottom halves or interrupts (a spinlock's, say) and interrupt
 * context are readers as well: the virtual CPU model begins a section when
 * a thread takes a CPU and ends it when the thread lets the CPU go.
 */
static __always_inline void rcu_read_lock(void)
{
	__uk_explore("rcu_read_lock");
	__rcu_read_lock();
}

static __always_inline void rcu_read_unlock(void)
{
	__rcu_read_unlock();
	__uk_explore("rcu_read_unlock");
}

static __always_inline void rcu_read_lock_bh(void)
{
	local_bh_disable();
	__rcu_read_lock();
}

static __always_inline void rcu_read_unlock_bh(void)
{
	__rcu_read_unlock();
	local_bh_enable();
}

static __always_inline void rcu_read_lock_sched(void)
{
	preempt_disable();
	__rcu_read_lock();
}

static __always_inline void rcu_read_unlock_sched(void)
{
	__rcu_read_unlock();
	preempt_enable();
}

#define rcu_read_lock_sched_notrace() rcu_read_lock_sched()
#define rcu_read_unlock_sched_notrace() rcu_read_unlock_sched()

/* guard(rcu)(): a read-side critical section to the end of the scope. */
DEFINE_LOCK_GUARD_0(rcu, rcu_read_lock(), rcu_read_unlock())

/* True inside rcu_read_lock() (any flavour) on this thread. */
static __always_inline int rcu_read_lock_held(void)
{
	return (::uk::rcu_reader_self().ctr & RCU_NEST_MASK) != 0;
}

static __always_inline int rcu_read_lock_bh_held(void)
{
	return rcu_read_lock_held() || in_softirq() || irqs_disabled();
}

static __always_inline int rcu_read_lock_sched_held(void)
{
	return rcu_read_lock_held() || preempt_count() != 0 || irqs_disabled();
}

static __always_inline int rcu_read_lock_any_held(void)
{
	return rcu_read_lock_sched_held() || rcu_read_lock_bh_held();
}

#define rcu_lockdep_assert(c, s) WARN_ON_ONCE(!(c))
#define RCU_LOCKDEP_WARN(c, s) \
	do {                   \
	} while (0)
#define rcu_sleep_check() \
	do {              \
	} while (0)
#define rcu_is_watching() (true)

/* ---- grace periods and callbacks (rcu.cc) ---- */

void synchronize_rcu(void);
void synchronize_rcu_expedited(void);
void call_rcu(struct rcu_head *head, rcu_callback_t func);
void call_rcu_hurry(struct rcu_head *head, rcu_callback_t func);
void rcu_barrier(void);
void kvfree_call_rcu(struct rcu_head *head, void *ptr);

namespace uk
{
/*
 * Explore tests (docs/explore.md): when set, call_rcu() hands the callback
 * (->func filled in) to this hook instead of the callback thread, and the
 * test runs the grace period and the callback inside its schedule.
 */
extern void (*call_rcu_hook)(struct rcu_head *head);
} // namespace uk

#define synchronize_rcu_bh() synchronize_rcu()
#define synchronize_sched() synchronize_rcu()
#define synchronize_rcu_tasks() synchronize_rcu()
#define synchronize_net() synchronize_rcu()
#define call_rcu_bh(h, f) call_rcu((h), (f))
#define call_rcu_sched(h, f) call_rcu((h), (f))
#define rcu_barrier_bh() rcu_barrier()
#define rcu_barrier_sched() rcu_barrier()

/* Polled grace periods: cookies are grace-period counter values. */
unsigned long get_state_synchronize_rcu(void);
unsigned long start_poll_synchronize_rcu(void);
bool poll_state_synchronize_rcu(unsigned long oldstate);
void cond_synchronize_rcu(unsigned long oldstate);

static inline unsigned long get_completed_synchronize_rcu(void)
{
	return RCU_GET_STATE_COMPLETED;
}

static inline bool same_state_synchronize_rcu(unsigned long oldstate1, unsigned long oldstate2)
{
	return oldstate1 == oldstate2;
}

/*
 * kfree_rcu(ptr, rhf): kfree @ptr after a grace period, through the
 * struct rcu_head member @rhf. As the kernel once did, the callback slot
 * carries the member's offset; rcu.cc recognises small values and frees
 * the enclosing object instead of calling them.
 */
#define __is_kvfree_rcu_offset(offset) ((offset) < 4096)

#define kvfree_rcu_arg_2(ptr, rhf)                                                                 \
	do {                                                                                       \
		__typeof__(ptr) ___p = (ptr);                                                      \
		static_assert(__builtin_offsetof(std::remove_reference_t<decltype(*(ptr))>, rhf) < \
				      4096,                                                        \
			      "rcu_head too far into the object");                                 \
		if (___p)                                                                          \
			kvfree_call_rcu(&((___p)->rhf), (void *)(___p));                           \
	} while (0)

/* The 1-argument form: may sleep (synchronize_rcu() then kvfree()). */
#define kvfree_rcu_arg_1(ptr)                                  \
	do {                                                   \
		__typeof__(ptr) ___p = (ptr);                  \
		if (___p)                                      \
			kvfree_call_rcu(NULL, (void *)(___p)); \
	} while (0)

#define kfree_rcu(ptr, rhf) kvfree_rcu_arg_2(ptr, rhf)
#define __kvfree_rcu_sel(_1, _2, NAME, ...) NAME
#define kvfree_rcu(...) \
	__kvfree_rcu_sel(__VA_ARGS__, kvfree_rcu_arg_2, kvfree_rcu_arg_1)(__VA_ARGS__)
#define kfree_rcu_mightsleep(ptr) kvfree_rcu_arg_1(ptr)
#define kvfree_rcu_mightsleep(ptr) kvfree_rcu_arg_1(ptr)

/* No object debugging in the shim. */
#define init_rcu_head(head) \
	do {                \
	} while (0)
#define destroy_rcu_head(head) \
	do {                   \
	} while (0)
#define init_rcu_head_on_stack(head) \
	do {                         \
	} while (0)
#define destroy_rcu_head_on_stack(head) \
	do {                            \
	} while (0)

#endif /* UK_LINUX_RCUPDATE_H */
