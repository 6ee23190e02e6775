/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A minimal XArray (include/linux/xarray.h): an array of pointers indexed
 * by unsigned long, with the kernel's names for the normal API and its
 * error entries. It is an ordered map under xa_lock
 * (kernel_shim/xarray.cc), not the kernel's radix of nodes: xa_load()
 * takes the lock where the kernel's reads under RCU, marks and ranges are
 * not there, and xa_store() of NULL erases the entry as in the kernel.
 */
#ifndef UK_LINUX_XARRAY_H
#define UK_LINUX_XARRAY_H

#include <uk/linux/err.h>
#include <uk/linux/gfp.h>
#include <uk/linux/spinlock.h>

struct xarray {
	spinlock_t xa_lock;
	gfp_t xa_flags;
	void *xa_head; /* the shim's map, allocated by the first store */
};

#define XARRAY_INIT(name, flags)                                                                  \
	{                                                                                         \
		.xa_lock = __SPIN_LOCK_UNLOCKED(name.xa_lock), .xa_flags = flags, .xa_head = NULL \
	}
#define DEFINE_XARRAY_FLAGS(name, flags) struct xarray name = XARRAY_INIT(name, flags)
#define DEFINE_XARRAY(name) DEFINE_XARRAY_FLAGS(name, 0)

static inline void xa_init_flags(struct xarray *xa, gfp_t flags)
{
	spin_lock_init(&xa->xa_lock);
	xa->xa_flags = flags;
	xa->xa_head = NULL;
}

static inline void xa_init(struct xarray *xa)
{
	xa_init_flags(xa, 0);
}

static inline bool xa_empty(const struct xarray *xa)
{
	return xa->xa_head == NULL;
}

/* Internal entries: the low two bits are 10 (error codes among them). */
static inline void *xa_mk_internal(unsigned long v)
{
	return (void *)((v << 2) | 2);
}

static inline bool xa_is_internal(const void *entry)
{
	return ((unsigned long)entry & 3) == 2;
}

static inline bool xa_is_err(const void *entry)
{
	return unlikely(xa_is_internal(entry) && entry >= xa_mk_internal(-MAX_ERRNO));
}

static inline int xa_err(void *entry)
{
	if (xa_is_err(entry))
		return (long)entry >> 2;
	return 0;
}

/* The entry at @index, or NULL. */
void *xa_load(struct xarray *xa, unsigned long index);
/*
 * Puts @entry at @index and returns the entry it replaces (NULL if none).
 * Storing NULL erases. The map's nodes come from the host allocator, so
 * no error entry comes back.
 */
void *xa_store(struct xarray *xa, unsigned long index, void *entry, gfp_t gfp);
/* Removes the entry at @index and returns it (NULL if none). */
void *xa_erase(struct xarray *xa, unsigned long index);
/* Frees what the array holds of its own; the entries are the caller's. */
void xa_destroy(struct xarray *xa);

#endif /* UK_LINUX_XARRAY_H */
