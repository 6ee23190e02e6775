// SPDX-License-Identifier: GPL-2.0-only
/*
 * High-resolution timers (kernel/time/hrtimer.c) on the clock engine of
 * clock.cc. Each CPU has an hrtimer_cpu_base with two clock bases: [0] for
 * timers that expire in hardirq context, [1] for HRTIMER_MODE_SOFT ones
 * (softirq context). The lock protocol follows the kernel: timer->base
 * names the base whose lock protects the timer, a timer moving between CPUs
 * points at migration_base meanwhile, and base->running names the timer
 * whose callback is executing.
 *
 * Upstream: kernel/time/hrtimer.c @ v6.12
 */
#include <mutex>

#include <uk/linux/errno.h>
#include <uk/linux/hrtimer.h>
#include <uk/linux/printk.h>
#include <uk/linux/sched.h>
#include <uk/linux/smp.h>

#include "shim/clock_internal.h"

struct hrtimer_cpu_base;

struct hrtimer_clock_base {
	struct hrtimer_cpu_base *cpu_base;
	unsigned int index; /* 0: hard, 1: soft */
	uk::TimerHeap active;
	struct hrtimer *running;
};

struct hrtimer_cpu_base {
	std::mutex lock;
	unsigned int cpu;
	u64 seq;
	struct hrtimer_clock_base clock_base[2];
	uk::RunWait wait;
};

namespace
{

hrtimer_cpu_base *cpu_bases()
{
	static hrtimer_cpu_base *bases = [] {
		auto *b = new hrtimer_cpu_base[NR_CPUS];
		for (unsigned int i = 0; i < NR_CPUS; i++) {
			b[i].cpu = i;
			b[i].seq = 0;
			for (unsigned int j = 0; j < 2; j++) {
				b[i].clock_base[j].cpu_base = &b[i];
				b[i].clock_base[j].index = j;
				b[i].clock_base[j].running = nullptr;
			}
		}
		return b;
	}();
	return bases;
}

/* A timer on its way between two CPUs' bases points here. */
hrtimer_cpu_base migration_cpu_base;
hrtimer_clock_base migration_base = { &migration_cpu_base, 0, {}, nullptr };

hrtimer_clock_base *base_read(const struct hrtimer *timer)
{
	return __atomic_load_n(&timer->base, __ATOMIC_ACQUIRE);
}

void base_write(struct hrtimer *timer, hrtimer_clock_base *base)
{
	__atomic_store_n(&timer->base, base, __ATOMIC_RELEASE);
}

void state_write(struct hrtimer *timer, u8 state)
{
	__atomic_store_n(&timer->state, state, __ATOMIC_RELAXED);
}

hrtimer *running_read(hrtimer_clock_base *base)
{
	return __atomic_load_n(&base->running, __ATOMIC_ACQUIRE);
}

/* Locks the base the timer is on; retries while it migrates. */
hrtimer_clock_base *lock_hrtimer_base(const struct hrtimer *timer)
{
	for (;;) {
		hrtimer_clock_base *base = base_read(timer);

		if (likely(base != &migration_base)) {
			base->cpu_base->lock.lock();
			if (likely(base == base_read(timer)))
				return base;
			base->cpu_base->lock.unlock();
		}
		uk::cpu_pause();
	}
}

void unlock_hrtimer_base(hrtimer_clock_base *base)
{
	base->cpu_base->lock.unlock();
}

/* Returns true if the timer became the earliest on its base. */
bool enqueue_hrtimer(struct hrtimer *timer, hrtimer_clock_base *base)
{
	timer->node.seq = uk::timerq_next_seq(&base->cpu_base->seq);
	base->active.push(&timer->node);
	state_write(timer, HRTIMER_STATE_ENQUEUED);
	return base->active.top() == &timer->node;
}

void __remove_hrtimer(struct hrtimer *timer, hrtimer_clock_base *base, u8 newstate)
{
	if (timer->state & HRTIMER_STATE_ENQUEUED)
		base->active.remove(&timer->node);
	state_write(timer, newstate);
}

int remove_hrtimer(struct hrtimer *timer, hrtimer_clock_base *base)
{
	if (!(timer->state & HRTIMER_STATE_ENQUEUED))
		return 0;
	__remove_hrtimer(timer, base, HRTIMER_STATE_INACTIVE);
	return 1;
}

/*
 * Moves the timer to this CPU's base, unless its callback is running: then
 * it stays where it is (the callback may be re-arming it). Called and
 * returns with the (new) base locked.
 */
hrtimer_clock_base *switch_hrtimer_base(struct hrtimer *timer, hrtimer_clock_base *base)
{
	int this_cpu = smp_processor_id();
	hrtimer_clock_base *new_base = &cpu_bases()[this_cpu].clock_base[base->index];

	if (base == new_base)
		return base;
	if (running_read(base) == timer)
		return base;
	base_write(timer, &migration_base);
	unlock_hrtimer_base(base);
	new_base->cpu_base->lock.lock();
	base_write(timer, new_base);
	return new_base;
}

void __hrtimer_setup(struct hrtimer *timer, enum hrtimer_restart (*fn)(struct hrtimer *),
		     clockid_t clock_id, enum hrtimer_mode mode)
{
	bool softtimer = !!(mode & HRTIMER_MODE_SOFT);

	switch (clock_id) {
	case CLOCK_MONOTONIC:
	case CLOCK_REALTIME:
	case CLOCK_BOOTTIME:
	case CLOCK_TAI:
		break;
	default:
		WARN(1, "hrtimer: invalid clock id %d\n", clock_id);
	}
	memset(timer, 0, sizeof(*timer));
	timer->node.idx = -1;
	timer->is_soft = softtimer;
	timer->is_hard = !!(mode & HRTIMER_MODE_HARD);
	timer->function = fn;
	timer->base = &cpu_bases()[raw_smp_processor_id()].clock_base[softtimer ? 1 : 0];
}

} // namespace

