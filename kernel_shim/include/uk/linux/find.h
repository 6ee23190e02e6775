/* SPDX-License-Identifier: GPL-2.0-only */
/* Bit searching (include/linux/find.h, lib/find_bit.c). */
#ifndef UK_LINUX_FIND_H
#define UK_LINUX_FIND_H

#include <uk/linux/types.h>

unsigned long _find_next_bit(const unsigned long *addr, unsigned long nbits, unsigned long start);
unsigned long _find_next_zero_bit(const unsigned long *addr, unsigned long nbits,
				  unsigned long start);
unsigned long _find_next_and_bit(const unsigned long *addr1, const unsigned long *addr2,
				 unsigned long nbits, unsigned long start);
unsigned long _find_first_bit(const unsigned long *addr, unsigned long size);
unsigned long _find_first_zero_bit(const unsigned long *addr, unsigned long size);
unsigned long _find_last_bit(const unsigned long *addr, unsigned long size);

#define __UK_SMALL_CONST(n) (__builtin_constant_p(n) && (n) <= BITS_PER_LONG && (n) > 0)
/*
 * A size of one word or less, known only at run time: the shim answers inline
 * too (one compare more for big bitmaps, no call for sbitmap's words).
 */
#define __UK_ONE_WORD(n) (__UK_SMALL_CONST(n) || ((n)-1UL < BITS_PER_LONG))
#define __UK_GENMASK(h, l) (((~0UL) << (l)) & (~0UL >> (BITS_PER_LONG - 1 - (h))))

/* The next set bit at or after @offset, or @size if there is none. */
static inline unsigned long find_next_bit(const unsigned long *addr, unsigned long size,
					  unsigned long offset)
{
	if (__UK_ONE_WORD(size)) {
		unsigned long val;

		if (unlikely(offset >= size))
			return size;
		val = __atomic_load_n(addr, __ATOMIC_RELAXED) & __UK_GENMASK(size - 1, offset);
		return val ? __builtin_ctzl(val) : size;
	}
	return _find_next_bit(addr, size, offset);
}

static inline unsigned long find_next_zero_bit(const unsigned long *addr, unsigned long size,
					       unsigned long offset)
{
	if (__UK_ONE_WORD(size)) {
		unsigned long val;

		if (unlikely(offset >= size))
			return size;
		/* set bits and bits outside [offset, size) are not candidates */
		val = __atomic_load_n(addr, __ATOMIC_RELAXED) | ~__UK_GENMASK(size - 1, offset);
		return val == ~0UL ? size : __builtin_ctzl(~val);
	}
	return _find_next_zero_bit(addr, size, offset);
}

static inline unsigned long find_next_and_bit(const unsigned long *addr1,
					      const unsigned long *addr2, unsigned long size,
					      unsigned long offset)
{
	return _find_next_and_bit(addr1, addr2, size, offset);
}

static inline unsigned long find_first_bit(const unsigned long *addr, unsigned long size)
{
	return _find_first_bit(addr, size);
}

static inline unsigned long find_first_zero_bit(const unsigned long *addr, unsigned long size)
{
	return _find_first_zero_bit(addr, size);
}

static inline unsigned long find_last_bit(const unsigned long *addr, unsigned long size)
{
	return _find_last_bit(addr, size);
}

#endif /* UK_LINUX_FIND_H */
