/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * timer_list (include/linux/timer.h, kernel/time/timer.c).
 *
 * ->expires is in jiffies. A timer is queued on the per-CPU base of the CPU
 * that arms it (add_timer_on(): the given CPU) and its callback runs there
 * in softirq context, once jiffies reaches ->expires. No wheel: expiry is
 * exact to the jiffy, and TIMER_DEFERRABLE timers are not deferred.
 *
 * Upstream: include/linux/timer.h @ v6.12
 */
#ifndef UK_LINUX_TIMER_H
#define UK_LINUX_TIMER_H

#include <uk/linux/compiler.h>
#include <uk/linux/container_of.h>
#include <uk/linux/jiffies.h>
#include <uk/linux/types.h>
#include <uk/shim/timerq.h>

struct timer_list {
	struct uk_timerq_node node; /* node.expires: clock ns of ->expires */
	unsigned long expires;
	void (*function)(struct timer_list *);
	u32 flags;
};

#define TIMER_CPUMASK 0x0003FFFF
#define TIMER_MIGRATING 0x00040000
#define TIMER_BASEMASK (TIMER_CPUMASK | TIMER_MIGRATING)
#define TIMER_DEFERRABLE 0x00080000
#define TIMER_PINNED 0x00100000
#define TIMER_IRQSAFE 0x00200000
#define TIMER_INIT_FLAGS (TIMER_DEFERRABLE | TIMER_PINNED | TIMER_IRQSAFE)
#define TIMER_ARRAYSHIFT 22
#define TIMER_ARRAYMASK 0xFFC00000
#define TIMER_TRACE_FLAGMASK (TIMER_MIGRATING | TIMER_DEFERRABLE | TIMER_PINNED | TIMER_IRQSAFE)

#define NEXT_TIMER_MAX_DELTA ((1UL << 30) - 1)

void init_timer_key(struct timer_list *timer, void (*func)(struct timer_list *), unsigned int flags,
		    const char *name, void *key);

#define __init_timer(_timer, _fn, _flags) \
	init_timer_key((_timer), (_fn), (_flags), #_timer, nullptr)
#define __init_timer_on_stack(_timer, _fn, _flags) __init_timer(_timer, _fn, _flags)

#define timer_setup(timer, callback, flags) __init_timer((timer), (callback), (flags))
#define timer_setup_on_stack(timer, callback, flags) \
	__init_timer_on_stack((timer), (callback), (flags))

static inline void destroy_timer_on_stack(struct timer_list *timer) {}

/* clang-format off */
#define __TIMER_INITIALIZER(_function, _flags)                              \
	{                                                                   \
		.node = { 0, 0, -1 }, .expires = 0, .function = (_function), \
		.flags = (_flags),                                          \
	}
/* clang-format on */

#define DEFINE_TIMER(_name, _function) struct timer_list _name = __TIMER_INITIALIZER(_function, 0)

#define timer_container_of(var, callback_timer, timer_fieldname) \
	container_of(callback_timer, __typeof__(*var), timer_fieldname)
#define from_timer(var, callback_timer, timer_fieldname) \
	timer_container_of(var, callback_timer, timer_fieldname)

/* Whether the timer is queued (lockless: a hint, as in the kernel). */
static inline int timer_pending(const struct timer_list *timer)
{
	return __atomic_load_n(&timer->node.idx, __ATOMIC_RELAXED) >= 0;
}

void add_timer(struct timer_list *timer);
void add_timer_local(struct timer_list *timer);
void add_timer_global(struct timer_list *timer);
void add_timer_on(struct timer_list *timer, int cpu);
int mod_timer(struct timer_list *timer, unsigned long expires);
int mod_timer_pending(struct timer_list *timer, unsigned long expires);
int timer_reduce(struct timer_list *timer, unsigned long expires);

int timer_delete(struct timer_list *timer);
int timer_delete_sync(struct timer_list *timer);
int try_to_del_timer_sync(struct timer_list *timer);
int timer_delete_sync_try(struct timer_list *timer);
int timer_shutdown(struct timer_list *timer);
int timer_shutdown_sync(struct timer_list *timer);

static inline int del_timer(struct timer_list *timer)
{
	return timer_delete(timer);
}

static inline int del_timer_sync(struct timer_list *timer)
{
	return timer_delete_sync(timer);
}

#define del_singleshot_timer_sync(t) timer_delete_sync(t)

#endif /* UK_LINUX_TIMER_H */
