/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * jiffies (include/linux/jiffies.h). HZ is 250. As in the kernel, it starts
 * 5 minutes before the 32-bit wrap (INITIAL_JIFFIES).
 *
 * On the host clock jiffies is what the kernel's is: a global word that a
 * tick advances, so reading it is one load. The tick is a thread that
 * sleeps until each jiffy boundary of CLOCK_MONOTONIC and stores
 *   INITIAL_JIFFIES + clock_now_ns() / TICK_NSEC,
 * and the per-CPU timer threads do the same before they run expired timers
 * (so a timer callback, and whoever it wakes, sees jiffies >= ->expires).
 * Like the kernel's, the word may lag the clock by the tick's latency; it
 * never runs ahead of it and never goes back.
 *
 * On the virtual clock jiffies is computed from the clock on every read,
 * so a test that advances the clock sees jiffies move exactly with it. It
 * is also computed on every read in a fork child until the child's first
 * read starts its own tick, and wherever no tick thread could be started.
 *
 * Upstream: include/linux/jiffies.h @ v6.12
 */
#ifndef UK_LINUX_JIFFIES_H
#define UK_LINUX_JIFFIES_H

#include <atomic>
#include <climits>

#include <uk/linux/time64.h>
#include <uk/linux/types.h>
#include <uk/shim/clock.h>

#define HZ 250
#define USER_HZ 100
#define CONFIG_HZ HZ
#define TICK_NSEC ((NSEC_PER_SEC + HZ / 2) / HZ)
#define TICK_USEC ((USEC_PER_SEC + HZ / 2) / HZ)

#define INITIAL_JIFFIES ((unsigned long)(unsigned int)(-300 * HZ))

namespace uk
{

/* The host clock's jiffies: written by jiffies_update() only. */
extern std::atomic<unsigned long> jiffies_host __uk_hidden;
/* Read jiffies from the clock instead: the virtual clock, or no tick yet. */
extern std::atomic<bool> jiffies_from_clock __uk_hidden;

/* jiffies from the clock (and the tick started where it is missing). */
unsigned long jiffies_slow(void);
/* Called when the clock changes between virtual and host. */
void jiffies_clock_changed(void);

/*
 * do_timer(): advances jiffies_host to the jiffy of host clock time @now_ns
 * (never backwards) and returns the new value.
 */
unsigned long jiffies_update(u64 now_ns);

} // namespace uk

static __always_inline unsigned long __uk_jiffies(void)
{
	if (likely(!::uk::jiffies_from_clock.load(std::memory_order_relaxed)))
		return ::uk::jiffies_host.load(std::memory_order_relaxed);
	return ::uk::jiffies_slow();
}

/* Read-only. */
#define jiffies (__uk_jiffies())
#define jiffies_64 ((u64)__uk_jiffies())

static inline u64 get_jiffies_64(void)
{
	return jiffies_64;
}

/* Clock nanoseconds at which jiffies reaches @j (0 for j before boot). */
static inline u64 __uk_jiffies_to_clock_ns(unsigned long j)
{
	return (u64)(j - INITIAL_JIFFIES) * TICK_NSEC;
}

#define time_after(a, b) ((long)((b) - (a)) < 0)
#define time_before(a, b) time_after(b, a)
#define time_after_eq(a, b) ((long)((a) - (b)) >= 0)
#define time_before_eq(a, b) time_after_eq(b, a)
#define time_in_range(a, b, c) (time_after_eq(a, b) && time_before_eq(a, c))
#define time_in_range_open(a, b, c) (time_after_eq(a, b) && time_before(a, c))
#define time_after64(a, b) ((s64)((b) - (a)) < 0)
#define time_before64(a, b) time_after64(b, a)
#define time_after_eq64(a, b) ((s64)((a) - (b)) >= 0)
#define time_before_eq64(a, b) time_after_eq64(b, a)
#define time_in_range64(a, b, c) (time_after_eq64(a, b) && time_before_eq64(a, c))
#define time_is_before_jiffies(a) time_after(jiffies, a)
#define time_is_before_jiffies64(a) time_after64(get_jiffies_64(), a)
#define time_is_after_jiffies(a) time_before(jiffies, a)
#define time_is_after_jiffies64(a) time_before64(get_jiffies_64(), a)
#define time_is_before_eq_jiffies(a) time_after_eq(jiffies, a)
#define time_is_after_eq_jiffies(a) time_before_eq(jiffies, a)

