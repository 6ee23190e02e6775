/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * All nr_cpu_ids virtual CPUs are possible and online; there is no hotplug.
 */
#ifndef UK_LINUX_CPUMASK_H
#define UK_LINUX_CPUMASK_H

#include <uk/shim/cpu.h>

#define for_each_possible_cpu(cpu) for ((cpu) = 0; (cpu) < (int)nr_cpu_ids; (cpu)++)
#define for_each_online_cpu(cpu) for_each_possible_cpu (cpu)
#define for_each_present_cpu(cpu) for_each_possible_cpu (cpu)
#define num_possible_cpus() (nr_cpu_ids)
#define num_online_cpus() (nr_cpu_ids)
#define num_present_cpus() (nr_cpu_ids)
#define cpu_online(cpu) ((unsigned int)(cpu) < nr_cpu_ids)
#define cpu_possible(cpu) ((unsigned int)(cpu) < nr_cpu_ids)

static inline unsigned int cpumask_next_wrap_cpu(int cpu)
{
	return (unsigned int)(cpu + 1) < nr_cpu_ids ? cpu + 1 : 0;
}

#endif /* UK_LINUX_CPUMASK_H */
