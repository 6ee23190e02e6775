// SPDX-License-Identifier: GPL-2.0-only
/*
 * Delays and sleeps (kernel/time/sleep_timeout.c, include/linux/delay.h).
 * Busy-wait delays spin on the host clock; sleeps go through
 * schedule_timeout()/schedule_hrtimeout_range() and so follow the active
 * clock (a test advances the virtual clock to end them).
 *
 * Upstream: kernel/time/timer.c @ v6.12
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
#include <mutex>
#include <new>

/* ---- jiffies (see <uk/linux/jiffies.h>) ---- */

namespace uk
{

namespace
{

unsigned long jiffies_at(u64 ns)
{
	return INITIAL_JIFFIES + (unsigned long)(ns / TICK_NSEC);
}

// Whether this process's tick thread runs, and whether it may be started.
std::atomic<bool> tick_running{ false };
std::atomic<bool> tick_starting{ false };
#if defined(UK_TSAN) || defined(UK_ASAN)
// ThreadSanitizer kills a fork child that starts a thread. Under GCC 12's
// AddressSanitizer there is no tick at all (see JiffiesTick).
bool tick_may_start_in_child = false;
#else
bool tick_may_start_in_child = true;
#endif

} // namespace

// Set to the real value before main() by the tick below; a reader in an
// earlier static constructor computes it from the clock.
alignas(64) constinit std::atomic<unsigned long> jiffies_host{ INITIAL_JIFFIES };
constinit std::atomic<bool> jiffies_from_clock{ true };

namespace
{

// Serialises jiffies_clock_changed(): its store must follow the last change
// of the state it reads, whichever thread made that change.
std::mutex jiffies_mode_lock;

} // namespace

void jiffies_clock_changed(void)
{
	std::lock_guard<std::mutex> g(jiffies_mode_lock);
	bool from_clock = clock_is_virtual() || !tick_running.load(std::memory_order_acquire);

	if (!from_clock)
		jiffies_update(host_clock_ns());
	jiffies_from_clock.store(from_clock, std::memory_order_release);
}

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
	bool expected = false;

	if (!tick_starting.compare_exchange_strong(expected, true))
		return;

	// The tick takes no signals: they are for the program's threads.
	sigset_t all, old;
	pthread_attr_t attr;
	pthread_t th;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	bool ok = pthread_create(&th, &attr, jiffies_tick_thread, nullptr) == 0;
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &old, nullptr);
	if (ok) {
		tick_running.store(true, std::memory_order_release);
		jiffies_clock_changed();
	}
	// Otherwise jiffies stays computed from the clock on every read.
}

// A fork child has no tick thread: jiffies is computed from the clock
// until the first read starts the child's own tick (jiffies_slow()).
void jiffies_atfork_child()
{
	// Another thread may have held the lock at fork().
	new (&jiffies_mode_lock) std::mutex;
	tick_running.store(false, std::memory_order_relaxed);
	tick_starting.store(false, std::memory_order_relaxed);
	jiffies_from_clock.store(true, std::memory_order_relaxed);
}

struct JiffiesTick {
	JiffiesTick()
	{
#ifndef UK_ASAN
		jiffies_tick_start();
#else
		// With the tick thread running, a fork child that starts threads
		// deadlocked in GCC 12 ASan's allocator (AioTest.ExitKills...,
		// under load). ASan builds read jiffies from the clock instead.
#endif
		pthread_atfork(nullptr, nullptr, jiffies_atfork_child);
	}
} jiffies_tick;

} // namespace

unsigned long jiffies_slow(void)
{
	if (!clock_is_virtual()) {
		if (tick_running.load(std::memory_order_acquire))
			jiffies_clock_changed(); /* back to the tick's word */
		else if (tick_may_start_in_child)
			jiffies_tick_start();
	}
	return jiffies_at(clock_now_ns());
}

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
