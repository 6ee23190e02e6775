// SPDX-License-Identifier: GPL-2.0-only
/*
 * timer_list (kernel/time/timer.c) on the clock engine of clock.cc. Each
 * CPU has a timer_base; the low bits of timer->flags name the base whose
 * lock protects the timer (TIMER_MIGRATING while it moves), and
 * base->running_timer names the timer whose callback executes. Instead of
 * the wheel, pending timers sit in a heap keyed by the clock time at which
 * jiffies reaches ->expires, so they fire exactly on that jiffy.
 *
 * Upstream: kernel/time/timer.c @ v6.12
 */
#include <mutex>

#include <uk/linux/hardirq.h>
#include <uk/linux/printk.h>
#include <uk/linux/smp.h>
#include <uk/linux/timer.h>

#include "shim/clock_internal.h"

namespace
{

struct timer_base {
	std::mutex lock;
	unsigned int cpu;
	u64 seq;
	struct timer_list *running_timer;
	uk::TimerHeap heap;
	uk::RunWait wait;
};

timer_base *timer_bases()
{
	static timer_base *bases = [] {
		auto *b = new timer_base[NR_CPUS];
		for (unsigned int i = 0; i < NR_CPUS; i++) {
			b[i].cpu = i;
			b[i].seq = 0;
			b[i].running_timer = nullptr;
		}
		return b;
	}();
	return bases;
}

enum {
	MOD_TIMER_PENDING_ONLY = 0x01,
	MOD_TIMER_REDUCE = 0x02,
	MOD_TIMER_NOTPENDING = 0x04,
};

u32 flags_read(const struct timer_list *timer)
{
	return __atomic_load_n(&timer->flags, __ATOMIC_ACQUIRE);
}

void flags_write(struct timer_list *timer, u32 flags)
{
	__atomic_store_n(&timer->flags, flags, __ATOMIC_RELEASE);
}

struct timer_list *running_read(timer_base *base)
{
	return __atomic_load_n(&base->running_timer, __ATOMIC_ACQUIRE);
}

/* Clock time at which jiffies reaches @expires (now if already reached). */
s64 expires_to_ns(unsigned long expires)
{
	/* One clock read: jiffies derived from the same instant. */
	u64 now = ::uk::clock_now_ns();
	unsigned long j = INITIAL_JIFFIES + (unsigned long)(now / TICK_NSEC);
	long delta = (long)(expires - j);
	u64 ns;

	if (delta <= 0)
		return (s64)now;
	ns = __uk_jiffies_to_clock_ns(j);
	if ((u64)delta > (u64)(KTIME_MAX - ns) / TICK_NSEC)
		return KTIME_MAX;
	return (s64)(ns + (u64)delta * TICK_NSEC);
}

timer_base *lock_timer_base(struct timer_list *timer)
{
	for (;;) {
		u32 tf = flags_read(timer);

		if (!(tf & TIMER_MIGRATING)) {
			timer_base *base = &timer_bases()[tf & TIMER_CPUMASK];

			base->lock.lock();
			if (flags_read(timer) == tf)
				return base;
			base->lock.unlock();
		}
		uk::cpu_pause();
	}
}

int detach_if_pending(struct timer_list *timer, timer_base *base)
{
	if (!timer_pending(timer))
		return 0;
	base->heap.remove(&timer->node);
	return 1;
}

/* Returns true if the timer became the base's earliest. */
bool enqueue_timer(timer_base *base, struct timer_list *timer, unsigned long expires)
{
	/*
	 * Marked: callers such as blk_add_timer() read ->expires locklessly.
	 * A compiler atomic, not WRITE_ONCE(): the base lock is a host mutex,
	 * and no explorer scheduling point may fall inside it.
	 */
	__atomic_store_n(&timer->expires, expires, __ATOMIC_RELAXED);
	timer->node.expires = expires_to_ns(expires);
	timer->node.seq = uk::timerq_next_seq(&base->seq);
	base->heap.push(&timer->node);
	return base->heap.top() == &timer->node;
}

/* Moves @timer (not queued) from @base to @new_base; returns @new_base locked. */
timer_base *switch_timer_base(struct timer_list *timer, timer_base *base, timer_base *new_base)
{
	if (base == new_base)
		return base;
	/* A running callback keeps the timer on its base (it may re-arm it). */
	if (running_read(base) == timer)
		return base;
	flags_write(timer, timer->flags | TIMER_MIGRATING);
	base->lock.unlock();
	new_base->lock.lock();
	flags_write(timer, (timer->flags & ~TIMER_BASEMASK) | new_base->cpu);
	return new_base;
}

int __mod_timer(struct timer_list *timer, unsigned long expires, unsigned int options, int cpu)
{
	timer_base *base, *new_base;
	int ret = 0;
	bool first;
	s64 when;

	base = lock_timer_base(timer);
	/* Already pending for this expiry (or an earlier one, for timer_reduce()). */
	if (timer_pending(timer) && cpu < 0 && !(options & MOD_TIMER_NOTPENDING)) {
		if (options & MOD_TIMER_REDUCE ? time_before_eq(timer->expires, expires)
					       : timer->expires == expires) {
			ret = 1;
			goto out_unlock;
		}
	}

	/* timer_shutdown*() cleared ->function: re-arming is silently ignored. */
	if (!timer->function)
		goto out_unlock;
	if ((options & MOD_TIMER_PENDING_ONLY) && !timer_pending(timer))
		goto out_unlock;

	ret = detach_if_pending(timer, base);
	if (cpu < 0)
		cpu = smp_processor_id();
	new_base = &timer_bases()[cpu];
	base = switch_timer_base(timer, base, new_base);
	first = enqueue_timer(base, timer, expires);
	when = timer->node.expires;
	cpu = base->cpu;
	base->lock.unlock();
	if (first)
		uk::clock_kick(cpu, when);
	return ret;

out_unlock:
	base->lock.unlock();
	return ret;
}

int __try_to_del_timer_sync(struct timer_list *timer, bool shutdown, timer_base **basep, u32 *seq)
{
	timer_base *base = lock_timer_base(timer);
	int ret = -1;

	if (running_read(base) != timer)
		ret = detach_if_pending(timer, base);
	else
		*seq = base->wait.seq.load(std::memory_order_acquire);
	if (shutdown)
		__atomic_store_n(&timer->function, nullptr, __ATOMIC_RELAXED);
	*basep = base;
	base->lock.unlock();
	return ret;
}

int __timer_delete_sync(struct timer_list *timer, bool shutdown)
{
	/* Waiting for a callback from hardirq context could deadlock. */
	WARN_ON(in_hardirq() && !(timer->flags & TIMER_IRQSAFE));
	for (;;) {
		timer_base *base;
		u32 seq = 0;
		int ret = __try_to_del_timer_sync(timer, shutdown, &base, &seq);

		if (ret >= 0)
			return ret;
		/* Sleeps until the runner's done() after clearing running_timer. */
		base->wait.wait(seq);
	}
}

int __timer_delete(struct timer_list *timer, bool shutdown)
{
	timer_base *base;
	int ret = 0;

	if (timer_pending(timer) || shutdown) {
		base = lock_timer_base(timer);
		ret = detach_if_pending(timer, base);
		if (shutdown)
			__atomic_store_n(&timer->function, nullptr, __ATOMIC_RELAXED);
		base->lock.unlock();
	}
	return ret;
}

} // namespace

