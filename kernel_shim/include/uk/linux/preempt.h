/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * preempt_count() and the context tests (include/linux/preempt.h), on the
 * CPU model of <uk/shim/cpu.h>.
 *
 * Upstream: include/linux/preempt.h @ v6.12
 */
#ifndef UK_LINUX_PREEMPT_H
#define UK_LINUX_PREEMPT_H

#include <uk/linux/barrier.h>
#include <uk/linux/cleanup.h>
#include <uk/linux/rcu_reader.h>
#include <uk/shim/cpu.h>

#define PREEMPT_BITS 8
#define SOFTIRQ_BITS 8
#define HARDIRQ_BITS 4
#define NMI_BITS 4
#define PREEMPT_SHIFT 0
#define SOFTIRQ_SHIFT (PREEMPT_SHIFT + PREEMPT_BITS)
#define HARDIRQ_SHIFT (SOFTIRQ_SHIFT + SOFTIRQ_BITS)
#define NMI_SHIFT (HARDIRQ_SHIFT + HARDIRQ_BITS)
#define __IRQ_MASK(x) ((1UL << (x)) - 1)
#define PREEMPT_MASK (__IRQ_MASK(PREEMPT_BITS) << PREEMPT_SHIFT)
#define SOFTIRQ_MASK (__IRQ_MASK(SOFTIRQ_BITS) << SOFTIRQ_SHIFT)
#define HARDIRQ_MASK (__IRQ_MASK(HARDIRQ_BITS) << HARDIRQ_SHIFT)
#define NMI_MASK (__IRQ_MASK(NMI_BITS) << NMI_SHIFT)
#define PREEMPT_OFFSET (1UL << PREEMPT_SHIFT)
#define SOFTIRQ_OFFSET (1UL << SOFTIRQ_SHIFT)
#define HARDIRQ_OFFSET (1UL << HARDIRQ_SHIFT)
#define NMI_OFFSET (1UL << NMI_SHIFT)
#define SOFTIRQ_DISABLE_OFFSET (2 * SOFTIRQ_OFFSET)

/*
 * Keeps a value in a general register. Without it GCC merges the adjacent
 * preempt_count/pdepth increments into one SSE add and 8-byte store, which
 * the next 4-byte load of either field must wait on (a store-forwarding
 * stall that tripled the cost of a nested preempt_disable()).
 */
static __always_inline uint32_t __uk_gpr(uint32_t v)
{
	__asm__("" : "+r"(v));
	return v;
}

static __always_inline int preempt_count(void)
{
	return ::uk::tls_cpu.preempt_count;
}

#define hardirq_count() (preempt_count() & HARDIRQ_MASK)
#define softirq_count() (preempt_count() & SOFTIRQ_MASK)
#define irq_count() (preempt_count() & (HARDIRQ_MASK | SOFTIRQ_MASK | NMI_MASK))
#define in_nmi() (preempt_count() & NMI_MASK)
#define in_hardirq() (hardirq_count())
#define in_irq() (hardirq_count())
#define in_softirq() (softirq_count())
#define in_serving_softirq() (softirq_count() & SOFTIRQ_OFFSET)
#define in_interrupt() (irq_count())
#define in_task() (!(preempt_count() & (NMI_MASK | HARDIRQ_MASK | SOFTIRQ_OFFSET)))
#define in_atomic() (preempt_count() != 0)
#define preemptible() (preempt_count() == 0 && !irqs_disabled())

namespace uk
{
void cpu_run_pending(int cpu);
} // namespace uk

/*
 * Taking a CPU, the common case inline: a task that holds none takes @bits
 * on the CPU it runs on when nobody holds anything there. A pinned task, a
 * busy CPU or a test's scheduling hook go through cpu_acquire().
 */
