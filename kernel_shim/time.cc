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

#include <atomic>
#include <cstdio>
#include <cstring>

/* ---- jiffies on the host clock (see <uk/linux/jiffies.h>) ---- */

namespace uk
{

constinit thread_local JiffiesCache tls_jiffies
	__attribute__((tls_model("initial-exec"))) = { 0, 0 };

#if defined(__x86_64__)
namespace
{

// Margin before each jiffy boundary where reads go to the clock: covers
// rdtsc executing out of order and TSC skew between CPUs.
constexpr uint64_t kJiffiesGuardNs = 2 * NSEC_PER_USEC;
// Clock time between the two samples that measure the TSC frequency.
constexpr uint64_t kJiffiesCalibrateNs = 100 * NSEC_PER_MSEC;

enum JiffiesTscState : int { kTscUnknown, kTscBusy, kTscSampled, kTscReady, kTscUnusable };

std::atomic<int> jiffies_tsc_state{ kTscUnknown };
std::atomic<uint64_t> jiffies_tsc_per_ms{ 0 }; // lower bound, set in kTscReady
uint64_t jiffies_base_tsc;		       // written before kTscSampled
uint64_t jiffies_base_ns;

// The host kernel keeps "tsc" as its clocksource only while the TSC runs at
// a constant rate and is synchronized across CPUs.
bool host_clocksource_is_tsc()
{
	char buf[16] = {};
	FILE *f = std::fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource",
			     "re");

	if (!f)
		return false;
	bool ok = std::fgets(buf, sizeof(buf), f) && std::strcmp(buf, "tsc\n") == 0;
	std::fclose(f);
	return ok;
}

// TSC cycles per millisecond, an underestimate, or 0 while unknown. @tsc
// was read before the clock read that gave @ns. The first sample takes its
// TSC after its clock read, so whatever delays either sample, the rate
// comes out low, never high.
uint64_t jiffies_tsc_rate(uint64_t tsc, uint64_t ns)
{
	// Pairs with the release stores below: the base sample is visible.
	int state = jiffies_tsc_state.load(std::memory_order_acquire);

	if (likely(state == kTscReady))
		return jiffies_tsc_per_ms.load(std::memory_order_relaxed);
	if (state == kTscUnknown) {
		if (!jiffies_tsc_state.compare_exchange_strong(state, kTscBusy,
							       std::memory_order_acquire))
			return 0;
		if (!host_clocksource_is_tsc()) {
			jiffies_tsc_state.store(kTscUnusable, std::memory_order_relaxed);
			return 0;
		}
		jiffies_base_ns = ns;
		jiffies_base_tsc = __builtin_ia32_rdtsc();
		// Publishes the base sample (acquire above, in later callers).
		jiffies_tsc_state.store(kTscSampled, std::memory_order_release);
		return 0;
	}
	if (state != kTscSampled || ns < jiffies_base_ns + kJiffiesCalibrateNs ||
	    tsc <= jiffies_base_tsc)
		return 0;
	unsigned __int128 cycles = tsc - jiffies_base_tsc;
	uint64_t rate = static_cast<uint64_t>(cycles * NSEC_PER_MSEC / (ns - jiffies_base_ns));
	// 1/128 below the measurement: more than NTP's slew of the clock and the
	// TSC skew between CPUs over the 100 ms.
	rate -= rate / 128;
	jiffies_tsc_per_ms.store(rate, std::memory_order_relaxed);
	jiffies_tsc_state.store(kTscReady, std::memory_order_release);
	return rate;
}

} // namespace
#endif

unsigned long jiffies_slow(void)
{
	if (clock_is_virtual())
		return INITIAL_JIFFIES + (unsigned long)(clock_now_ns() / TICK_NSEC);
#if defined(__x86_64__)
	// Taken before the clock read: the clock's instant is no earlier.
	uint64_t tsc = __builtin_ia32_rdtsc();
#endif
	uint64_t now = host_clock_ns();
	unsigned long j = INITIAL_JIFFIES + (unsigned long)(now / TICK_NSEC);
#if defined(__x86_64__)
	uint64_t left = TICK_NSEC - now % TICK_NSEC;
	uint64_t rate = jiffies_tsc_rate(tsc, now);
	JiffiesCache &c = tls_jiffies;

	// Valid until the boundary at the lowest rate the TSC can run at.
	c.tsc_end = (rate && left > kJiffiesGuardNs)
			    ? tsc + (left - kJiffiesGuardNs) * rate / NSEC_PER_MSEC
			    : 0;
	c.j = j;
#endif
	return j;
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
