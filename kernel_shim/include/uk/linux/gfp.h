/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef UK_LINUX_GFP_H
#define UK_LINUX_GFP_H

#include <uk/linux/types.h>

#define __GFP_DMA 0x01u
#define __GFP_HIGHMEM 0x02u
#define __GFP_DMA32 0x04u
#define __GFP_MOVABLE 0x08u
#define __GFP_RECLAIMABLE 0x10u
#define __GFP_HIGH 0x20u
#define __GFP_IO 0x40u
#define __GFP_FS 0x80u
#define __GFP_ZERO 0x100u
#define __GFP_DIRECT_RECLAIM 0x400u
#define __GFP_KSWAPD_RECLAIM 0x800u
#define __GFP_WRITE 0x1000u
#define __GFP_NOWARN 0x2000u
#define __GFP_RETRY_MAYFAIL 0x4000u
#define __GFP_NOFAIL 0x8000u
#define __GFP_NORETRY 0x10000u
#define __GFP_MEMALLOC 0x20000u
#define __GFP_COMP 0x40000u
#define __GFP_NOMEMALLOC 0x80000u
#define __GFP_HARDWALL 0x100000u
#define __GFP_THISNODE 0x200000u
#define __GFP_ACCOUNT 0x400000u
/*
 * ukern only, for __alloc_percpu_gfp(): a per-CPU counter that is changed
 * only by this_cpu_add()/sub()/inc()/dec() and read as a sum over the
 * possible CPUs. Those adds are restartable sequences on the host CPU's
 * copy instead of atomics (<uk/shim/rseq.h>).
 */
#define __GFP_PCPU_COUNTER 0x80000000u

#define __GFP_RECLAIM (__GFP_DIRECT_RECLAIM | __GFP_KSWAPD_RECLAIM)
#define GFP_ATOMIC (__GFP_HIGH | __GFP_KSWAPD_RECLAIM)
#define GFP_KERNEL (__GFP_RECLAIM | __GFP_IO | __GFP_FS)
#define GFP_KERNEL_ACCOUNT (GFP_KERNEL | __GFP_ACCOUNT)
#define GFP_NOWAIT (__GFP_KSWAPD_RECLAIM)
#define GFP_NOIO (__GFP_RECLAIM)
#define GFP_NOFS (__GFP_RECLAIM | __GFP_IO)
#define GFP_USER (__GFP_RECLAIM | __GFP_IO | __GFP_FS | __GFP_HARDWALL)
#define GFP_HIGHUSER (GFP_USER | __GFP_HIGHMEM)

static inline bool gfpflags_allow_blocking(const gfp_t gfp_flags)
{
	return !!(gfp_flags & __GFP_DIRECT_RECLAIM);
}

#define NUMA_NO_NODE (-1)

/*
 * The page allocator (kernel_shim/page_alloc.cc). Memory is identity mapped:
 * a struct page * is the address of its first byte (page_address(page) ==
 * page), and a block of order n is PAGE_SIZE << n contiguous bytes aligned
 * to PAGE_SIZE. Pages come from a pool of memory that is already backed.
 */
struct page;

/* The largest order the allocator hands out (include/linux/mmzone.h). */
#define MAX_PAGE_ORDER 10

struct page *alloc_pages(gfp_t gfp, unsigned int order);
unsigned long __get_free_pages(gfp_t gfp_mask, unsigned int order);
unsigned long get_zeroed_page(gfp_t gfp_mask);
void __free_pages(struct page *page, unsigned int order);
void free_pages(unsigned long addr, unsigned int order);

/* Every virtual CPU sits on one node: @nid only names the caller's wish. */
static inline struct page *alloc_pages_node(int nid, gfp_t gfp_mask, unsigned int order)
{
	return alloc_pages(gfp_mask, order);
}

#define alloc_page(gfp_mask) alloc_pages(gfp_mask, 0)
#define __get_free_page(gfp_mask) __get_free_pages((gfp_mask), 0)
#define __free_page(page) __free_pages((page), 0)
#define free_page(addr) free_pages((addr), 0)

namespace uk
{
/* Pages handed out and not freed (order n counts 1 << n). */
long page_alloc_nr_allocated();
/* Free pages the pool holds backed, ready to hand out. */
long page_alloc_nr_pooled();
/* Bytes mapped from the host for pages (chunks and large blocks). */
long page_alloc_mapped_bytes();
/* Maps and backs @mb MiB more for the pool (page_alloc.reserve_mb). 0 or -ENOMEM. */
int page_alloc_reserve(unsigned int mb);
} // namespace uk

#endif /* UK_LINUX_GFP_H */
