/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Time constants and struct timespec64 (include/linux/time64.h, vdso/time64.h).
 *
 * Upstream: include/linux/time64.h @ v6.12
 * Upstream: include/vdso/time64.h @ v6.12
 */
#ifndef UK_LINUX_TIME64_H
#define UK_LINUX_TIME64_H

#include <time.h>

#include <uk/linux/types.h>

typedef s64 time64_t;
typedef u64 timeu64_t;

#define MSEC_PER_SEC 1000L
#define USEC_PER_MSEC 1000L
#define NSEC_PER_USEC 1000L
#define NSEC_PER_MSEC 1000000L
#define USEC_PER_SEC 1000000L
#define NSEC_PER_SEC 1000000000L
#define PSEC_PER_SEC 1000000000000LL
#define FSEC_PER_SEC 1000000000000000LL

#define TIME64_MAX ((s64) ~((u64)1 << 63))
#define TIME64_MIN (-TIME64_MAX - 1)
#define KTIME_MAX ((s64) ~((u64)1 << 63))
#define KTIME_MIN (-KTIME_MAX - 1)
#define KTIME_SEC_MAX (KTIME_MAX / NSEC_PER_SEC)
#define KTIME_SEC_MIN (KTIME_MIN / NSEC_PER_SEC)

struct timespec64 {
	time64_t tv_sec;
	long tv_nsec;
};

static inline int timespec64_equal(const struct timespec64 *a, const struct timespec64 *b)
{
	return a->tv_sec == b->tv_sec && a->tv_nsec == b->tv_nsec;
}

static inline int timespec64_compare(const struct timespec64 *lhs, const struct timespec64 *rhs)
{
	if (lhs->tv_sec < rhs->tv_sec)
		return -1;
	if (lhs->tv_sec > rhs->tv_sec)
		return 1;
	return lhs->tv_nsec - rhs->tv_nsec;
}

static inline bool timespec64_valid(const struct timespec64 *ts)
{
	if (ts->tv_sec < 0)
		return false;
	if ((unsigned long)ts->tv_nsec >= NSEC_PER_SEC)
		return false;
	return true;
}

static inline s64 timespec64_to_ns(const struct timespec64 *ts)
{
	if (ts->tv_sec >= KTIME_SEC_MAX)
		return KTIME_MAX;
	if (ts->tv_sec <= KTIME_SEC_MIN)
		return KTIME_MIN;
	return ts->tv_sec * NSEC_PER_SEC + ts->tv_nsec;
}

static inline struct timespec64 ns_to_timespec64(s64 nsec)
{
	struct timespec64 ts = { 0, 0 };
	s32 rem;

	if (!nsec)
		return ts;
	ts.tv_sec = nsec / NSEC_PER_SEC;
	rem = (s32)(nsec % NSEC_PER_SEC);
	if (rem < 0) {
		ts.tv_sec--;
		rem += NSEC_PER_SEC;
	}
	ts.tv_nsec = rem;
	return ts;
}

static inline struct timespec64 timespec64_add(struct timespec64 a, struct timespec64 b)
{
	return ns_to_timespec64(timespec64_to_ns(&a) + timespec64_to_ns(&b));
}

static inline struct timespec64 timespec64_sub(struct timespec64 a, struct timespec64 b)
{
	return ns_to_timespec64(timespec64_to_ns(&a) - timespec64_to_ns(&b));
}

#endif /* UK_LINUX_TIME64_H */