static __always_inline void __uk_cpu_acquire(::uk::ThreadCpu &t, uint32_t bits)
{
	if (likely(t.held == 0 && t.pinned < 0 && !::uk::sched_hook)) {
		int cpu = ::uk::host_vcpu();
		uint32_t free_word = 0;

		if (likely(::uk::cpu_state[cpu].word.compare_exchange_strong(
			    free_word, bits, std::memory_order_acquire,
			    std::memory_order_relaxed))) {
			t.cpu = cpu;
			t.held = bits;
			/* The section is an RCU reader (see cpu_acquire()). */
			__rcu_read_lock();
			return;
		}
	}
	::uk::cpu_acquire(bits);
}

/*
 * Letting the CPU go when the task drops everything it holds there (task
 * context, preemption, bottom halves and interrupts all enabled again):
 * cpu_release() without its case analysis. Interrupt work that waited for
 * the CPU runs now.
 */
static __always_inline void __uk_cpu_release_all(::uk::ThreadCpu &t)
{
	int cpu = t.cpu;
	uint32_t bits = t.held;

	t.held = 0;
	t.cpu = -1;
	::uk::cpu_state_give(::uk::cpu_state[cpu], bits);
	__rcu_read_unlock();
	if (unlikely(::uk::cpu_state[cpu].has_pending.load(std::memory_order_acquire)))
		::uk::cpu_run_pending(cpu);
}

/*
 * preempt_disable(): the task keeps its virtual CPU, exclusively, until the
 * matching preempt_enable(). Interrupt work for the CPU may still run.
 */
static __always_inline void preempt_disable(void)
{
	::uk::ThreadCpu &t = ::uk::tls_cpu;

	t.preempt_count = __uk_gpr(t.preempt_count + 1);
	if (t.pdepth++ == 0 && !(t.held & ::uk::kCpuOwned) && !t.in_irq_ctx)
		__uk_cpu_acquire(t, ::uk::kCpuOwned);
	barrier();
}

/*
 * preempt_enable() in two halves: the count, then letting the CPU go when
 * nothing else holds it. The spinlock unlock paths that also restore
 * interrupts put the restore between the halves, so that it lets the whole
 * CPU go at once instead of the interrupt bit and then the CPU separately.
 */
static __always_inline void __uk_preempt_count_dec(void)
{
	::uk::ThreadCpu &t = ::uk::tls_cpu;

	barrier();
	if (unlikely(t.pdepth == 0))
		::uk::preempt_underflow("preempt_enable");
	t.preempt_count = __uk_gpr(t.preempt_count - 1);
	t.pdepth = __uk_gpr(t.pdepth - 1);
}

static __always_inline void __uk_preempt_release(void)
{
	::uk::ThreadCpu &t = ::uk::tls_cpu;

	if (t.pdepth == 0 && t.held == ::uk::kCpuOwned && t.bh_depth == 0 && !t.irqs_off &&
	    !t.in_irq_ctx)
		__uk_cpu_release_all(t);
}

static __always_inline void preempt_enable(void)
{
	__uk_preempt_count_dec();
	__uk_preempt_release();
}

#define preempt_enable_no_resched() preempt_enable()
#define preempt_disable_notrace() preempt_disable()
#define preempt_enable_notrace() preempt_enable()
#define preempt_check_resched() \
	do {                    \
	} while (0)

/*
 * migrate_disable(): the CPU number stays stable, without exclusion. This is
 * what spin_lock() gives, as on PREEMPT_RT.
 */
static __always_inline void migrate_disable(void)
{
	::uk::ThreadCpu &t = ::uk::tls_cpu;

	if (t.lock_depth++ == 0 && t.cpu < 0)
		t.sticky = ::uk::current_cpu();
}

static __always_inline void migrate_enable(void)
{
	::uk::ThreadCpu &t = ::uk::tls_cpu;

	if (unlikely(t.lock_depth == 0))
		::uk::preempt_underflow("migrate_enable");
	if (--t.lock_depth == 0)
		t.sticky = -1;
}

DEFINE_LOCK_GUARD_0(preempt, preempt_disable(), preempt_enable())
DEFINE_LOCK_GUARD_0(preempt_notrace, preempt_disable_notrace(), preempt_enable_notrace())
DEFINE_LOCK_GUARD_0(migrate, migrate_disable(), migrate_enable())

#endif /* UK_LINUX_PREEMPT_H */
