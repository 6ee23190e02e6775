/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef UK_LINUX_SMP_H
#define UK_LINUX_SMP_H

#include <uk/linux/cpumask.h>
#include <uk/linux/irqflags.h>
#include <uk/linux/preempt.h>

#define raw_smp_processor_id() (::uk::current_cpu())
#define smp_processor_id() (::uk::current_cpu())

#define get_cpu()                   \
	({                          \
		preempt_disable();  \
		smp_processor_id(); \
	})
#define put_cpu() preempt_enable()

/*
 * smp_call_function_single(): runs @func(@info) on @cpu in hardirq context
 * (the IPI), waiting for it to finish when @wait.
 */
typedef void (*smp_call_func_t)(void *info);
int smp_call_function_single(int cpu, smp_call_func_t func, void *info, int wait);

#endif /* UK_LINUX_SMP_H */