#define MAX_JIFFY_OFFSET ((LONG_MAX >> 1) - 1)
#define MAX_SEC_IN_JIFFIES (long)((u64)((u64)MAX_JIFFY_OFFSET * TICK_NSEC) / NSEC_PER_SEC)

static inline unsigned int jiffies_to_msecs(const unsigned long j)
{
	return (unsigned int)(j * (MSEC_PER_SEC / HZ));
}

static inline unsigned int jiffies_to_usecs(const unsigned long j)
{
	return (unsigned int)(j * (USEC_PER_SEC / HZ));
}

static inline u64 jiffies_to_nsecs(const unsigned long j)
{
	return (u64)j * TICK_NSEC;
}

static inline u64 jiffies64_to_nsecs(u64 j)
{
	return j * TICK_NSEC;
}

static inline u64 jiffies64_to_msecs(u64 j)
{
	return j * (MSEC_PER_SEC / HZ);
}

/* HZ divides 1000: round up to whole jiffies, as the kernel does. */
static inline unsigned long msecs_to_jiffies(const unsigned int m)
{
	if ((int)m < 0)
		return MAX_JIFFY_OFFSET;
	return (m + (MSEC_PER_SEC / HZ) - 1) / (MSEC_PER_SEC / HZ);
}

static inline unsigned long usecs_to_jiffies(const unsigned int u)
{
	if ((int)u < 0)
		return MAX_JIFFY_OFFSET;
	return (u + (USEC_PER_SEC / HZ) - 1) / (USEC_PER_SEC / HZ);
}

static inline u64 nsecs_to_jiffies64(u64 n)
{
	return n / (NSEC_PER_SEC / HZ);
}

static inline unsigned long nsecs_to_jiffies(u64 n)
{
	return (unsigned long)nsecs_to_jiffies64(n);
}

#define secs_to_jiffies(_secs) (unsigned long)((_secs)*HZ)

static inline unsigned long timespec64_to_jiffies(const struct timespec64 *value)
{
	u64 ns = (u64)timespec64_to_ns(value);

	if (value->tv_sec >= MAX_SEC_IN_JIFFIES)
		return MAX_JIFFY_OFFSET;
	return (unsigned long)((ns + TICK_NSEC - 1) / TICK_NSEC);
}

static inline void jiffies_to_timespec64(const unsigned long j, struct timespec64 *value)
{
	*value = ns_to_timespec64((s64)((u64)j * TICK_NSEC));
}

static inline long jiffies_delta_to_msecs(long delta)
{
	return jiffies_to_msecs(delta > 0 ? delta : 0);
}

/* Whole-second rounding (kernel/time/timer.c), without the per-CPU skew. */
static inline unsigned long round_jiffies(unsigned long j)
{
	unsigned long original = j;
	unsigned long rem = j % HZ;

	if (rem < HZ / 4)
		j = j - rem;
	else
		j = j - rem + HZ;
	if (time_is_after_jiffies(j))
		return j;
	return original;
}

static inline unsigned long round_jiffies_up(unsigned long j)
{
	unsigned long rem = j % HZ;

	return rem ? j - rem + HZ : j;
}

static inline unsigned long round_jiffies_relative(unsigned long j)
{
	unsigned long j0 = jiffies;

	return round_jiffies(j + j0) - j0;
}

static inline unsigned long round_jiffies_up_relative(unsigned long j)
{
	unsigned long j0 = jiffies;

	return round_jiffies_up(j + j0) - j0;
}

#endif /* UK_LINUX_JIFFIES_H */
