// SPDX-License-Identifier: GPL-2.0-only
// The leak counters that tools/failsweep and tools/soak compare before and
// after a run: live objects per slab cache and in all, percpu bytes, aio
// contexts and requests, and WARNs, each read once deferred frees have
// settled.
#ifndef UKERN_TOOLS_COMMON_UKERN_COUNTS_H_
#define UKERN_TOOLS_COMMON_UKERN_COUNTS_H_

#include <cstddef>
#include <map>
#include <string>

#include <uk/linux/aio.h>
#include <uk/linux/cpumask.h>
#include <uk/linux/percpu.h>
#include <uk/linux/printk.h>
#include <uk/linux/radix-tree.h>
#include <uk/linux/rcupdate.h>
#include <uk/linux/slab.h>
#include <uk/linux/workqueue.h>

#include "../../blk/blk-mq.h"

namespace toolcounts
{

struct Counts {
	std::map<std::string, long> caches; // live objects by slab cache
	long slab, live_ctx, live_reqs, warns;
	size_t pcpu;
};

// Runs what is deferred: kblockd's work, aio's, RCU callbacks.
inline void settle()
{
	int cpu;

	if (kblockd_workqueue)
		flush_workqueue(kblockd_workqueue);
	uk::aio::quiesce();
	rcu_barrier();
	uk::aio::quiesce();
	// The per-CPU radix-tree node preloads (null_blk's pages) are a
	// cache, not a leak: emptied as on CPU offline.
	for_each_possible_cpu (cpu)
		radix_tree_cpu_dead(cpu);
}

inline Counts counts()
{
	// Frees that settling sets off (an RCU callback queueing work, say)
	// settle in their turn: until the count holds.
	long prev;

	settle();
	for (int i = 0; i < 20; i++) {
		prev = uk::slab_total_allocated();
		settle();
		if (uk::slab_total_allocated() == prev)
			break;
	}
	Counts c{};

	uk::slab_for_each_cache(
		[](const char *name, long live, void *arg) {
			(*static_cast<std::map<std::string, long> *>(arg))[name] += live;
		},
		&c.caches);
	c.slab = uk::slab_total_allocated();
	c.live_ctx = uk::aio::nr_live_ctx();
	c.live_reqs = uk::aio::nr_live_reqs();
	c.warns = uk::warn_count;
	c.pcpu = uk::percpu_bytes_in_use();
	return c;
}

} // namespace toolcounts

#endif // UKERN_TOOLS_COMMON_UKERN_COUNTS_H_
