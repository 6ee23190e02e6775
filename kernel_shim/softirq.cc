// SPDX-License-Identifier: GPL-2.0-only
/*
 * Softirqs and tasklets (kernel/softirq.c) on the CPU model of
 * <uk/shim/cpu.h>. See <uk/linux/interrupt.h> for when pending softirqs
 * run. Handlers always run in the raising CPU's softirq context, entered
 * with uk::run_in_softirq().
 *
 * Upstream: kernel/softirq.c @ v6.12
 */
#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <cstdio>
#include <mutex>
#include <thread>

#include <uk/linux/interrupt.h>
#include <uk/linux/printk.h>
#include <uk/linux/timekeeping.h>
#include <uk/shim/clock.h>
#include <uk/shim/futex.h>

#include "shim/clock_internal.h"

#define MAX_SOFTIRQ_RESTART 10

const char *const softirq_to_name[NR_SOFTIRQS] = {
	"HI",	    "TIMER",   "NET_TX", "NET_RX",  "BLOCK",
	"IRQ_POLL", "TASKLET", "SCHED",	 "HRTIMER", "RCU",
};

namespace
{

struct softirq_action softirq_vec[NR_SOFTIRQS];

struct alignas(64) SoftirqCpu {
	std::atomic<u32> pending{ 0 };
	/* A run is queued on the CPU model's deferred interrupt work. */
	std::atomic<bool> exit_queued{ false };
	/* ksoftirqd */
	std::atomic<u32> kick{ 0 };
	std::atomic<bool> sleeping{ false };
	std::atomic<int> thread_state{ 0 };
	std::atomic<unsigned int> counts[NR_SOFTIRQS];
};

SoftirqCpu softirq_cpus[NR_CPUS];
std::atomic<bool> threads_enabled{ true };

void ksoftirqd_thread(int cpu);

void wakeup_softirqd(int cpu)
{
	SoftirqCpu &sc = softirq_cpus[cpu];

	if (!threads_enabled.load(std::memory_order_relaxed))
		return;
	if (unlikely(sc.thread_state.load(std::memory_order_acquire) == 0)) {
		int expected = 0;

		if (sc.thread_state.compare_exchange_strong(expected, 1))
			std::thread(ksoftirqd_thread, cpu).detach();
	}
	/* Pairs with the sleeping store / pending load in ksoftirqd_thread(). */
	if (sc.sleeping.load(std::memory_order_seq_cst)) {
		sc.kick.fetch_add(1, std::memory_order_seq_cst);
		uk::futex_wake(&sc.kick);
	}
}

/* Runs in @cpu's softirq context. */
void __do_softirq(int cpu)
{
	SoftirqCpu &sc = softirq_cpus[cpu];
	int restart = MAX_SOFTIRQ_RESTART;
	u32 pending;

again:
	pending = sc.pending.exchange(0, std::memory_order_acq_rel);
	while (pending) {
		unsigned int nr = __builtin_ctz(pending);
		void (*action)(void) = __atomic_load_n(&softirq_vec[nr].action, __ATOMIC_ACQUIRE);

		pending &= ~(1u << nr);
		sc.counts[nr].fetch_add(1, std::memory_order_relaxed);
		if (action)
			action();
	}
	if (sc.pending.load(std::memory_order_acquire)) {
		if (--restart)
			goto again;
		wakeup_softirqd(cpu);
	}
}

void ksoftirqd_thread(int cpu)
{
	SoftirqCpu &sc = softirq_cpus[cpu];
	char name[16];

	snprintf(name, sizeof(name), "ksoftirqd/%d", cpu);
	pthread_setname_np(pthread_self(), name);
	for (;;) {
		u32 w;

		if (threads_enabled.load(std::memory_order_relaxed) &&
		    sc.pending.load(std::memory_order_acquire)) {
			uk::run_in_softirq(cpu, [cpu] { __do_softirq(cpu); });
			continue;
		}
		sc.sleeping.store(true, std::memory_order_seq_cst);
		w = sc.kick.load(std::memory_order_seq_cst);
		if (!threads_enabled.load(std::memory_order_seq_cst) ||
		    !sc.pending.load(std::memory_order_seq_cst))
			uk::futex_wait(&sc.kick, w);
		sc.sleeping.store(false, std::memory_order_relaxed);
	}
}

/*
 * Raised in interrupt context (or with bottom halves off): run when the CPU
 * leaves it, through the CPU model's deferred softirq work.
 */
void defer_to_irq_exit(int cpu)
{
	SoftirqCpu &sc = softirq_cpus[cpu];

	if (in_serving_softirq())
		return; /* __do_softirq() restarts */
	if (uk::timer_engine_in_hardirq)
		return; /* the timer engine calls softirq_irq_exit() */
	if (!sc.exit_queued.exchange(true, std::memory_order_acq_rel)) {
		uk::run_in_softirq(cpu, [cpu] {
			softirq_cpus[cpu].exit_queued.store(false, std::memory_order_release);
			__do_softirq(cpu);
		});
	}
	/* The interrupted CPU may stay busy: let ksoftirqd make progress. */
	if (in_hardirq())
		wakeup_softirqd(cpu);
}

/* Tasklets */
struct tasklet_head {
	std::mutex lock;
	struct tasklet_struct *head = nullptr;
	struct tasklet_struct **tail = &head;
};

tasklet_head tasklet_vec[NR_CPUS];
tasklet_head tasklet_hi_vec[NR_CPUS];

void tasklet_enqueue(tasklet_head *vec, struct tasklet_struct *t, unsigned int nr, bool raise)
{
	unsigned long flags;
	int cpu;

	local_irq_save(flags);
	cpu = smp_processor_id();
	{
		std::lock_guard<std::mutex> g(vec[cpu].lock);

		t->next = nullptr;
		*vec[cpu].tail = t;
		vec[cpu].tail = &t->next;
	}
	if (raise)
		raise_softirq_irqoff(nr);
	else
		__raise_softirq_irqoff(nr);
	local_irq_restore(flags);
}

bool tasklet_trylock(struct tasklet_struct *t)
{
	return !test_and_set_bit(TASKLET_STATE_RUN, &t->state);
}

void tasklet_unlock(struct tasklet_struct *t)
{
	/* Release: the callback's effects are visible to tasklet_unlock_wait(). */
	clear_bit_unlock(TASKLET_STATE_RUN, &t->state);
}

void tasklet_action_common(tasklet_head *vec, unsigned int nr)
{
	int cpu = smp_processor_id();
	struct tasklet_struct *list;

	{
		std::lock_guard<std::mutex> g(vec[cpu].lock);

		list = vec[cpu].head;
		vec[cpu].head = nullptr;
		vec[cpu].tail = &vec[cpu].head;
	}
	while (list) {
		struct tasklet_struct *t = list;

		list = list->next;
		if (tasklet_trylock(t)) {
			if (!atomic_read(&t->count)) {
				if (!test_and_clear_bit(TASKLET_STATE_SCHED, &t->state))
					WARN_ON(1);
				if (t->use_callback)
					t->callback(t);
				else
					t->func(t->data);
				tasklet_unlock(t);
				continue;
			}
			tasklet_unlock(t);
		}
		/* Disabled or running elsewhere: requeue for a later run. */
		tasklet_enqueue(vec, t, nr, false);
	}
}

void tasklet_action(void)
{
	tasklet_action_common(tasklet_vec, TASKLET_SOFTIRQ);
}

void tasklet_hi_action(void)
{
	tasklet_action_common(tasklet_hi_vec, HI_SOFTIRQ);
}

void run_timer_softirq(void)
{
	uk::timer_run(smp_processor_id(), (s64)uk::clock_now_ns(), false);
}

void hrtimer_run_softirq(void)
{
	uk::hrtimer_run_queue(smp_processor_id(), 1, (s64)uk::clock_now_ns(), false);
}

struct SoftirqInit {
	SoftirqInit()
	{
		open_softirq(TASKLET_SOFTIRQ, tasklet_action);
		open_softirq(HI_SOFTIRQ, tasklet_hi_action);
		open_softirq(TIMER_SOFTIRQ, run_timer_softirq);
		open_softirq(HRTIMER_SOFTIRQ, hrtimer_run_softirq);
	}
} softirq_init;

} // namespace

