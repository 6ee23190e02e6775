/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Delays (include/linux/delay.h).
 *
 * ndelay/udelay/mdelay busy-wait on the host's CLOCK_MONOTONIC even when
 * the virtual clock is active: real time passes, virtual time does not.
 * msleep() and friends sleep with schedule_timeout() (the task model): with
 * the virtual clock they return once a test advances it far enough.
 */
#ifndef UK_LINUX_DELAY_H
#define UK_LINUX_DELAY_H

#include <uk/linux/jiffies.h>
#include <uk/linux/types.h>

#define MAX_UDELAY_MS 5

void ndelay(unsigned long nsecs);

static inline void udelay(unsigned long usecs)
{
	ndelay(usecs * NSEC_PER_USEC);
}

static inline void mdelay(unsigned long msecs)
{
	ndelay(msecs * NSEC_PER_MSEC);
}

void msleep(unsigned int msecs);
unsigned long msleep_interruptible(unsigned int msecs);
void usleep_range_state(unsigned long min, unsigned long max, unsigned int state);
void usleep_range(unsigned long min, unsigned long max);
void fsleep(unsigned long usecs);

static inline void ssleep(unsigned int seconds)
{
	msleep(seconds * 1000);
}

static inline void usleep_idle_range(unsigned long min, unsigned long max)
{
	usleep_range(min, max);
}

#endif /* UK_LINUX_DELAY_H */
