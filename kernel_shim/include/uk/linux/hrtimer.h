/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * High-resolution timers (include/linux/hrtimer.h, kernel/time/hrtimer.c).
 *
 * A timer is queued on the per-CPU base of the CPU that starts it and its
 * callback runs there: in hardirq context (uk::run_in_hardirq), or in
 * softirq context for HRTIMER_MODE_SOFT timers. Deadlines are on the clock
 * of <uk/shim/clock.h>; all clock ids (MONOTONIC, REALTIME, BOOTTIME, TAI)
 * use it. A timer fires at its hard expiry (soft expiry + range).
 *
 * Upstream: include/linux/hrtimer.h @ v6.12
 */
#ifndef UK_LINUX_HRTIMER_H
#define UK_LINUX_HRTIMER_H

#include <time.h> /* CLOCK_MONOTONIC etc. */

#include <uk/linux/compiler.h>
#include <uk/linux/jiffies.h>
#include <uk/linux/ktime.h>
#include <uk/linux/timekeeping.h>
#include <uk/linux/types.h>
#include <uk/shim/timerq.h>

struct task_struct;
struct hrtimer_clock_base;

enum hrtimer_mode {
	HRTIMER_MODE_ABS = 0x00,
	HRTIMER_MODE_REL = 0x01,
	HRTIMER_MODE_PINNED = 0x02,
	HRTIMER_MODE_SOFT = 0x04,
	HRTIMER_MODE_HARD = 0x08,

	HRTIMER_MODE_ABS_PINNED = HRTIMER_MODE_ABS | HRTIMER_MODE_PINNED,
	HRTIMER_MODE_REL_PINNED = HRTIMER_MODE_REL | HRTIMER_MODE_PINNED,

	HRTIMER_MODE_ABS_SOFT = HRTIMER_MODE_ABS | HRTIMER_MODE_SOFT,
	HRTIMER_MODE_REL_SOFT = HRTIMER_MODE_REL | HRTIMER_MODE_SOFT,

	HRTIMER_MODE_ABS_PINNED_SOFT = HRTIMER_MODE_ABS_PINNED | HRTIMER_MODE_SOFT,
	HRTIMER_MODE_REL_PINNED_SOFT = HRTIMER_MODE_REL_PINNED | HRTIMER_MODE_SOFT,

	HRTIMER_MODE_ABS_HARD = HRTIMER_MODE_ABS | HRTIMER_MODE_HARD,
	HRTIMER_MODE_REL_HARD = HRTIMER_MODE_REL | HRTIMER_MODE_HARD,

	HRTIMER_MODE_ABS_PINNED_HARD = HRTIMER_MODE_ABS_PINNED | HRTIMER_MODE_HARD,
	HRTIMER_MODE_REL_PINNED_HARD = HRTIMER_MODE_REL_PINNED | HRTIMER_MODE_HARD,
};

enum hrtimer_restart {
	HRTIMER_NORESTART,
	HRTIMER_RESTART,
};

#define HRTIMER_STATE_INACTIVE 0x00
#define HRTIMER_STATE_ENQUEUED 0x01

struct hrtimer {
	struct uk_timerq_node node; /* node.expires: the hard expiry */
	ktime_t _softexpires;
	enum hrtimer_restart (*function)(struct hrtimer *);
	struct hrtimer_clock_base *base;
	u8 state;
	u8 is_rel;
	u8 is_soft;
	u8 is_hard;
};

struct hrtimer_sleeper {
	struct hrtimer timer;
	struct task_struct *task;
};

/* Always high resolution: 1 ns. */
#define HIGH_RES_NSEC 1
#define KTIME_HIGH_RES (HIGH_RES_NSEC)
#define MONOTONIC_RES_NSEC HIGH_RES_NSEC
#define KTIME_MONOTONIC_RES KTIME_HIGH_RES
#define hrtimer_resolution ((unsigned int)HIGH_RES_NSEC)

/* Set up */
void hrtimer_setup(struct hrtimer *timer, enum hrtimer_restart (*function)(struct hrtimer *),
		   clockid_t clock_id, enum hrtimer_mode mode);
void hrtimer_setup_on_stack(struct hrtimer *timer,
			    enum hrtimer_restart (*function)(struct hrtimer *), clockid_t clock_id,
			    enum hrtimer_mode mode);
/* Older API: the caller sets ->function afterwards. */
void hrtimer_init(struct hrtimer *timer, clockid_t clock_id, enum hrtimer_mode mode);
void hrtimer_init_on_stack(struct hrtimer *timer, clockid_t clock_id, enum hrtimer_mode mode);
void hrtimer_setup_sleeper_on_stack(struct hrtimer_sleeper *sl, clockid_t clock_id,
				    enum hrtimer_mode mode);
#define hrtimer_init_sleeper_on_stack(sl, clock_id, mode) \
	hrtimer_setup_sleeper_on_stack(sl, clock_id, mode)
static inline void destroy_hrtimer_on_stack(struct hrtimer *timer) {}

