/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Memory pools (include/linux/mempool.h, mm/mempool.c): a reserve of
 * min_nr preallocated elements, so that an allocation that may sleep
 * always gets one (from the allocator, else the reserve, else by waiting
 * for an element to come back), whatever the allocator does.
 */
#ifndef UK_LINUX_MEMPOOL_H
#define UK_LINUX_MEMPOOL_H

#include <uk/linux/gfp.h>
#include <uk/linux/slab.h>
#include <uk/linux/spinlock.h>
#include <uk/linux/wait.h>

typedef void *(mempool_alloc_t)(gfp_t gfp_mask, void *pool_data);
typedef void(mempool_free_t)(void *element, void *pool_data);

typedef struct mempool_s {
	spinlock_t lock;
	int min_nr;	 /* the reserve's size */
	int curr_nr;	 /* elements in the reserve now */
	void **elements; /* the reserve */

	void *pool_data;
	mempool_alloc_t *alloc;
	mempool_free_t *free;
	wait_queue_head_t wait;
} mempool_t;

static inline bool mempool_initialized(mempool_t *pool)
{
	return pool->elements != NULL;
}

/* The reserve is full: every preallocated element is back in it. */
static inline bool mempool_is_saturated(mempool_t *pool)
{
	return READ_ONCE(pool->curr_nr) >= pool->min_nr;
}

int mempool_init(mempool_t *pool, int min_nr, mempool_alloc_t *alloc_fn, mempool_free_t *free_fn,
		 void *pool_data);
void mempool_exit(mempool_t *pool);
uk::any_ptr mempool_alloc(mempool_t *pool, gfp_t gfp_mask);
void mempool_free(void *element, mempool_t *pool);

void *mempool_alloc_slab(gfp_t gfp_mask, void *pool_data);
void mempool_free_slab(void *element, void *pool_data);

static inline int mempool_init_slab_pool(mempool_t *pool, int min_nr, struct kmem_cache *kc)
{
	return mempool_init(pool, min_nr, mempool_alloc_slab, mempool_free_slab, (void *)kc);
}

#endif /* UK_LINUX_MEMPOOL_H */
