// SPDX-License-Identifier: GPL-2.0-only
// What backing anonymous memory costs on this host, per 4 KiB page:
// first-store faults, MAP_POPULATE, MADV_HUGEPAGE + first stores,
// MADV_HUGEPAGE + MADV_POPULATE_WRITE, and a memset of backed memory.
// cc -O2 -o /tmp/host_fault_cost docs/examples/host_fault_cost.c && /tmp/host_fault_cost
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

#define SZ (512ul << 20)
#define HUGE (2ul << 20)
#define PAGES (SZ / 4096)

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

static char *map_aligned(void)
{
	char *p = mmap(0, SZ + HUGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return (char *)(((uintptr_t)p + HUGE - 1) & ~(HUGE - 1));
}

int main(void)
{
	double t;
	char *p;

	p = map_aligned();
	t = now();
	for (size_t i = 0; i < SZ; i += 4096)
		p[i] = 1;
	printf("first-store faults:          %6.0f ns/page\n", (now() - t) / PAGES * 1e9);

	t = now();
	p = mmap(0, SZ, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	printf("MAP_POPULATE:                %6.0f ns/page\n", (now() - t) / PAGES * 1e9);

	p = map_aligned();
	madvise(p, SZ, MADV_HUGEPAGE);
	t = now();
	for (size_t i = 0; i < SZ; i += 4096)
		p[i] = 1;
	printf("MADV_HUGEPAGE, first stores: %6.0f ns/page\n", (now() - t) / PAGES * 1e9);

	p = map_aligned();
	madvise(p, SZ, MADV_HUGEPAGE);
	t = now();
	madvise(p, SZ, MADV_POPULATE_WRITE);
	printf("MADV_HUGEPAGE, POPULATE:     %6.0f ns/page\n", (now() - t) / PAGES * 1e9);

	t = now();
	for (size_t i = 0; i < SZ; i += 4096)
		memset(p + i, 2, 4096);
	printf("memset of backed memory:     %6.0f ns/page\n", (now() - t) / PAGES * 1e9);
	return 0;
}