/* Expiry accessors */
static inline void hrtimer_set_expires(struct hrtimer *timer, ktime_t time)
{
	timer->node.expires = time;
	timer->_softexpires = time;
}

static inline void hrtimer_set_expires_range(struct hrtimer *timer, ktime_t time, ktime_t delta)
{
	timer->_softexpires = time;
	timer->node.expires = ktime_add_safe(time, delta);
}

static inline void hrtimer_set_expires_range_ns(struct hrtimer *timer, ktime_t time, u64 delta)
{
	timer->_softexpires = time;
	timer->node.expires = ktime_add_safe(time, ns_to_ktime(delta));
}

static inline void hrtimer_set_expires_tv64(struct hrtimer *timer, const s64 tv64)
{
	timer->node.expires = tv64;
	timer->_softexpires = tv64;
}

static inline void hrtimer_add_expires(struct hrtimer *timer, ktime_t time)
{
	timer->node.expires = ktime_add_safe(timer->node.expires, time);
	timer->_softexpires = ktime_add_safe(timer->_softexpires, time);
}

static inline void hrtimer_add_expires_ns(struct hrtimer *timer, u64 ns)
{
	timer->node.expires += ns;
	timer->_softexpires += ns;
}

static inline ktime_t hrtimer_get_expires(const struct hrtimer *timer)
{
	return timer->node.expires;
}

static inline ktime_t hrtimer_get_softexpires(const struct hrtimer *timer)
{
	return timer->_softexpires;
}

static inline s64 hrtimer_get_expires_tv64(const struct hrtimer *timer)
{
	return timer->node.expires;
}

static inline s64 hrtimer_get_softexpires_tv64(const struct hrtimer *timer)
{
	return timer->_softexpires;
}

static inline s64 hrtimer_get_expires_ns(const struct hrtimer *timer)
{
	return ktime_to_ns(timer->node.expires);
}

static inline ktime_t hrtimer_expires_remaining(const struct hrtimer *timer)
{
	return ktime_sub(timer->node.expires, ktime_get());
}

static inline ktime_t hrtimer_cb_get_time(const struct hrtimer *timer)
{
	return ktime_get();
}

/* Start and cancel */
void hrtimer_start_range_ns(struct hrtimer *timer, ktime_t tim, u64 range_ns,
			    const enum hrtimer_mode mode);

static inline void hrtimer_start(struct hrtimer *timer, ktime_t tim, const enum hrtimer_mode mode)
{
	hrtimer_start_range_ns(timer, tim, 0, mode);
}

static inline void hrtimer_start_expires(struct hrtimer *timer, enum hrtimer_mode mode)
{
	ktime_t soft = hrtimer_get_softexpires(timer);
	ktime_t hard = hrtimer_get_expires(timer);

	hrtimer_start_range_ns(timer, soft, (u64)ktime_sub(hard, soft), mode);
}

static inline void hrtimer_restart(struct hrtimer *timer)
{
	hrtimer_start_expires(timer, HRTIMER_MODE_ABS);
}

/* 1: removed, 0: was not queued, -1: the callback is running. */
int hrtimer_try_to_cancel(struct hrtimer *timer);
/* Waits for a running callback; 1 if the timer was active. */
int hrtimer_cancel(struct hrtimer *timer);

/* Query */
bool hrtimer_active(const struct hrtimer *timer);

static inline bool hrtimer_is_queued(struct hrtimer *timer)
{
	return !!(__atomic_load_n(&timer->state, __ATOMIC_RELAXED) & HRTIMER_STATE_ENQUEUED);
}

bool hrtimer_callback_running(struct hrtimer *timer);

static inline bool hrtimer_is_hres_active(struct hrtimer *timer)
{
	return true;
}

ktime_t __hrtimer_get_remaining(const struct hrtimer *timer, bool adjust);

static inline ktime_t hrtimer_get_remaining(const struct hrtimer *timer)
{
	return __hrtimer_get_remaining(timer, false);
}

/* Forward a timer (not queued) past @now by whole @interval steps. */
u64 hrtimer_forward(struct hrtimer *timer, ktime_t now, ktime_t interval);

static inline u64 hrtimer_forward_now(struct hrtimer *timer, ktime_t interval)
{
	return hrtimer_forward(timer, ktime_get(), interval);
}

/* Sleepers: the callback wakes sl->task (wake_up_process) and clears it. */
void hrtimer_sleeper_start_expires(struct hrtimer_sleeper *sl, enum hrtimer_mode mode);

/* Needs the task model (<uk/linux/sched.h>): sleep in the state set by the caller. */
int schedule_hrtimeout_range(ktime_t *expires, u64 delta, const enum hrtimer_mode mode);
int schedule_hrtimeout_range_clock(ktime_t *expires, u64 delta, const enum hrtimer_mode mode,
				   clockid_t clock_id);
int schedule_hrtimeout(ktime_t *expires, const enum hrtimer_mode mode);

#endif /* UK_LINUX_HRTIMER_H */
