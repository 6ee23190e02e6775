/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * CPU masks over the virtual CPUs. All nr_cpu_ids CPUs are possible and
 * present (rebuilt when the CPU count is set, nr_cpus=); cpu_online_mask is
 * the subset that CPU hotplug (<uk/linux/cpu.h>) has not taken down. A mask
 * is a bitmap of NR_CPUS bits on the stack or in its structure:
 * cpumask_var_t is the !CONFIG_CPUMASK_OFFSTACK form, and its allocation
 * cannot fail.
 */
#ifndef UK_LINUX_CPUMASK_H
#define UK_LINUX_CPUMASK_H

#include <uk/linux/bitmap.h>
#include <uk/linux/bitops.h>
#include <uk/linux/find.h>
#include <uk/linux/gfp.h>
#include <uk/shim/cpu.h>

#define for_each_possible_cpu(cpu) for ((cpu) = 0; (cpu) < (int)nr_cpu_ids; (cpu)++)
#define for_each_online_cpu(cpu) for_each_cpu((cpu), cpu_online_mask)
#define for_each_present_cpu(cpu) for_each_possible_cpu (cpu)
#define num_possible_cpus() (nr_cpu_ids)
#define num_online_cpus() cpumask_weight(cpu_online_mask)
#define num_present_cpus() (nr_cpu_ids)
#define cpu_online(cpu) \
	((unsigned int)(cpu) < nr_cpu_ids && cpumask_test_cpu((cpu), cpu_online_mask))
#define cpu_possible(cpu) ((unsigned int)(cpu) < nr_cpu_ids)
#define cpu_present(cpu) cpu_possible(cpu)

static inline unsigned int cpumask_next_wrap_cpu(int cpu)
{
	return (unsigned int)(cpu + 1) < nr_cpu_ids ? cpu + 1 : 0;
}

struct cpumask {
	DECLARE_BITMAP(bits, NR_CPUS);
};
typedef struct cpumask cpumask_t;
typedef struct cpumask cpumask_var_t[1];

#define cpumask_bits(maskp) ((maskp)->bits)

/*
 * The possible (and present) CPUs, set whenever nr_cpu_ids changes; the
 * online ones, which CPU hotplug changes too.
 */
extern struct cpumask __cpu_possible_mask __uk_hidden;
extern struct cpumask __cpu_online_mask __uk_hidden;
#define cpu_online_mask ((const struct cpumask *)&__cpu_online_mask)
#define cpu_possible_mask ((const struct cpumask *)&__cpu_possible_mask)
#define cpu_present_mask cpu_possible_mask

static inline void cpumask_set_cpu(unsigned int cpu, struct cpumask *dstp)
{
	set_bit(cpu, cpumask_bits(dstp));
}

static inline void cpumask_clear_cpu(int cpu, struct cpumask *dstp)
{
	clear_bit(cpu, cpumask_bits(dstp));
}

static inline bool cpumask_test_cpu(int cpu, const struct cpumask *cpumask)
{
	return test_bit(cpu, cpumask_bits(cpumask));
}

static inline void cpumask_clear(struct cpumask *dstp)
{
	bitmap_zero(cpumask_bits(dstp), NR_CPUS);
}

static inline unsigned int cpumask_first(const struct cpumask *srcp)
{
	return find_first_bit(cpumask_bits(srcp), nr_cpu_ids);
}

static inline unsigned int cpumask_first_and(const struct cpumask *srcp1,
					     const struct cpumask *srcp2)
{
	return find_next_and_bit(cpumask_bits(srcp1), cpumask_bits(srcp2), nr_cpu_ids, 0);
}

/* The first CPU of @srcp after @n (-1 for the first), or nr_cpu_ids. */
static inline unsigned int cpumask_next(int n, const struct cpumask *srcp)
{
	return find_next_bit(cpumask_bits(srcp), nr_cpu_ids, n + 1);
}

static inline unsigned int cpumask_next_and(int n, const struct cpumask *src1p,
					    const struct cpumask *src2p)
{
	return find_next_and_bit(cpumask_bits(src1p), cpumask_bits(src2p), nr_cpu_ids, n + 1);
}

static inline bool cpumask_empty(const struct cpumask *srcp)
{
	return cpumask_first(srcp) >= nr_cpu_ids;
}

static inline unsigned int cpumask_weight(const struct cpumask *srcp)
{
	return bitmap_weight(cpumask_bits(srcp), nr_cpu_ids);
}

#define for_each_cpu(cpu, mask)                                                  \
	for ((cpu) = cpumask_next(-1, (mask)); (unsigned int)(cpu) < nr_cpu_ids; \
	     (cpu) = cpumask_next((cpu), (mask)))

static inline bool zalloc_cpumask_var_node(cpumask_var_t *mask, gfp_t flags, int node)
{
	cpumask_clear(*mask);
	return true;
}

static inline bool zalloc_cpumask_var(cpumask_var_t *mask, gfp_t flags)
{
	cpumask_clear(*mask);
	return true;
}

static inline void free_cpumask_var(cpumask_var_t mask) {}

/* No CPU is kept from kernel work (no isolcpus= or nohz_full=). */
static inline bool cpu_is_isolated(int cpu)
{
	return false;
}

#endif /* UK_LINUX_CPUMASK_H */
