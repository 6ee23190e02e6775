/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Softirqs and tasklets (include/linux/interrupt.h, kernel/softirq.c).
 *
 * Each CPU has a pending mask. A softirq raised from interrupt context
 * (hardirq, softirq, or with bottom halves off) runs when the CPU leaves it:
 * at irq exit of the shim's timer interrupts, and at local_bh_enable() /
 * local_irq_enable() through the CPU model's deferred interrupt work.
 * Raised from task context, it is left to that CPU's ksoftirqd thread
 * (created on first use), which runs it in the CPU's softirq context.
 *
 * Deterministic mode (uk::softirq_set_threads(false)): ksoftirqd never
 * runs; softirqs raised from task context stay pending until
 * uk::softirq_run_pending(cpu) or uk::virtual_clock_advance().
 *
 * Upstream: include/linux/interrupt.h @ v6.12
 */
#ifndef UK_LINUX_INTERRUPT_H
#define UK_LINUX_INTERRUPT_H

#include <uk/linux/atomic.h>
#include <uk/linux/bitops.h>
#include <uk/linux/bottom_half.h>
#include <uk/linux/compiler.h>
#include <uk/linux/container_of.h>
#include <uk/linux/hardirq.h>
#include <uk/linux/irqflags.h>
#include <uk/linux/preempt.h>
#include <uk/linux/smp.h>
#include <uk/linux/types.h>

enum {
	HI_SOFTIRQ = 0,
	TIMER_SOFTIRQ,
	NET_TX_SOFTIRQ,
	NET_RX_SOFTIRQ,
	BLOCK_SOFTIRQ,
	IRQ_POLL_SOFTIRQ,
	TASKLET_SOFTIRQ,
	SCHED_SOFTIRQ,
	HRTIMER_SOFTIRQ,
	RCU_SOFTIRQ,

	NR_SOFTIRQS
};

#define SOFTIRQ_STOP_IDLE_MASK (~(1 << RCU_SOFTIRQ))
#define SOFTIRQ_HOTPLUG_SAFE_MASK \
	(BIT(TIMER_SOFTIRQ) | BIT(IRQ_POLL_SOFTIRQ) | BIT(HRTIMER_SOFTIRQ) | BIT(RCU_SOFTIRQ))

extern const char *const softirq_to_name[NR_SOFTIRQS];

struct softirq_action {
	void (*action)(void);
};

void open_softirq(int nr, void (*action)(void));
void raise_softirq(unsigned int nr);
void raise_softirq_irqoff(unsigned int nr);
void __raise_softirq_irqoff(unsigned int nr);
u32 local_softirq_pending(void);

/* Runs this CPU's pending softirqs now unless in interrupt context. */
void do_softirq(void);

/* Tasklets */
struct tasklet_struct {
	struct tasklet_struct *next;
	unsigned long state;
	atomic_t count;
	bool use_callback;
	union {
		void (*func)(unsigned long data);
		void (*callback)(struct tasklet_struct *t);
	};
	unsigned long data;
};

enum {
	TASKLET_STATE_SCHED,
	TASKLET_STATE_RUN,
};

#define DECLARE_TASKLET(name, _callback)                        \
	struct tasklet_struct name = { .next = nullptr,         \
				       .state = 0,              \
				       .count = ATOMIC_INIT(0), \
				       .use_callback = true,    \
				       .callback = (_callback), \
				       .data = 0 }
#define DECLARE_TASKLET_DISABLED(name, _callback)               \
	struct tasklet_struct name = { .next = nullptr,         \
				       .state = 0,              \
				       .count = ATOMIC_INIT(1), \
				       .use_callback = true,    \
				       .callback = (_callback), \
				       .data = 0 }
#define from_tasklet(var, callback_tasklet, tasklet_fieldname) \
	container_of(callback_tasklet, __typeof__(*var), tasklet_fieldname)

void tasklet_init(struct tasklet_struct *t, void (*func)(unsigned long), unsigned long data);
void tasklet_setup(struct tasklet_struct *t, void (*callback)(struct tasklet_struct *));
void __tasklet_schedule(struct tasklet_struct *t);
void __tasklet_hi_schedule(struct tasklet_struct *t);
void tasklet_kill(struct tasklet_struct *t);
void tasklet_unlock_wait(struct tasklet_struct *t);

static inline void tasklet_schedule(struct tasklet_struct *t)
{
	if (!test_and_set_bit(TASKLET_STATE_SCHED, &t->state))
		__tasklet_schedule(t);
}

static inline void tasklet_hi_schedule(struct tasklet_struct *t)
{
	if (!test_and_set_bit(TASKLET_STATE_SCHED, &t->state))
		__tasklet_hi_schedule(t);
}

static inline void tasklet_disable_nosync(struct tasklet_struct *t)
{
	atomic_inc(&t->count);
	/* Pairs with the count read in tasklet_action_common(). */
	smp_mb__after_atomic();
}

static inline void tasklet_disable(struct tasklet_struct *t)
{
	tasklet_disable_nosync(t);
	tasklet_unlock_wait(t);
	smp_mb();
}

static inline void tasklet_enable(struct tasklet_struct *t)
{
	/* Orders the disabled section before the count drop seen by the runner. */
	smp_mb__before_atomic();
	atomic_dec(&t->count);
}

namespace uk
{

// Runs `cpu`'s pending softirqs now, in its softirq context, from the
// calling thread (deferred like any softirq if the caller has that CPU's
// bottom halves or interrupts off).
void softirq_run_pending(int cpu);
// Pending mask of `cpu` (tests).
uint32_t softirq_pending(int cpu);
// false: deterministic mode, no ksoftirqd; true (default): ksoftirqd runs
// softirqs raised from task context.
void softirq_set_threads(bool enabled);
bool softirq_threads_enabled();
// Irq exit for interrupts the shim itself delivers (timers): runs `cpu`'s
// pending softirqs in its softirq context.
void softirq_irq_exit(int cpu);
// Number of times each softirq ran on `cpu` (kstat_softirqs_cpu).
unsigned int kstat_softirqs_cpu(unsigned int irq, int cpu);

} // namespace uk

#endif /* UK_LINUX_INTERRUPT_H */