void init_timer_key(struct timer_list *timer, void (*func)(struct timer_list *), unsigned int flags,
		    const char *name, void *key)
{
	timer->node.expires = 0;
	timer->node.seq = 0;
	timer->node.idx = -1;
	timer->expires = 0;
	timer->function = func;
	if (WARN_ON_ONCE(flags & ~TIMER_INIT_FLAGS))
		flags &= TIMER_INIT_FLAGS;
	timer->flags = flags | raw_smp_processor_id();
}

int mod_timer(struct timer_list *timer, unsigned long expires)
{
	return __mod_timer(timer, expires, 0, -1);
}

int mod_timer_pending(struct timer_list *timer, unsigned long expires)
{
	return __mod_timer(timer, expires, MOD_TIMER_PENDING_ONLY, -1);
}

int timer_reduce(struct timer_list *timer, unsigned long expires)
{
	return __mod_timer(timer, expires, MOD_TIMER_REDUCE, -1);
}

void add_timer(struct timer_list *timer)
{
	if (WARN_ON_ONCE(timer_pending(timer)))
		return;
	__mod_timer(timer, timer->expires, MOD_TIMER_NOTPENDING, -1);
}

void add_timer_local(struct timer_list *timer)
{
	if (WARN_ON_ONCE(timer_pending(timer)))
		return;
	timer->flags |= TIMER_PINNED;
	__mod_timer(timer, timer->expires, MOD_TIMER_NOTPENDING, -1);
}

