// SPDX-License-Identifier: GPL-2.0-only
// lib/fault-inject.c and mm/failslab.c.
//
// Upstream: lib/fault-inject.c @ v6.12
// Upstream: mm/failslab.c @ v6.12
#include <climits>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>

#include <uk/linux/fault-inject.h>
#include <uk/linux/errno.h>
#include <uk/linux/kernel.h>
#include <uk/linux/preempt.h>

DECLARE_FAULT_ATTR(failslab);
__thread unsigned int current_fail_nth;
bool failslab_ignore_gfp_reclaim = false;

int setup_fault_attr(struct fault_attr *attr, const char *str)
{
	unsigned long probability, interval;
	int times, space;

	if (sscanf(str, "%lu,%lu,%d,%d", &interval, &probability, &space, &times) < 4) {
		pr_warn("FAULT_INJECTION: failed to parse arguments\n");
		return 0;
	}
	attr->probability = probability;
	attr->interval = interval;
	atomic_set(&attr->times, times);
	atomic_set(&attr->space, space);
	return 1;
}

/* xorshift64*: a per-attribute stream, so a seed gives the same failures. */
static u64 fault_rand(struct fault_attr *attr)
{
	u64 x = __atomic_load_n(&attr->seed, __ATOMIC_RELAXED), n;

	do {
		n = x;
		n ^= n >> 12;
		n ^= n << 25;
		n ^= n >> 27;
	} while (!__atomic_compare_exchange_n(&attr->seed, &x, n, false, __ATOMIC_RELAXED,
					      __ATOMIC_RELAXED));
	return n * 2685821657736338717ULL;
}

bool should_fail(struct fault_attr *attr, ssize_t size)
{
	if (in_task()) {
		unsigned int fail_nth = READ_ONCE(current_fail_nth);

		if (fail_nth) {
			fail_nth--;
			WRITE_ONCE(current_fail_nth, fail_nth);
			if (!fail_nth)
				goto fail;

			return false;
		}
	}

	if (atomic_read(&attr->times) == 0)
		return false;
	if (atomic_read(&attr->space) > size) {
		atomic_sub((int)size, &attr->space);
		return false;
	}
	if (attr->interval > 1) {
		unsigned long c = __atomic_add_fetch(&attr->count, 1, __ATOMIC_RELAXED);

		if (c % attr->interval)
			return false;
	}
	if (attr->probability <= (fault_rand(attr) >> 11) % 100)
		return false;

fail:
	/*
	 * Two callers may both have passed the times == 0 test above: the
	 * second decrement must not take the count from 0 to -1, which
	 * would mean "no limit".
	 */
	if (atomic_read(&attr->times) != -1)
		atomic_dec_not_zero(&attr->times);
	if (attr->verbose > 1)
		pr_notice("FAULT_INJECTION: forcing a failure (%s)\n", attr->name);
	return true;
}

namespace uk
{
namespace
{
std::mutex filter_mu;
std::string *filter_name = nullptr;
bool filter_on = false;
} // namespace

void failslab_set_cache_filter(const char *name)
{
	std::lock_guard<std::mutex> g(filter_mu);
	delete filter_name;
	filter_name = name ? new std::string(name) : nullptr;
	__atomic_store_n(&filter_on, name != nullptr, __ATOMIC_RELAXED);
}

bool should_failslab_cache(const char *cache_name, size_t size, gfp_t gfp)
{
	if (!fail_nth_armed() && (atomic_read(&failslab.times) == 0 || failslab.probability == 0))
		return false;
	if (gfp & __GFP_NOFAIL)
		return false;
	if (failslab_ignore_gfp_reclaim && (gfp & __GFP_DIRECT_RECLAIM))
		return false;
	if (__atomic_load_n(&filter_on, __ATOMIC_RELAXED)) {
		std::lock_guard<std::mutex> g(filter_mu);
		if (filter_name == nullptr || cache_name == nullptr || *filter_name != cache_name)
			return false;
	}
	return should_fail(&failslab, static_cast<ssize_t>(size));
}

int fail_nth_write(unsigned long n)
{
	if (n > INT_MAX)
		return -EINVAL;
	WRITE_ONCE(current_fail_nth, (unsigned int)n);
	return 0;
}

unsigned int fail_nth_read()
{
	return READ_ONCE(current_fail_nth);
}

bool should_failslab_percpu(size_t size, gfp_t gfp)
{
	return should_failslab_cache("percpu", size, gfp);
}

} // namespace uk
