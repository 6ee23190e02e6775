/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * RCU (include/linux/rcupdate.h). Pointer publication and access, and the
 * read-side fast paths, are here; grace periods, call_rcu() and the reader
 * registry are in kernel_shim/shim/rcu.cc (see README.md, "RCU").
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
#include <uk/linux/compiler.h>
#include <uk/linux/irqflags.h>
#include <uk/linux/preempt.h>
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

/* ---- reader state (shim internals, used by the inline fast paths) ---- */

#define RCU_NEST_BITS 16
/* Nesting count; the bit above it is RCU_READER_SLOW. */
#define RCU_NEST_MASK ((1UL << (RCU_NEST_BITS - 1)) - 1)
#define RCU_READER_SLOW (1UL << (RCU_NEST_BITS - 1))
/* One grace period advances the global counter by this much. */
#define RCU_GP_CTR_INC (1UL << RCU_NEST_BITS)
/* A cookie that poll_state_synchronize_rcu() always reports completed. */
#define RCU_GET_STATE_COMPLETED 0x1UL

namespace uk
{

struct alignas(64) RcuReader {
	/* Nesting count | RCU_READER_SLOW | grace-period snapshot; written
	 * only by the owner. Starts with RCU_READER_SLOW (not registered). */
	unsigned long ctr = RCU_READER_SLOW;
	bool registered = false;
	struct RcuReader *next = nullptr, *prev = nullptr; /* registry links (rcu.cc) */
};

extern constinit thread_local RcuReader rcu_reader __attribute__((tls_model("initial-exec")));

/*
 * This thread's reader word. Under ASan+UBSan the address goes through an
 * empty asm: the linker's TLS relaxation otherwise leaves UBSan's null
 * check reading stale flags and reporting a null pointer.
 */
static __always_inline RcuReader &rcu_reader_self(void)
{
	RcuReader *p = &rcu_reader;
#ifdef UK_ASAN
	__asm__("" : "+r"(p));
#endif
	return *p;
}
/* Grace-period counter: a multiple of RCU_GP_CTR_INC. */
extern unsigned long rcu_gp_ctr;
/* rcu_gp_ctr + 1: what an outermost rcu_read_lock() stores. */
extern unsigned long rcu_gp_ctr_reader;
/* -1 while a writer sleeps waiting for readers (liburcu's gp.futex). */
extern int rcu_gp_futex;
/* Set once, before the first reader registers: readers may skip fences. */
extern bool rcu_has_membarrier;

void rcu_read_lock_slow(void);
void rcu_read_unlock_slow(void);
void rcu_wake_up_gp(void);

/* Threads known to the grace-period machinery, for tests. */
int rcu_nr_registered_readers(void);

} // namespace uk

static __always_inline void __rcu_read_lock(void)
{
	::uk::RcuReader &r = ::uk::rcu_reader_self();
	unsigned long c = __atomic_load_n(&r.ctr, __ATOMIC_RELAXED);

	if (likely(c == 0)) {
		/* The stored value does not depend on the load above: back-to-back
		 * sections do not wait on store-to-load forwarding. */
		__atomic_store_n(&r.ctr,
				 __atomic_load_n(&::uk::rcu_gp_ctr_reader, __ATOMIC_RELAXED),
				 __ATOMIC_RELAXED);
		/* Order the store above before the section's loads: with membarrier
		 * a compiler barrier, paired with the first rcu_smp_mb_master() of
		 * a grace period. */
		barrier();
	} else if (likely(!(c & RCU_READER_SLOW))) {
		__atomic_store_n(&r.ctr, c + 1, __ATOMIC_RELAXED);
	} else {
		::uk::rcu_read_lock_slow();
	}
}

static __always_inline void __rcu_read_unlock(void)
{
	::uk::RcuReader &r = ::uk::rcu_reader_self();
	unsigned long c = __atomic_load_n(&r.ctr, __ATOMIC_RELAXED);

	if (likely((c & (RCU_NEST_MASK | RCU_READER_SLOW)) == 1)) {
		/* The section's loads before the store that ends it: pairs with
		 * the last rcu_smp_mb_master() of a grace period. */
		barrier();
#ifdef UK_TSAN
		/* Hand the section to the writer's __tsan_acquire (rcu.cc). */
		__tsan_release(&r);
#endif
		/* A constant, not c - 1 (see above); nesting 0 is quiescent
		 * whatever the snapshot bits would have said. */
		__atomic_store_n(&r.ctr, 0UL, __ATOMIC_RELAXED);
		/* Store above before the load of the futex word: pairs with the
		 * rcu_smp_mb_master() a writer issues before it sleeps. */
		barrier();
		if (unlikely(__atomic_load_n(&::uk::rcu_gp_futex, __ATOMIC_RELAXED) == -1))
			::uk::rcu_wake_up_gp();
	} else if (likely(!(c & RCU_READER_SLOW) && (c & RCU_NEST_MASK))) {
		__atomic_store_n(&r.ctr, c - 1, __ATOMIC_RELAXED);
	} else {
		::uk::rcu_read_unlock_slow();
	}
}

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
	__rcu_read_lock();
}

static __always_inline void rcu_read_unlock(void)
{
	__rcu_read_unlock();
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
