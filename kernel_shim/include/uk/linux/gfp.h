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

#endif /* UK_LINUX_GFP_H */
