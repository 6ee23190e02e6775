/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The RCU reader word and the read side's inline fast paths, split out of
 * <uk/linux/rcupdate.h> so that the CPU model (<uk/linux/preempt.h>), which
 * begins a read-side section whenever a task takes a CPU, can inline them.
 * See rcupdate.h for the design.
 */
#ifndef UK_LINUX_RCU_READER_H
#define UK_LINUX_RCU_READER_H

#include <uk/linux/barrier.h>
#include <uk/linux/compiler.h>

/* ---- reader state (shim internals, used by the inline fast paths) ---- */

#define RCU_NEST_BITS 16
/* Nesting count; the bit above it is RCU_READER_SLOW. */
#define RCU_NEST_MASK ((1UL << (RCU_NEST_BITS - 1)) - 1)
#define RCU_READER_SLOW (1UL << (RCU_NEST_BITS - 1))
/* One grace period advances the global counter by this much. */
#define RCU_GP_CTR_INC (1UL << RCU_NEST_BITS)
/* A cookie for which poll_state_synchronize_rcu() is always true. */
#define RCU_GET_STATE_COMPLETED 0x1UL

namespace uk
{

struct alignas(64) RcuReader {
	/* Nesting count | RCU_READER_SLOW | grace-period snapshot; only the
	 * owning thread stores to it. Starts with RCU_READER_SLOW (not
	 * registered). */
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
extern unsigned long rcu_gp_ctr __uk_hidden;
/* rcu_gp_ctr + 1: what an outermost rcu_read_lock() stores. */
extern unsigned long rcu_gp_ctr_reader __uk_hidden;
/* -1 while a writer sleeps waiting for readers (liburcu's gp.futex). */
extern int rcu_gp_futex __uk_hidden;
/* Set once, before the first reader registers: readers may skip fences. */
extern bool rcu_has_membarrier __uk_hidden;

void rcu_read_lock_slow(void);
void rcu_read_unlock_slow(void);
/*
 * Takes the calling thread out of the reader registry, as its exit does;
 * its next rcu_read_lock() registers it again. For a host thread that runs
 * one task after another (the explorer's workers).
 */
void rcu_unregister_thread(void);
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

#endif /* UK_LINUX_RCU_READER_H */
