/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Fault injection (include/linux/fault-inject.h, lib/fault-inject.c): the
 * attribute block that failslab and null_blk's timeout/requeue injection
 * share, configured by the kernel's "<interval>,<probability>,<space>,<times>"
 * strings.
 */
#ifndef UK_LINUX_FAULT_INJECT_H
#define UK_LINUX_FAULT_INJECT_H

#include <uk/linux/atomic.h>
#include <uk/linux/compiler.h>
#include <uk/linux/gfp.h>
#include <uk/linux/types.h>

struct fault_attr {
	unsigned long probability; /* percent, 0..100 */
	unsigned long interval;	   /* fail only every interval-th eligible call */
	atomic_t times;		   /* how many more failures; -1: no limit */
	atomic_t space;		   /* "size" to let through before failing */
	unsigned long verbose;
	bool task_filter;
	unsigned long count; /* calls seen (for interval) */
	u64 seed;	     /* PRNG state, deterministic per attr */
	const char *name;
};

/* clang-format off */
#define FAULT_ATTR_INITIALIZER                                              \
	{ .probability = 0, .interval = 1, .times = ATOMIC_INIT(1),          \
	  .space = ATOMIC_INIT(0), .verbose = 2, .task_filter = false,       \
	  .count = 0, .seed = 0x9e3779b97f4a7c15ULL, .name = "" }
/* clang-format on */
#define DECLARE_FAULT_ATTR(name) struct fault_attr name = FAULT_ATTR_INITIALIZER

/* Parses "<interval>,<probability>,<space>,<times>"; 1 on success, 0 if bad. */
int setup_fault_attr(struct fault_attr *attr, const char *str);
bool should_fail(struct fault_attr *attr, ssize_t size);

/* failslab: kmalloc/kmem_cache allocations fail as fail_attr says. */
struct kmem_cache;
extern struct fault_attr failslab __uk_hidden;
extern bool failslab_ignore_gfp_reclaim;

/*
 * current->fail_nth (/proc/self/fail-nth): when non-zero, each call of
 * should_fail() in task context by this thread counts it down, and the call
 * that takes it to zero fails, whatever the attribute says.
 */
extern __thread unsigned int current_fail_nth __attribute__((tls_model("initial-exec")));

namespace uk
{
/*
 * /proc/self/fail-nth: writing n makes this task's n-th fault-injection
 * call fail (0: none), -EINVAL above INT_MAX; reading gives the calls still
 * to go, 0 once the failure was injected.
 */
int fail_nth_write(unsigned long n);
unsigned int fail_nth_read();
static inline bool fail_nth_armed()
{
	return unlikely(current_fail_nth != 0);
}
/* Only the allocations of this cache (by name) fail; NULL: every cache. */
void failslab_set_cache_filter(const char *name);
bool should_failslab_cache(const char *cache_name, size_t size, gfp_t gfp);
bool should_failslab_percpu(size_t size, gfp_t gfp);
} // namespace uk

#endif /* UK_LINUX_FAULT_INJECT_H */