void hrtimer_setup(struct hrtimer *timer, enum hrtimer_restart (*function)(struct hrtimer *),
		   clockid_t clock_id, enum hrtimer_mode mode)
{
	if (WARN_ON_ONCE(!function))
		return;
	__hrtimer_setup(timer, function, clock_id, mode);
}

void hrtimer_setup_on_stack(struct hrtimer *timer,
			    enum hrtimer_restart (*function)(struct hrtimer *), clockid_t clock_id,
			    enum hrtimer_mode mode)
{
	hrtimer_setup(timer, function, clock_id, mode);
}

void hrtimer_init(struct hrtimer *timer, clockid_t clock_id, enum hrtimer_mode mode)
{
	__hrtimer_setup(timer, nullptr, clock_id, mode);
}

void hrtimer_init_on_stack(struct hrtimer *timer, clockid_t clock_id, enum hrtimer_mode mode)
{
	__hrtimer_setup(timer, nullptr, clock_id, mode);
}

void hrtimer_start_range_ns(struct hrtimer *timer, ktime_t tim, u64 delta_ns,
			    const enum hrtimer_mode mode)
{
	hrtimer_clock_base *base, *new_base;
	bool first;
	int cpu;

	/* The soft/hard choice is made at setup; start must agree. */
	WARN_ON_ONCE(!(mode & HRTIMER_MODE_SOFT) ^ !timer->is_soft);
	if (WARN_ON_ONCE(!timer->function))
		return;

	base = lock_hrtimer_base(timer);
	remove_hrtimer(timer, base);
	if (mode & HRTIMER_MODE_REL)
		tim = ktime_add_safe(tim, ktime_get());
	hrtimer_set_expires_range_ns(timer, tim, delta_ns);
	new_base = switch_hrtimer_base(timer, base);
	first = enqueue_hrtimer(timer, new_base);
	cpu = new_base->cpu_base->cpu;
	tim = timer->node.expires;
	unlock_hrtimer_base(new_base);
	if (first)
		uk::clock_kick(cpu, tim);
}

/* Lock held: 1 removed, 0 not queued, -1 running (and *seq sampled). */
static int __hrtimer_try_to_cancel(struct hrtimer *timer, hrtimer_clock_base **basep, u32 *seq)
{
	hrtimer_clock_base *base = lock_hrtimer_base(timer);
	int ret = -1;

	if (running_read(base) != timer)
		ret = remove_hrtimer(timer, base);
	else
		*seq = base->cpu_base->wait.seq.load(std::memory_order_acquire);
	*basep = base;
	unlock_hrtimer_base(base);
	return ret;
}

int hrtimer_try_to_cancel(struct hrtimer *timer)
{
	hrtimer_clock_base *base;
	u32 seq;

	if (!hrtimer_active(timer))
		return 0;
	return __hrtimer_try_to_cancel(timer, &base, &seq);
}

int hrtimer_cancel(struct hrtimer *timer)
{
	for (;;) {
		hrtimer_clock_base *base;
		u32 seq = 0;
		int ret = __hrtimer_try_to_cancel(timer, &base, &seq);

		if (ret >= 0)
			return ret;
		/* Waits for the runner's done() after it clears base->running. */
		base->cpu_base->wait.wait(seq);
	}
}

bool hrtimer_active(const struct hrtimer *timer)
{
	hrtimer_clock_base *base = lock_hrtimer_base(timer);
	bool ret = timer->state != HRTIMER_STATE_INACTIVE || base->running == timer;

	unlock_hrtimer_base(base);
	return ret;
}

bool hrtimer_callback_running(struct hrtimer *timer)
{
	return running_read(base_read(timer)) == timer;
}

ktime_t __hrtimer_get_remaining(const struct hrtimer *timer, bool adjust)
{
	hrtimer_clock_base *base = lock_hrtimer_base(timer);
	ktime_t rem = hrtimer_expires_remaining(timer);

	unlock_hrtimer_base(base);
	return rem;
}

