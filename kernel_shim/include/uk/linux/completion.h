/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Completions (include/linux/completion.h, kernel/sched/completion.c): a
 * count of "done" events and a simple wait queue whose raw lock guards it.
 * complete() adds one and wakes the oldest waiter; complete_all() saturates
 * the count (UINT_MAX) and wakes everybody until reinit_completion().
 *
 * Upstream: include/linux/completion.h @ v6.12
 */
#ifndef UK_LINUX_COMPLETION_H
#define UK_LINUX_COMPLETION_H

#include <uk/linux/swait.h>

struct completion {
	unsigned int done;
	struct swait_queue_head wait;
};

#define init_completion_map(x, m) init_completion(x)
static inline void complete_acquire(struct completion *x) {}
static inline void complete_release(struct completion *x) {}

/* clang-format off */
#define COMPLETION_INITIALIZER(work) { 0, __SWAIT_QUEUE_HEAD_INITIALIZER((&(work))->wait) }
/* clang-format on */
#define COMPLETION_INITIALIZER_ONSTACK(work) \
	(*({                                 \
		init_completion(&(work));    \
		&(work);                     \
	}))
#define DECLARE_COMPLETION(work) struct completion work = COMPLETION_INITIALIZER(work)
#define DECLARE_COMPLETION_ONSTACK(work) DECLARE_COMPLETION(work)
#define DECLARE_COMPLETION_ONSTACK_MAP(work, map) DECLARE_COMPLETION(work)

static inline void init_completion(struct completion *x)
{
	WRITE_ONCE(x->done, 0);
	init_swait_queue_head(&x->wait);
}

static inline void reinit_completion(struct completion *x)
{
	WRITE_ONCE(x->done, 0);
}

void wait_for_completion(struct completion *x);
void wait_for_completion_io(struct completion *x);
int wait_for_completion_interruptible(struct completion *x);
int wait_for_completion_killable(struct completion *x);
int wait_for_completion_state(struct completion *x, unsigned int state);
unsigned long wait_for_completion_timeout(struct completion *x, unsigned long timeout);
unsigned long wait_for_completion_io_timeout(struct completion *x, unsigned long timeout);
long wait_for_completion_interruptible_timeout(struct completion *x, unsigned long timeout);
long wait_for_completion_killable_timeout(struct completion *x, unsigned long timeout);
bool try_wait_for_completion(struct completion *x);
bool completion_done(struct completion *x);

void complete(struct completion *x);
void complete_on_current_cpu(struct completion *x);
void complete_all(struct completion *x);

#endif /* UK_LINUX_COMPLETION_H */
