/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Size arithmetic that saturates (include/linux/overflow.h): a size that
 * would wrap becomes SIZE_MAX, so that an allocation of it fails instead of
 * coming back too small.
 */
#ifndef UK_LINUX_OVERFLOW_H
#define UK_LINUX_OVERFLOW_H

#include <cstddef>
#include <cstdint>

#include <uk/linux/compiler.h>

#define check_add_overflow(a, b, d) __builtin_add_overflow(a, b, d)
#define check_mul_overflow(a, b, d) __builtin_mul_overflow(a, b, d)

static inline size_t size_mul(size_t factor1, size_t factor2)
{
	size_t bytes;

	if (check_mul_overflow(factor1, factor2, &bytes))
		return SIZE_MAX;
	return bytes;
}

static inline size_t size_add(size_t addend1, size_t addend2)
{
	size_t bytes;

	if (check_add_overflow(addend1, addend2, &bytes))
		return SIZE_MAX;
	return bytes;
}

/* Bytes of *@p with @count elements of its flexible array @member. */
#define struct_size(p, member, count) size_add(sizeof(*(p)), size_mul(count, sizeof(*(p)->member)))

#endif /* UK_LINUX_OVERFLOW_H */
