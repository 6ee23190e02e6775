// SPDX-License-Identifier: GPL-2.0-only
// io_setup() with each of its allocations failing in turn (fail-nth): the
// kernel's -ENOMEM, and no radix-tree node left in the lookup tree (the
// fail-nth sweep's finding: an insert that failed halfway kept its nodes).
#include <gtest/gtest.h>

#include <string>

#include <uk/linux/aio.h>
#include <uk/linux/cpumask.h>
#include <uk/linux/errno.h>
#include <uk/linux/fault-inject.h>
#include <uk/linux/radix-tree.h>
#include <uk/linux/slab.h>

#include "aio_testlib.h"

namespace
{

// Live radix-tree nodes outside the per-CPU preloads.
long RadixNodesInTrees()
{
	int cpu;
	for_each_possible_cpu (cpu)
		radix_tree_cpu_dead(cpu);
	uk::aio::quiesce();
	long n = 0;
	uk::slab_for_each_cache(
		[](const char *name, long live, void *arg) {
			if (std::string(name) == "radix_tree_node")
				*static_cast<long *>(arg) += live;
		},
		&n);
	return n;
}

class AioFailNthTest : public AioTest
{
      protected:
	void TearDown() override
	{
		uk::fail_nth_write(0);
		AioTest::TearDown();
	}
};

TEST_F(AioFailNthTest, IoSetupFailsCleanlyAtEveryAllocation)
{
	unsigned long ctx = 0;
	ASSERT_EQ(ukern_io_setup(64, &ctx), 0); // the mm's table, once
	ASSERT_EQ(ukern_io_destroy(ctx), 0);
	long nodes = RadixNodesInTrees();
	unsigned n;
	for (n = 1; n < 200; n++) {
		ctx = 0;
		ASSERT_EQ(uk::fail_nth_write(n), 0);
		long r = ukern_io_setup(64, &ctx);
		bool injected = uk::fail_nth_read() == 0;
		uk::fail_nth_write(0);
		if (r == 0) {
			ASSERT_EQ(ukern_io_destroy(ctx), 0);
		}
		if (!injected)
			break;
		EXPECT_EQ(r, -ENOMEM) << "fail-nth " << n;
		EXPECT_EQ(ctx, 0UL) << "fail-nth " << n;
		EXPECT_EQ(RadixNodesInTrees(), nodes) << "fail-nth " << n;
	}
	EXPECT_GT(n, 1U);
	EXPECT_LT(n, 200U);
}

} // namespace
