/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Upstream: include/linux/err.h @ v6.12
 */
#ifndef UK_LINUX_ERR_H
#define UK_LINUX_ERR_H

#include <uk/linux/compiler.h>
#include <uk/linux/errno.h>

#define IS_ERR_VALUE(x) unlikely((unsigned long)(void *)(x) >= (unsigned long)-MAX_ERRNO)

static inline uk::any_ptr __must_check ERR_PTR(long error)
{
	return uk::any_ptr{ (void *)error };
}

static __always_inline long __must_check PTR_ERR(__force const void *ptr)
{
	return (long)ptr;
}

static __always_inline bool __must_check IS_ERR(__force const void *ptr)
{
	return IS_ERR_VALUE((unsigned long)ptr);
}

static __always_inline bool __must_check IS_ERR_OR_NULL(__force const void *ptr)
{
	return unlikely(!ptr) || IS_ERR_VALUE((unsigned long)ptr);
}

static inline uk::any_ptr __must_check ERR_CAST(const void *ptr)
{
	return uk::any_ptr{ (void *)ptr };
}

static __always_inline int __must_check PTR_ERR_OR_ZERO(__force const void *ptr)
{
	if (IS_ERR(ptr))
		return PTR_ERR(ptr);
	else
		return 0;
}

#endif /* UK_LINUX_ERR_H */