void open_softirq(int nr, void (*action)(void))
{
	if (WARN_ON_ONCE(nr < 0 || nr >= NR_SOFTIRQS))
		return;
	__atomic_store_n(&softirq_vec[nr].action, action, __ATOMIC_RELEASE);
}

static bool or_softirq_pending(int cpu, unsigned int nr)
{
	if (WARN_ON_ONCE(nr >= NR_SOFTIRQS))
		return false;
	/* Pairs with the sleeping/pending checks in ksoftirqd_thread(). */
	softirq_cpus[cpu].pending.fetch_or(1u << nr, std::memory_order_seq_cst);
	return true;
}

void __raise_softirq_irqoff(unsigned int nr)
{
	or_softirq_pending(smp_processor_id(), nr);
}

void raise_softirq_irqoff(unsigned int nr)
{
	int cpu = smp_processor_id();

	if (!or_softirq_pending(cpu, nr))
		return;
	if (!in_interrupt())
		wakeup_softirqd(cpu);
	else
		defer_to_irq_exit(cpu);
}

void raise_softirq(unsigned int nr)
{
	unsigned long flags;

	local_irq_save(flags);
	raise_softirq_irqoff(nr);
	local_irq_restore(flags);
}

u32 local_softirq_pending(void)
{
	return softirq_cpus[smp_processor_id()].pending.load(std::memory_order_acquire);
}

