/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * kmalloc and kmem_cache (include/linux/slab.h). Objects come from jemalloc
 * in release builds and from the system allocator under sanitizers. Every
 * cache counts its live objects, and so does kmalloc as a whole, so tests
 * can check for leaks; failslab (<uk/linux/fault-inject.h>) makes chosen
 * allocations fail.
 */
#ifndef UK_LINUX_SLAB_H
#define UK_LINUX_SLAB_H

#include <uk/linux/cleanup.h>
#include <uk/linux/compiler.h>
#include <uk/linux/err.h>
#include <uk/linux/gfp.h>
#include <uk/linux/types.h>

#define SLAB_HWCACHE_ALIGN 0x00002000u
#define SLAB_PANIC 0x00040000u
#define SLAB_TYPESAFE_BY_RCU 0x00080000u
#define SLAB_ACCOUNT 0x04000000u
#define SLAB_RECLAIM_ACCOUNT 0x00020000u
#define SLAB_POISON 0x00000800u

#define ZERO_SIZE_PTR ((void *)16)
#define ZERO_OR_NULL_PTR(x) ((unsigned long)(x) <= (unsigned long)ZERO_SIZE_PTR)
#define KMALLOC_MAX_SIZE (1UL << 30)
#define ARCH_KMALLOC_MINALIGN 16

typedef unsigned int slab_flags_t;
struct kmem_cache;

struct kmem_cache *kmem_cache_create(const char *name, unsigned int size, unsigned int align,
				     slab_flags_t flags, void (*ctor)(void *));
void kmem_cache_destroy(struct kmem_cache *s);
uk::any_ptr kmem_cache_alloc(struct kmem_cache *s, gfp_t flags);
void kmem_cache_free(struct kmem_cache *s, void *objp);
int kmem_cache_alloc_bulk(struct kmem_cache *s, gfp_t flags, size_t size, void **p);
void kmem_cache_free_bulk(struct kmem_cache *s, size_t size, void **p);
unsigned int kmem_cache_size(struct kmem_cache *s);
int kmem_cache_shrink(struct kmem_cache *s);

static inline uk::any_ptr kmem_cache_zalloc(struct kmem_cache *k, gfp_t flags)
{
	return kmem_cache_alloc(k, flags | __GFP_ZERO);
}

#define KMEM_CACHE(__struct, __flags)                                                       \
	kmem_cache_create(#__struct, sizeof(struct __struct), __alignof__(struct __struct), \
			  (__flags), NULL)

uk::any_ptr __kmalloc(size_t size, gfp_t flags);
void kfree(const void *objp);
void kfree_sensitive(const void *objp);
uk::any_ptr krealloc(const void *p, size_t new_size, gfp_t flags);
size_t ksize(const void *objp);
/*
 * Continues a message with what is known of @object, which is NULL,
 * ZERO_SIZE_PTR or from the slab allocator: its usable size.
 */
void mem_dump_obj(void *object);

DEFINE_FREE(kfree, void *, if (!IS_ERR_OR_NULL(_T)) kfree(_T))

static inline uk::any_ptr kmalloc(size_t size, gfp_t flags)
{
	return __kmalloc(size, flags);
}

static inline uk::any_ptr kzalloc(size_t size, gfp_t flags)
{
	return __kmalloc(size, flags | __GFP_ZERO);
}

static inline uk::any_ptr kmalloc_node(size_t size, gfp_t flags, int node)
{
	return __kmalloc(size, flags);
}

static inline uk::any_ptr kzalloc_node(size_t size, gfp_t flags, int node)
{
	return __kmalloc(size, flags | __GFP_ZERO);
}

static inline uk::any_ptr kmalloc_array(size_t n, size_t size, gfp_t flags)
{
	size_t bytes;

	if (unlikely(__builtin_mul_overflow(n, size, &bytes)))
		return uk::any_ptr{ nullptr };
	return __kmalloc(bytes, flags);
}

static inline uk::any_ptr kcalloc(size_t n, size_t size, gfp_t flags)
{
	return kmalloc_array(n, size, flags | __GFP_ZERO);
}

static inline uk::any_ptr kcalloc_node(size_t n, size_t size, gfp_t flags, int node)
{
	return kcalloc(n, size, flags);
}

static inline uk::any_ptr krealloc_array(void *p, size_t new_n, size_t new_size, gfp_t flags)
{
	size_t bytes;

	if (unlikely(__builtin_mul_overflow(new_n, new_size, &bytes)))
		return uk::any_ptr{ nullptr };
	return krealloc(p, bytes, flags);
}

/* kvmalloc: no separate vmalloc space in user mode; same allocator. */
static inline uk::any_ptr kvmalloc(size_t size, gfp_t flags)
{
	return __kmalloc(size, flags);
}

static inline uk::any_ptr kvzalloc(size_t size, gfp_t flags)
{
	return __kmalloc(size, flags | __GFP_ZERO);
}

static inline uk::any_ptr kvmalloc_node(size_t size, gfp_t flags, int node)
{
	return __kmalloc(size, flags);
}

static inline uk::any_ptr kvmalloc_array(size_t n, size_t size, gfp_t flags)
{
	return kmalloc_array(n, size, flags);
}

static inline uk::any_ptr kvcalloc(size_t n, size_t size, gfp_t flags)
{
	return kcalloc(n, size, flags);
}

static inline void kvfree(const void *addr)
{
	kfree(addr);
}

DEFINE_FREE(kvfree, void *, if (!IS_ERR_OR_NULL(_T)) kvfree(_T))

#define vmalloc(size) kvmalloc((size), GFP_KERNEL)
#define vzalloc(size) kvzalloc((size), GFP_KERNEL)
#define vfree(p) kvfree(p)

char *kstrdup(const char *s, gfp_t gfp);
char *kstrndup(const char *s, size_t max, gfp_t gfp);
uk::any_ptr kmemdup(const void *src, size_t len, gfp_t gfp);

namespace uk
{
/* Live objects of one cache, of kmalloc, and of every cache plus kmalloc. */
long slab_nr_allocated(struct kmem_cache *s);
long kmalloc_nr_allocated();
long slab_total_allocated();
/* Objects ever allocated from @s (including freed ones). */
long slab_nr_tallocated(struct kmem_cache *s);
const char *kmem_cache_name(struct kmem_cache *s);
/* Each live cache's name and live objects, kmalloc's first ("kmalloc"). */
void slab_for_each_cache(void (*fn)(const char *name, long live, void *arg), void *arg);
/* Empties the calling thread's magazines, as its exit does; its next
 * allocation takes the path of a new thread's first. */
void slab_flush_thread(void);
} // namespace uk

#endif /* UK_LINUX_SLAB_H */
