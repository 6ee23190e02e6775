/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Simulated interrupt state (include/linux/irqflags.h). Disabling
 * interrupts makes the task own its virtual CPU and keeps that CPU's
 * interrupt work out until they are enabled again; interrupts raised on the
 * CPU meanwhile stay pending and run at local_irq_enable()/restore().
 */
#ifndef UK_LINUX_IRQFLAGS_H
#define UK_LINUX_IRQFLAGS_H

#include <uk/linux/cleanup.h>
#include <uk/linux/preempt.h>

static __always_inline bool irqs_disabled(void)
{
	return ::uk::tls_cpu.irqs_off;
}

static __always_inline void local_irq_disable(void)
{
	::uk::ThreadCpu &t = ::uk::tls_cpu;

	if (!t.irqs_off) {
		__uk_cpu_acquire(t, ::uk::kCpuIrq | (t.in_irq_ctx ? 0 : ::uk::kCpuOwned));
		t.irqs_off = true;
	}
	barrier();
}

static __always_inline void local_irq_enable(void)
{
	::uk::ThreadCpu &t = ::uk::tls_cpu;

	barrier();
	if (t.irqs_off) {
		/* Common case: a task section that only had interrupts off. */
		if (likely(t.held == (::uk::kCpuIrq | ::uk::kCpuOwned) &&
			   (t.pdepth | t.bh_depth) == 0)) {
			t.irqs_off = false;
			__uk_cpu_release_all(t);
		} else {
			::uk::irq_restore_slow();
		}
	}
}

#define local_irq_save(flags)                             \
	do {                                              \
		(flags) = (unsigned long)irqs_disabled(); \
		local_irq_disable();                      \
	} while (0)

#define local_irq_restore(flags)            \
	do {                                \
		if (!(flags))               \
			local_irq_enable(); \
	} while (0)

#define raw_local_irq_save(flags) local_irq_save(flags)
#define raw_local_irq_restore(flags) local_irq_restore(flags)
#define irqs_disabled_flags(flags) ((flags) != 0)
#define lockdep_assert_irqs_disabled() WARN_ON_ONCE(!irqs_disabled())
#define lockdep_assert_irqs_enabled() WARN_ON_ONCE(irqs_disabled())

DEFINE_LOCK_GUARD_0(irq, local_irq_disable(), local_irq_enable())
DEFINE_LOCK_GUARD_0(irqsave, local_irq_save(_T->flags), local_irq_restore(_T->flags),
		    unsigned long flags)

#endif /* UK_LINUX_IRQFLAGS_H */
