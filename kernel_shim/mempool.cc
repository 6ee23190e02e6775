// SPDX-License-Identifier: GPL-2.0-only
// mm/mempool.c: the element reserve, without the debug poisoning, kmemleak
// or KASAN hooks and without mempool_resize() or the kmalloc/page pools.
#include <uk/linux/jiffies.h>
#include <uk/linux/minmax.h>
#include <uk/linux/mempool.h>
#include <uk/linux/printk.h>
#include <uk/linux/sched.h>

/*
 * curr_nr changes under pool->lock and is read without it by mempool_free()
 * (READ_ONCE): the kernel takes word-sized plain stores as atomic; the
 * stores are marked here, so that ThreadSanitizer agrees.
 */
static __always_inline void add_element(mempool_t *pool, void *element)
{
	BUG_ON(pool->curr_nr >= pool->min_nr);
	pool->elements[pool->curr_nr] = element;
	WRITE_ONCE(pool->curr_nr, pool->curr_nr + 1);
}

static void *remove_element(mempool_t *pool)
{
	WRITE_ONCE(pool->curr_nr, pool->curr_nr - 1);
	void *element = pool->elements[pool->curr_nr];

	BUG_ON(pool->curr_nr < 0);
	return element;
}

void mempool_exit(mempool_t *pool)
{
	while (pool->curr_nr) {
		void *element = remove_element(pool);

		pool->free(element, pool->pool_data);
	}
	kfree(pool->elements);
	pool->elements = NULL;
}

int mempool_init(mempool_t *pool, int min_nr, mempool_alloc_t *alloc_fn, mempool_free_t *free_fn,
		 void *pool_data)
{
	spin_lock_init(&pool->lock);
	pool->min_nr = min_nr;
	pool->pool_data = pool_data;
	pool->alloc = alloc_fn;
	pool->free = free_fn;
	init_waitqueue_head(&pool->wait);
	pool->curr_nr = 0;

	/* Room for one element at least, for a pool of none. */
	pool->elements = (void **)kmalloc_array(max(1, min_nr), sizeof(void *), GFP_KERNEL);
	if (!pool->elements)
		return -ENOMEM;

	/* Fill the reserve. */
	while (pool->curr_nr < pool->min_nr) {
		void *element;

		element = pool->alloc(GFP_KERNEL, pool->pool_data);
		if (unlikely(!element)) {
			mempool_exit(pool);
			return -ENOMEM;
		}
		add_element(pool, element);
	}

	return 0;
}

uk::any_ptr mempool_alloc(mempool_t *pool, gfp_t gfp_mask)
{
	void *element;
	unsigned long flags;
	struct wait_queue_entry wait;
	gfp_t gfp_temp;

	if (gfp_mask & __GFP_DIRECT_RECLAIM)
		might_sleep();

	/* The reserve is the fallback: no emergency memory, retries or warnings. */
	gfp_mask |= __GFP_NOMEMALLOC;
	gfp_mask |= __GFP_NORETRY;
	gfp_mask |= __GFP_NOWARN;

	gfp_temp = gfp_mask & ~(__GFP_DIRECT_RECLAIM | __GFP_IO);

repeat_alloc:

	element = pool->alloc(gfp_temp, pool->pool_data);
	if (likely(element != NULL))
		return uk::any_ptr{ element };

	spin_lock_irqsave(&pool->lock, flags);
	if (likely(pool->curr_nr)) {
		element = remove_element(pool);
		spin_unlock_irqrestore(&pool->lock, flags);
		/* Pairs with the smp_rmb() of mempool_free(). */
		smp_wmb();
		return uk::any_ptr{ element };
	}

	/*
	 * The first try could not reclaim and the reserve is empty: try
	 * again at once with the caller's own mask.
	 */
	if (gfp_temp != gfp_mask) {
		spin_unlock_irqrestore(&pool->lock, flags);
		gfp_temp = gfp_mask;
		goto repeat_alloc;
	}

	/* A caller that may not sleep gets NULL. */
	if (!(gfp_mask & __GFP_DIRECT_RECLAIM)) {
		spin_unlock_irqrestore(&pool->lock, flags);
		return uk::any_ptr{ nullptr };
	}

	/* Sleep until mempool_free() puts an element back, then retry. */
	init_wait(&wait);
	prepare_to_wait(&pool->wait, &wait, TASK_UNINTERRUPTIBLE);

	spin_unlock_irqrestore(&pool->lock, flags);

	schedule_timeout(5 * HZ);

	finish_wait(&pool->wait, &wait);
	goto repeat_alloc;
}

void mempool_free(void *element, mempool_t *pool)
{
	unsigned long flags;

	if (unlikely(element == NULL))
		return;

	/*
	 * The barrier pairs with the smp_wmb() in mempool_alloc(): an
	 * element freed on another CPU after the pool was seen short is
	 * seen here, and goes back to the reserve.
	 */
	smp_rmb();

	if (unlikely(READ_ONCE(pool->curr_nr) < pool->min_nr)) {
		spin_lock_irqsave(&pool->lock, flags);
		if (likely(pool->curr_nr < pool->min_nr)) {
			add_element(pool, element);
			spin_unlock_irqrestore(&pool->lock, flags);
			wake_up(&pool->wait);
			return;
		}
		spin_unlock_irqrestore(&pool->lock, flags);
	}
	pool->free(element, pool->pool_data);
}

void *mempool_alloc_slab(gfp_t gfp_mask, void *pool_data)
{
	struct kmem_cache *mem = (struct kmem_cache *)pool_data;

	return kmem_cache_alloc(mem, gfp_mask);
}

void mempool_free_slab(void *element, void *pool_data)
{
	struct kmem_cache *mem = (struct kmem_cache *)pool_data;

	kmem_cache_free(mem, element);
}
