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
