// SPDX-License-Identifier: GPL-2.0-only
// aio at scale: 65536 contexts at once (io_setup(1) each), their memory and
// threads and mappings, and their teardown by io_destroy and by exit_aio. A
// binary of its own: it fills the process's ioctx table.
#include <dirent.h>
#include <stdio.h>
#include <time.h>

#include <vector>

#include <gtest/gtest.h>

#include <uk/linux/aio.h>
#include <uk/linux/aio_abi.h>
#include <uk/linux/errno.h>
#include <uk/linux/percpu.h>

#include "aio_testlib.h"
#include "testmain.h"

namespace
{

long RssKb()
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kb = 0, v;

	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "RssAnon: %ld", &v) == 1 || sscanf(line, "RssShmem: %ld", &v) == 1)
			kb += v;
	fclose(f);
	return kb;
}

long NrMaps()
{
	FILE *f = fopen("/proc/self/maps", "r");
	long n = 0;
	int ch;

	while ((ch = fgetc(f)) != EOF)
		n += ch == '\n';
	fclose(f);
	return n;
}

int NrThreads()
{
	int n = 0;
	DIR *d = opendir("/proc/self/task");
	while (readdir(d))
		n++;
	closedir(d);
	return n - 2;
}

TEST_F(AioTest, SixtyFourThousandContexts)
{
#if defined(UKERN_SANITIZER)
	const int want = 8192;
#elif !defined(NDEBUG)
	const int want = 32768; /* the kernel's linear slot scan is slow at -O0 */
#else
	const int want = 65536;
#endif
	std::vector<aio_context_t> c;
	c.reserve(want + 1);
	{
		/* start the RCU and workqueue threads before counting */
		aio_context_t w = 0;
		ASSERT_EQ(ukern_io_setup(1, &w), 0);
		ASSERT_EQ(ukern_io_destroy(w), 0);
		uk::aio::quiesce();
	}
	long rss0 = RssKb();
	struct timespec t0, t1, t2;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int threads0 = NrThreads();
	long maps0 = NrMaps();
	long r = 0;

	for (int i = 0; i < want; i++) {
		aio_context_t x = 0;
		r = ukern_io_setup(1, &x);
		if (r)
			break;
		c.push_back(x);
	}
	long rss1 = RssKb();
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if ((int)c.size() == want) {
		aio_context_t x = 0;
		/* the next one is over aio_max_nr (65536 x nr 1) only at 64k */
		if (want == 65536) {
			EXPECT_EQ(ukern_io_setup(1, &x), -EAGAIN);
		}
	} else {
		/*
		 * The kernel too stops at vm.max_map_count (one VMA per ring);
		 * ours keeps a reserve of mappings for the process's allocator.
		 */
		EXPECT_EQ(r, -ENOMEM);
		EXPECT_LE(uk::aio::nr_ring_vmas(), uk::aio::ring_vmas_max());
	}
	/*
	 * Neighbouring rings share a VMA: 64k rings do not take 64k of the
	 * process's vm.max_map_count mappings, which its allocator needs too.
	 */
	long vmas = NrMaps() - maps0;
	printf("VMAs: %ld more in the process, %ld counted for the rings\n", vmas,
	       uk::aio::nr_ring_vmas());
	EXPECT_LE(vmas, 256);
	EXPECT_LE(uk::aio::nr_ring_vmas(), 64);
	EXPECT_EQ(NrThreads(), threads0);
	double per_ctx = (double)(rss1 - rss0) * 1024 / c.size();
	RecordProperty("bytes_per_ctx", (int)per_ctx);
	printf("contexts=%zu rss delta per context=%.0f bytes (ring counted in both mappings)\n",
	       c.size(), per_ctx);
#ifndef UKERN_SANITIZER /* shadow memory inflates RSS */
	EXPECT_LE(per_ctx, 16384.0);
#endif
	/* A few by io_destroy, the rest as at process exit (in parallel). */
	for (int i = 0; i < 16; i++)
		ASSERT_EQ(ukern_io_destroy(c[i]), 0);
	uk::aio::reset_mm_for_test();
	clock_gettime(CLOCK_MONOTONIC, &t2);
	printf("setup %.2f s, teardown %.2f s\n",
	       (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9,
	       (t2.tv_sec - t1.tv_sec) + (t2.tv_nsec - t1.tv_nsec) / 1e9);
	EXPECT_EQ(aio_nr, 0UL);
	EXPECT_EQ(uk::aio::nr_live_ctx(), 0);
	/* The user mappings went with the process: two VMAs per arena remain. */
	long arena_vmas = uk::aio::nr_ring_vmas();
	EXPECT_LE(arena_vmas, 2 * (65536 / 16384 + 1));

	/* Nothing else in the process ran out: a context works again. */
	aio_context_t x = 0;
	ASSERT_EQ(ukern_io_setup(1, &x), 0);
	EXPECT_LE(uk::aio::nr_ring_vmas(), arena_vmas + 2);
	ASSERT_EQ(ukern_io_destroy(x), 0);
	EXPECT_EQ(uk::aio::nr_ring_vmas(), arena_vmas);
}

} // namespace
