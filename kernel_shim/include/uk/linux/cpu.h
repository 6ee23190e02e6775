/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * CPU hotplug from the outside (include/linux/cpu.h): the hotplug lock and
 * taking a virtual CPU down and up. kernel_shim/cpu.cc; docs/cpu-model.md,
 * "CPU hotplug".
 */
#ifndef UK_LINUX_CPU_H
#define UK_LINUX_CPU_H

#include <uk/linux/cpuhotplug.h>
#include <uk/linux/cpumask.h>

/*
 * The hotplug lock (cpu_hotplug_lock): readers keep cpu_online_mask and the
 * states' callbacks and instances as they are; remove_cpu() and add_cpu()
 * hold it for writing. A sleeping lock.
 */
void cpus_read_lock(void);
void cpus_read_unlock(void);
int cpus_read_trylock(void);
void lockdep_assert_cpus_held(void);

/*
 * Takes @cpu offline (remove_cpu) or brings it back (add_cpu), running the
 * states' teardown (startup) callbacks: 0 when done or when @cpu already is
 * in that state, -EINVAL for a CPU that is not present, -EBUSY for the last
 * online CPU, or the error of a teardown (startup) callback, the CPU then
 * back where it started. Task context; may sleep.
 */
int remove_cpu(unsigned int cpu);
int add_cpu(unsigned int cpu);

#endif /* UK_LINUX_CPU_H */
