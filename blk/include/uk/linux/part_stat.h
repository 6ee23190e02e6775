/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Per-CPU I/O statistics of a block device (include/linux/part_stat.h):
 * what /sys/block/<dev>/stat sums up (part_stat_show()). Each CPU updates
 * its own copy between part_stat_lock() and part_stat_unlock(); a reader
 * adds the copies of every possible CPU.
 */
#ifndef UK_LINUX_PART_STAT_H
#define UK_LINUX_PART_STAT_H

#include <uk/asm/local.h>
#include <uk/linux/blkdev.h>
#include <uk/linux/cpumask.h>
#include <uk/linux/percpu.h>

struct disk_stats {
	u64 nsecs[NR_STAT_GROUPS];
	unsigned long sectors[NR_STAT_GROUPS];
	unsigned long ios[NR_STAT_GROUPS];
	unsigned long merges[NR_STAT_GROUPS];
	unsigned long io_ticks;
	local_t in_flight[2];
};

/*
 * The kernel disables preemption here because __this_cpu_add() and the
 * local_t updates are plain read-modify-writes of one CPU's copy. In the
 * shim each of them is a single atomic update of the copy of the CPU the
 * task runs on at that instant (<uk/linux/percpu.h>, <uk/asm/local.h>), so
 * the sums stay exact without holding the CPU; preempt_disable() would take
 * the virtual CPU exclusively, about 50 instructions per section, three
 * sections per I/O.
 */
#define part_stat_lock() \
	do {             \
	} while (0)
#define part_stat_unlock() \
	do {               \
	} while (0)

#define part_stat_get_cpu(part, field, cpu) (per_cpu_ptr((part)->bd_stats, (cpu))->field)

#define part_stat_get(part, field) part_stat_get_cpu(part, field, smp_processor_id())

#define part_stat_read(part, field)                                        \
	({                                                                 \
		__typeof__((part)->bd_stats->field) res = 0;               \
		int _cpu;                                                  \
		for_each_possible_cpu (_cpu)                               \
			res += per_cpu_ptr((part)->bd_stats, _cpu)->field; \
		res;                                                       \
	})

#define part_stat_read_accum(part, field)                                                   \
	(part_stat_read(part, field[STAT_READ]) + part_stat_read(part, field[STAT_WRITE]) + \
	 part_stat_read(part, field[STAT_DISCARD]))

#define __part_stat_add(part, field, addnd) __this_cpu_add((part)->bd_stats->field, addnd)

#define part_stat_add(part, field, addnd)                                \
	do {                                                             \
		__part_stat_add((part), field, addnd);                   \
		if (bdev_is_partition(part))                             \
			__part_stat_add(bdev_whole(part), field, addnd); \
	} while (0)

#define part_stat_dec(part, field) part_stat_add(part, field, -1)
#define part_stat_inc(part, field) part_stat_add(part, field, 1)
#define part_stat_sub(part, field, subnd) part_stat_add(part, field, -subnd)

#define part_stat_local_dec(part, field) local_dec(&(part_stat_get(part, field)))
#define part_stat_local_inc(part, field) local_inc(&(part_stat_get(part, field)))
#define part_stat_local_read(part, field) local_read(&(part_stat_get(part, field)))
#define part_stat_local_read_cpu(part, field, cpu) \
	local_read(&(part_stat_get_cpu(part, field, cpu)))

#endif /* UK_LINUX_PART_STAT_H */
