/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The kernel memory leak detector's hooks (include/linux/kmemleak.h) as
 * that header gives them without CONFIG_DEBUG_KMEMLEAK: ukern's leak checks
 * are the slab's and page allocator's counters and the sanitizers, so the
 * hooks do nothing.
 */
#ifndef UK_LINUX_KMEMLEAK_H
#define UK_LINUX_KMEMLEAK_H

#include <uk/linux/gfp.h>

static inline void kmemleak_alloc(const void *ptr, size_t size, int min_count, gfp_t gfp) {}

static inline void kmemleak_free(const void *ptr) {}

#endif /* UK_LINUX_KMEMLEAK_H */
