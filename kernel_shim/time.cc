// SPDX-License-Identifier: GPL-2.0-only
/*
 * Delays and sleeps (kernel/time/sleep_timeout.c, include/linux/delay.h).
 * Busy-wait delays spin on the host clock; sleeps go through
 * schedule_timeout()/schedule_hrtimeout_range() and so follow the active
 * clock (a test advances the virtual clock to end them).
 */
#include <uk/linux/delay.h>
#include <uk/linux/hrtimer.h>
#include <uk/linux/jiffies.h>
#include <uk/linux/kernel.h>
#include <uk/linux/sched.h>
#include <uk/linux/sched/signal.h>
#include <uk/shim/clock.h>
#include <uk/shim/futex.h>

#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <time.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>

/* ---- jiffies on the host clock (see <uk/linux/jiffies.h>) ---- */

namespace uk
{

namespace
{

unsigned long jiffies_at(u64 ns)
{
	return INITIAL_JIFFIES + (unsigned long)(ns / TICK_NSEC);
}

} // namespace

// Set to the real value by the tick's constructor below; a reader that
// runs before it (another static constructor) sees the boot value.
alignas(64) constinit std::atomic<unsigned long> jiffies_host{ INITIAL_JIFFIES };

unsigned long jiffies_update(u64 now_ns)
{
	unsigned long j = jiffies_at(now_ns);
	unsigned long cur = jiffies_host.load(std::memory_order_relaxed);

	// Several ticks (the tick thread, each CPU's timer thread) race here:
	// the largest value wins, so jiffies never goes back.
	while (time_after(j, cur)) {
		if (jiffies_host.compare_exchange_weak(cur, j, std::memory_order_relaxed))
			return j;
	}
	return cur;
}

namespace
{

// The periodic tick: one store per jiffy, at the boundary.
void *jiffies_tick_thread(void *)
{
	pthread_setname_np(pthread_self(), "uk-tick");
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
	for (;;) {
		unsigned long j = jiffies_update(host_clock_ns());
		u64 next = __uk_jiffies_to_clock_ns(j + 1);
		struct timespec ts = { .tv_sec = (time_t)(next / NSEC_PER_SEC),
				       .tv_nsec = (long)(next % NSEC_PER_SEC) };

		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr);
	}
	return nullptr;
}

void jiffies_tick_start()
{
	jiffies_update(host_clock_ns());

	// The tick takes no signals: they are for the program's threads.
	sigset_t all, old;
	pthread_attr_t attr;
	pthread_t th;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	if (pthread_create(&th, &attr, jiffies_tick_thread, nullptr) != 0) {
		fprintf(stderr, "ukern: cannot start the jiffies tick thread\n");
		abort();
	}
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

struct JiffiesTick {
	JiffiesTick()
	{
		jiffies_tick_start();
		// A fork child has no tick thread until it starts its own.
		pthread_atfork(nullptr, nullptr, jiffies_tick_start);
	}
} jiffies_tick;

} // namespace

} // namespace uk

void ndelay(unsigned long nsecs)
{
	u64 end = uk::host_clock_ns() + nsecs;

	while (uk::host_clock_ns() < end)
		uk::cpu_pause();
}

void msleep(unsigned int msecs)
{
	unsigned long timeout = msecs_to_jiffies(msecs) + 1;

	while (timeout)
		timeout = schedule_timeout_uninterruptible(timeout);
}

unsigned long msleep_interruptible(unsigned int msecs)
{
	unsigned long timeout = msecs_to_jiffies(msecs) + 1;

	while (timeout && !signal_pending(current))
		timeout = schedule_timeout_interruptible(timeout);
	return jiffies_to_msecs(timeout);
}

void usleep_range_state(unsigned long min, unsigned long max, unsigned int state)
{
	ktime_t exp = ktime_add_us(ktime_get(), min);
	u64 delta = (u64)(max - min) * NSEC_PER_USEC;

	for (;;) {
		__set_current_state(state);
		/* Only a timer expiry (return 0) ends the sleep. */
		if (!schedule_hrtimeout_range(&exp, delta, HRTIMER_MODE_ABS))
			break;
	}
}

void usleep_range(unsigned long min, unsigned long max)
{
	usleep_range_state(min, max, TASK_UNINTERRUPTIBLE);
}

void fsleep(unsigned long usecs)
{
	if (usecs <= 10)
		udelay(usecs);
	else if (usecs <= 20000)
		usleep_range(usecs, 2 * usecs);
	else
		msleep(DIV_ROUND_UP(usecs, 1000));
}
