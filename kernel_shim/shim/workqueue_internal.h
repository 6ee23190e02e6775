/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Hooks between the scheduler and the workqueue code
 * (kernel/workqueue_internal.h): schedule() tells a worker's pool when the
 * worker blocks and when it runs again, so a concurrency-managed pool can
 * start another worker while one sleeps.
 */
#ifndef UK_KERNEL_SHIM_WORKQUEUE_INTERNAL_H
#define UK_KERNEL_SHIM_WORKQUEUE_INTERNAL_H

struct task_struct;

void wq_worker_sleeping(struct task_struct *task);
void wq_worker_running(struct task_struct *task);

#endif /* UK_KERNEL_SHIM_WORKQUEUE_INTERNAL_H */
