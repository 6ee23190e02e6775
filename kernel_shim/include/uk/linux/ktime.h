/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * ktime_t: signed 64-bit nanoseconds (include/linux/ktime.h).
 *
 * Upstream: include/linux/ktime.h @ v6.12
 */
#ifndef UK_LINUX_KTIME_H
#define UK_LINUX_KTIME_H

#include <uk/linux/time64.h>
#include <uk/linux/types.h>

/* ktime_t is defined in <uk/linux/types.h> as s64. */

static inline ktime_t ktime_set(const s64 secs, const unsigned long nsecs)
{
	if (unlikely(secs >= KTIME_SEC_MAX))
		return KTIME_MAX;
	return secs * NSEC_PER_SEC + (s64)nsecs;
}

#define ktime_sub(lhs, rhs) ((lhs) - (rhs))
#define ktime_add(lhs, rhs) ((lhs) + (rhs))
#define ktime_add_unsafe(lhs, rhs) ((u64)(lhs) + (rhs))
#define ktime_add_ns(kt, nsval) ((kt) + (nsval))
#define ktime_sub_ns(kt, nsval) ((kt) - (nsval))

static inline ktime_t timespec64_to_ktime(struct timespec64 ts)
{
	return ktime_set(ts.tv_sec, ts.tv_nsec);
}

static inline s64 ktime_to_ns(const ktime_t kt)
{
	return kt;
}

static inline ktime_t ns_to_ktime(u64 ns)
{
	return (ktime_t)ns;
}

static inline ktime_t us_to_ktime(u64 us)
{
	return (ktime_t)(us * NSEC_PER_USEC);
}

static inline ktime_t ms_to_ktime(u64 ms)
{
	return (ktime_t)(ms * NSEC_PER_MSEC);
}

static inline int ktime_compare(const ktime_t cmp1, const ktime_t cmp2)
{
	if (cmp1 < cmp2)
		return -1;
	if (cmp1 > cmp2)
		return 1;
	return 0;
}

static inline bool ktime_after(const ktime_t cmp1, const ktime_t cmp2)
{
	return ktime_compare(cmp1, cmp2) > 0;
}

static inline bool ktime_before(const ktime_t cmp1, const ktime_t cmp2)
{
	return ktime_compare(cmp1, cmp2) < 0;
}

static inline s64 ktime_divns(const ktime_t kt, s64 div)
{
	return kt / div;
}

static inline s64 ktime_to_us(const ktime_t kt)
{
	return ktime_divns(kt, NSEC_PER_USEC);
}

static inline s64 ktime_to_ms(const ktime_t kt)
{
	return ktime_divns(kt, NSEC_PER_MSEC);
}

static inline s64 ktime_us_delta(const ktime_t later, const ktime_t earlier)
{
	return ktime_to_us(ktime_sub(later, earlier));
}

static inline s64 ktime_ms_delta(const ktime_t later, const ktime_t earlier)
{
	return ktime_to_ms(ktime_sub(later, earlier));
}

static inline ktime_t ktime_add_us(const ktime_t kt, const u64 usec)
{
	return ktime_add_ns(kt, usec * NSEC_PER_USEC);
}

static inline ktime_t ktime_add_ms(const ktime_t kt, const u64 msec)
{
	return ktime_add_ns(kt, msec * NSEC_PER_MSEC);
}

static inline ktime_t ktime_sub_us(const ktime_t kt, const u64 usec)
{
	return ktime_sub_ns(kt, usec * NSEC_PER_USEC);
}

static inline ktime_t ktime_sub_ms(const ktime_t kt, const u64 msec)
{
	return ktime_sub_ns(kt, msec * NSEC_PER_MSEC);
}

/* Saturates at KTIME_MAX instead of wrapping (kernel/time/hrtimer.c). */
static inline ktime_t ktime_add_safe(const ktime_t lhs, const ktime_t rhs)
{
	ktime_t res = (ktime_t)ktime_add_unsafe(lhs, rhs);

	if (res < 0 || res < lhs || res < rhs)
		res = KTIME_MAX;
	return res;
}

static inline struct timespec64 ktime_to_timespec64(const ktime_t kt)
{
	return ns_to_timespec64(kt);
}

static inline s64 ktime_to_ms_safe(const ktime_t kt)
{
	return ktime_to_ms(kt);
}

#include <uk/linux/timekeeping.h>

#endif /* UK_LINUX_KTIME_H */
