/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Bounds clamping under speculation (include/linux/nospec.h), the generic
 * form: array_index_nospec(index, size) is index when index < size and 0
 * otherwise, computed without a branch the CPU could mispredict past.
 */
#ifndef UK_LINUX_NOSPEC_H
#define UK_LINUX_NOSPEC_H

#include <uk/linux/compiler.h>

/* ~0UL when index < size, 0 otherwise (both below LONG_MAX). */
static inline unsigned long array_index_mask_nospec(unsigned long index, unsigned long size)
{
	/* The sign bit is set only when neither index nor size - 1 - index wrapped. */
	return (unsigned long)(~(long)(index | (size - 1UL - index)) >> (sizeof(long) * 8 - 1));
}

#define array_index_nospec(index, size)                                \
	({                                                             \
		__typeof__(index) _i = (index);                        \
		__typeof__(size) _s = (size);                          \
		unsigned long _mask = array_index_mask_nospec(_i, _s); \
		(__typeof__(_i))(_i & _mask);                          \
	})

#endif /* UK_LINUX_NOSPEC_H */
