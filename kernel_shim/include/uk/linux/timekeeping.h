/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * ktime_get() and friends (include/linux/timekeeping.h), on the clock of
 * <uk/shim/clock.h>: CLOCK_MONOTONIC or the tests' virtual clock.
 * BOOTTIME and TAI read the monotonic clock (no suspend, no leap seconds);
 * REALTIME is the monotonic clock plus the host's REALTIME - MONOTONIC offset
 * taken at start-up.
 */
#ifndef UK_LINUX_TIMEKEEPING_H
#define UK_LINUX_TIMEKEEPING_H

#include <uk/linux/ktime.h>
#include <uk/shim/clock.h>

namespace uk
{
extern s64 clock_realtime_offset_ns;
}

static __always_inline ktime_t ktime_get(void)
{
	return (ktime_t)::uk::clock_now_ns();
}

static __always_inline u64 ktime_get_ns(void)
{
	return ::uk::clock_now_ns();
}

#define ktime_get_mono_fast_ns() ktime_get_ns()
#define ktime_get_raw_fast_ns() ktime_get_ns()
#define ktime_get_boot_fast_ns() ktime_get_ns()
#define ktime_get_tai_fast_ns() ktime_get_ns()
#define ktime_get_raw() ktime_get()
#define ktime_get_raw_ns() ktime_get_ns()
#define ktime_get_boottime() ktime_get()
#define ktime_get_boottime_ns() ktime_get_ns()
#define ktime_get_clocktai() ktime_get()
#define ktime_get_clocktai_ns() ktime_get_ns()
#define ktime_get_coarse() ktime_get()
#define ktime_get_coarse_ns() ktime_get_ns()
#define local_clock() ktime_get_ns()
#define sched_clock() ktime_get_ns()

static inline ktime_t ktime_get_real(void)
{
	return ktime_get() + ::uk::clock_realtime_offset_ns;
}

static inline u64 ktime_get_real_ns(void)
{
	return (u64)ktime_get_real();
}

#define ktime_get_coarse_real() ktime_get_real()
#define ktime_get_real_fast_ns() ktime_get_real_ns()

static inline time64_t ktime_get_seconds(void)
{
	return ktime_divns(ktime_get(), NSEC_PER_SEC);
}

static inline time64_t ktime_get_real_seconds(void)
{
	return ktime_divns(ktime_get_real(), NSEC_PER_SEC);
}

static inline void ktime_get_ts64(struct timespec64 *ts)
{
	*ts = ns_to_timespec64(ktime_get());
}

static inline void ktime_get_real_ts64(struct timespec64 *ts)
{
	*ts = ns_to_timespec64(ktime_get_real());
}

#define ktime_get_raw_ts64(ts) ktime_get_ts64(ts)
#define ktime_get_boottime_ts64(ts) ktime_get_ts64(ts)
#define ktime_get_coarse_ts64(ts) ktime_get_ts64(ts)
#define ktime_get_coarse_real_ts64(ts) ktime_get_real_ts64(ts)

#endif /* UK_LINUX_TIMEKEEPING_H */
