/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Bounds clamping under speculation (include/linux/nospec.h):
 * array_index_nospec(index, size) is index when index < size and 0
 * otherwise, computed without a branch the CPU could mispredict past. The
 * mask is x86's on x86-64, the generic one elsewhere.
 */
#ifndef UK_LINUX_NOSPEC_H
#define UK_LINUX_NOSPEC_H

#include <uk/linux/compiler.h>

#if defined(__x86_64__)
/*
 * x86's own form (arch/x86/include/asm/barrier.h): the compare leaves the
 * carry set when index < size, and subtracting a register from itself with
 * the borrow turns the carry into ~0UL, with no branch.
 */
static inline unsigned long array_index_mask_nospec(unsigned long index, unsigned long size)
{
	unsigned long mask;

	asm volatile("cmp %1,%2; sbb %0,%0;" : "=r"(mask) : "g"(size), "r"(index) : "cc");
	return mask;
}
#else
/* ~0UL when index < size, 0 otherwise (both below LONG_MAX). */
static inline unsigned long array_index_mask_nospec(unsigned long index, unsigned long size)
{
	/* The sign bit is set only when neither index nor size - 1 - index wrapped. */
	return (unsigned long)(~(long)(index | (size - 1UL - index)) >> (sizeof(long) * 8 - 1));
}
#endif

#define array_index_nospec(index, size)                                \
	({                                                             \
		__typeof__(index) _i = (index);                        \
		__typeof__(size) _s = (size);                          \
		unsigned long _mask = array_index_mask_nospec(_i, _s); \
		(__typeof__(_i))(_i & _mask);                          \
	})

#endif /* UK_LINUX_NOSPEC_H */
