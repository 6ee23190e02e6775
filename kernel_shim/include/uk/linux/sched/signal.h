/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * signal_pending() and friends. Placeholder until the task model lands
 * (include/uk/linux/sched.h): no task ever has a signal pending.
 */
#ifndef UK_LINUX_SCHED_SIGNAL_H
#define UK_LINUX_SCHED_SIGNAL_H

struct task_struct;
#ifndef current
#define current ((struct task_struct *)nullptr)
#endif
static inline int signal_pending(struct task_struct *p)
{
	return 0;
}
static inline int fatal_signal_pending(struct task_struct *p)
{
	return 0;
}

#endif /* UK_LINUX_SCHED_SIGNAL_H */