void add_timer_global(struct timer_list *timer)
{
	if (WARN_ON_ONCE(timer_pending(timer)))
		return;
	timer->flags &= ~TIMER_PINNED;
	__mod_timer(timer, timer->expires, MOD_TIMER_NOTPENDING, -1);
}

void add_timer_on(struct timer_list *timer, int cpu)
{
	if (WARN_ON_ONCE(timer_pending(timer)))
		return;
	if (WARN_ON_ONCE(cpu < 0 || (unsigned int)cpu >= nr_cpu_ids))
		return;
	__mod_timer(timer, timer->expires, MOD_TIMER_NOTPENDING, cpu);
}

int timer_delete(struct timer_list *timer)
{
	return __timer_delete(timer, false);
}

int timer_shutdown(struct timer_list *timer)
{
	return __timer_delete(timer, true);
}

int try_to_del_timer_sync(struct timer_list *timer)
{
	timer_base *base;
	u32 seq;

	return __try_to_del_timer_sync(timer, false, &base, &seq);
}

int timer_delete_sync_try(struct timer_list *timer)
{
	return try_to_del_timer_sync(timer);
}

int timer_delete_sync(struct timer_list *timer)
{
	return __timer_delete_sync(timer, false);
}

int timer_shutdown_sync(struct timer_list *timer)
{
	return __timer_delete_sync(timer, true);
}

namespace uk
{

bool timer_peek(int cpu, s64 *expires, u64 *seq, bool trylock)
{
	timer_base *base = &timer_bases()[cpu];
	std::unique_lock<std::mutex> g(base->lock, std::defer_lock);

	/* trylock: a base locked by someone else reads as empty. */
	if (!trylock)
		g.lock();
	else if (!g.try_lock())
		return false;
	uk_timerq_node *n = base->heap.top();

	if (!n)
		return false;
	*expires = n->expires;
	*seq = n->seq;
	return true;
}

/* expire_timers(): runs in the CPU's softirq context (TIMER_SOFTIRQ). */
void timer_run(int cpu, s64 now, bool one)
{
	timer_base *base = &timer_bases()[cpu];
	std::unique_lock<std::mutex> g(base->lock);

	for (;;) {
		uk_timerq_node *n = base->heap.top();
		struct timer_list *timer;
		void (*fn)(struct timer_list *);

		if (!n || n->expires > now)
			break;
		timer = container_of(n, struct timer_list, node);
		__atomic_store_n(&base->running_timer, timer, __ATOMIC_RELEASE);
		base->heap.remove(n);
		fn = timer->function;
		g.unlock();
		if (fn) {
			timer_callback_depth++;
			fn(timer);
			timer_callback_depth--;
		}
		g.lock();
		__atomic_store_n(&base->running_timer, nullptr, __ATOMIC_RELEASE);
		/* Pairs with the seq sampled by timer_delete_sync() under the lock. */
		base->wait.done();
		if (one)
			break;
	}
}

} // namespace uk