void do_softirq(void)
{
	if (in_interrupt())
		return;
	uk::softirq_run_pending(smp_processor_id());
}

void tasklet_init(struct tasklet_struct *t, void (*func)(unsigned long), unsigned long data)
{
	t->next = nullptr;
	t->state = 0;
	atomic_set(&t->count, 0);
	t->func = func;
	t->use_callback = false;
	t->data = data;
}

void tasklet_setup(struct tasklet_struct *t, void (*callback)(struct tasklet_struct *))
{
	t->next = nullptr;
	t->state = 0;
	atomic_set(&t->count, 0);
	t->callback = callback;
	t->use_callback = true;
	t->data = 0;
}

void __tasklet_schedule(struct tasklet_struct *t)
{
	tasklet_enqueue(tasklet_vec, t, TASKLET_SOFTIRQ, true);
}

void __tasklet_hi_schedule(struct tasklet_struct *t)
{
	tasklet_enqueue(tasklet_hi_vec, t, HI_SOFTIRQ, true);
}

void tasklet_unlock_wait(struct tasklet_struct *t)
{
	while (test_bit(TASKLET_STATE_RUN, &t->state))
		sched_yield();
	/* Pairs with clear_bit_unlock() in tasklet_unlock(). */
	smp_mb();
}

void tasklet_kill(struct tasklet_struct *t)
{
	if (in_interrupt())
		pr_notice("Attempt to kill tasklet from interrupt\n");
	while (test_and_set_bit(TASKLET_STATE_SCHED, &t->state)) {
		while (test_bit(TASKLET_STATE_SCHED, &t->state))
			sched_yield();
	}
	tasklet_unlock_wait(t);
	clear_bit(TASKLET_STATE_SCHED, &t->state);
}

namespace uk
{

void softirq_run_pending(int cpu)
{
	run_in_softirq(cpu, [cpu] { __do_softirq(cpu); });
}

uint32_t softirq_pending(int cpu)
{
	return softirq_cpus[cpu].pending.load(std::memory_order_acquire);
}

void softirq_set_threads(bool enabled)
{
	threads_enabled.store(enabled, std::memory_order_seq_cst);
	for (unsigned int c = 0; c < NR_CPUS; c++) {
		SoftirqCpu &sc = softirq_cpus[c];

		if (!sc.thread_state.load(std::memory_order_acquire))
			continue;
		sc.kick.fetch_add(1, std::memory_order_seq_cst);
		futex_wake(&sc.kick);
		if (enabled && sc.pending.load(std::memory_order_acquire))
			wakeup_softirqd(c);
	}
}

bool softirq_threads_enabled()
{
	return threads_enabled.load(std::memory_order_relaxed);
}

void softirq_irq_exit(int cpu)
{
	if (softirq_cpus[cpu].pending.load(std::memory_order_acquire))
		run_in_softirq(cpu, [cpu] { __do_softirq(cpu); });
}

unsigned int kstat_softirqs_cpu(unsigned int irq, int cpu)
{
	return softirq_cpus[cpu].counts[irq].load(std::memory_order_relaxed);
}

} // namespace uk