u64 hrtimer_forward(struct hrtimer *timer, ktime_t now, ktime_t interval)
{
	ktime_t delta;
	u64 orun = 1;

	delta = ktime_sub(now, hrtimer_get_expires(timer));
	if (delta < 0)
		return 0;
	if (WARN_ON(timer->state & HRTIMER_STATE_ENQUEUED))
		return 0;
	if (interval < (ktime_t)hrtimer_resolution)
		interval = hrtimer_resolution;
	if (unlikely(delta >= interval)) {
		s64 incr = ktime_to_ns(interval);

		orun = (u64)(delta / incr);
		hrtimer_add_expires_ns(timer, incr * orun);
		if (hrtimer_get_expires_tv64(timer) > now)
			return orun;
		/* Landed exactly on @now: one more interval. */
		orun++;
	}
	hrtimer_add_expires(timer, interval);
	return orun;
}

/* Sleepers */
static enum hrtimer_restart hrtimer_wakeup(struct hrtimer *timer)
{
	struct hrtimer_sleeper *t = container_of(timer, struct hrtimer_sleeper, timer);
	struct task_struct *task = t->task;

	/* The sleeper reads ->task after schedule(); the wake-up orders it. */
	__atomic_store_n(&t->task, nullptr, __ATOMIC_RELAXED);
	if (task)
		wake_up_process(task);
	return HRTIMER_NORESTART;
}

void hrtimer_setup_sleeper_on_stack(struct hrtimer_sleeper *sl, clockid_t clock_id,
				    enum hrtimer_mode mode)
{
	__hrtimer_setup(&sl->timer, hrtimer_wakeup, clock_id, mode);
	sl->task = current;
}

void hrtimer_sleeper_start_expires(struct hrtimer_sleeper *sl, enum hrtimer_mode mode)
{
	hrtimer_start_expires(&sl->timer, mode);
}

int schedule_hrtimeout_range_clock(ktime_t *expires, u64 delta, const enum hrtimer_mode mode,
				   clockid_t clock_id)
{
	struct hrtimer_sleeper t;

	if (expires && *expires == 0) {
		__set_current_state(TASK_RUNNING);
		return 0;
	}
	if (!expires) {
		schedule();
		return -EINTR;
	}
	hrtimer_setup_sleeper_on_stack(&t, clock_id, mode);
	hrtimer_set_expires_range_ns(&t.timer, *expires, delta);
	hrtimer_sleeper_start_expires(&t, mode);
	if (likely(__atomic_load_n(&t.task, __ATOMIC_RELAXED)))
		schedule();
	hrtimer_cancel(&t.timer);
	destroy_hrtimer_on_stack(&t.timer);
	__set_current_state(TASK_RUNNING);
	return !__atomic_load_n(&t.task, __ATOMIC_RELAXED) ? 0 : -EINTR;
}

int schedule_hrtimeout_range(ktime_t *expires, u64 delta, const enum hrtimer_mode mode)
{
	return schedule_hrtimeout_range_clock(expires, delta, mode, CLOCK_MONOTONIC);
}

int schedule_hrtimeout(ktime_t *expires, const enum hrtimer_mode mode)
{
	return schedule_hrtimeout_range(expires, 0, mode);
}

namespace uk
{

bool hrtimer_peek(int cpu, int index, s64 *expires, u64 *seq, bool trylock)
{
	hrtimer_cpu_base *cpu_base = &cpu_bases()[cpu];
	std::unique_lock<std::mutex> g(cpu_base->lock, std::defer_lock);

	/* trylock: a base locked by someone else reads as empty. */
	if (!trylock)
		g.lock();
	else if (!g.try_lock())
		return false;
	uk_timerq_node *n = cpu_base->clock_base[index].active.top();

	if (!n)
		return false;
	*expires = n->expires;
	*seq = n->seq;
	return true;
}

/*
 * The expiry interrupt (__hrtimer_run_queues/__run_hrtimer): runs in the
 * CPU's hardirq (index 0) or softirq (index 1) context.
 */
void hrtimer_run_queue(int cpu, int index, s64 now, bool one)
{
	hrtimer_cpu_base *cpu_base = &cpu_bases()[cpu];
	hrtimer_clock_base *base = &cpu_base->clock_base[index];
	std::unique_lock<std::mutex> g(cpu_base->lock);

	for (;;) {
		uk_timerq_node *n = base->active.top();
		struct hrtimer *timer;
		enum hrtimer_restart (*fn)(struct hrtimer *);
		enum hrtimer_restart restart;

		if (!n || n->expires > now)
			break;
		timer = container_of(n, struct hrtimer, node);
		/* Published before the dequeue so hrtimer_active() never sees a gap. */
		__atomic_store_n(&base->running, timer, __ATOMIC_RELEASE);
		__remove_hrtimer(timer, base, HRTIMER_STATE_INACTIVE);
		fn = timer->function;
		g.unlock();
		timer_callback_depth++;
		restart = fn(timer);
		timer_callback_depth--;
		g.lock();
		if (restart != HRTIMER_NORESTART && !(timer->state & HRTIMER_STATE_ENQUEUED))
			enqueue_hrtimer(timer, base);
		__atomic_store_n(&base->running, nullptr, __ATOMIC_RELEASE);
		/* Pairs with the seq sampled by hrtimer_cancel() under the lock. */
		cpu_base->wait.done();
		if (one)
			break;
	}
}

} // namespace uk
