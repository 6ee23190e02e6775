/* SPDX-License-Identifier: GPL-2.0-only */
/* The bitmap_* basics (include/linux/bitmap.h, lib/bitmap.c). */
#ifndef UK_LINUX_BITMAP_H
#define UK_LINUX_BITMAP_H

#include <cstring>

#include <uk/linux/bitops.h>
#include <uk/linux/gfp.h>

#define DECLARE_BITMAP(name, bits) unsigned long name[BITS_TO_LONGS(bits)]
#define BITMAP_FIRST_WORD_MASK(start) (~0UL << ((start) & (BITS_PER_LONG - 1)))
#define BITMAP_LAST_WORD_MASK(nbits) (~0UL >> (-(nbits) & (BITS_PER_LONG - 1)))

static inline void bitmap_zero(unsigned long *dst, unsigned int nbits)
{
	memset(dst, 0, BITS_TO_LONGS(nbits) * sizeof(unsigned long));
}

static inline void bitmap_fill(unsigned long *dst, unsigned int nbits)
{
	unsigned int n = BITS_TO_LONGS(nbits);

	memset(dst, 0xff, n * sizeof(unsigned long));
	if (nbits % BITS_PER_LONG)
		dst[n - 1] &= BITMAP_LAST_WORD_MASK(nbits);
}

static inline void bitmap_copy(unsigned long *dst, const unsigned long *src, unsigned int nbits)
{
	memcpy(dst, src, BITS_TO_LONGS(nbits) * sizeof(unsigned long));
}

bool __bitmap_and(unsigned long *dst, const unsigned long *a, const unsigned long *b,
		  unsigned int nbits);
void __bitmap_or(unsigned long *dst, const unsigned long *a, const unsigned long *b,
		 unsigned int nbits);
void __bitmap_xor(unsigned long *dst, const unsigned long *a, const unsigned long *b,
		  unsigned int nbits);
bool __bitmap_andnot(unsigned long *dst, const unsigned long *a, const unsigned long *b,
		     unsigned int nbits);
void __bitmap_complement(unsigned long *dst, const unsigned long *src, unsigned int nbits);
bool __bitmap_equal(const unsigned long *a, const unsigned long *b, unsigned int nbits);
bool __bitmap_intersects(const unsigned long *a, const unsigned long *b, unsigned int nbits);
bool __bitmap_subset(const unsigned long *a, const unsigned long *b, unsigned int nbits);
unsigned int __bitmap_weight(const unsigned long *src, unsigned int nbits);
void __bitmap_set(unsigned long *map, unsigned int start, int len);
void __bitmap_clear(unsigned long *map, unsigned int start, int len);
unsigned long bitmap_find_next_zero_area_off(unsigned long *map, unsigned long size,
					     unsigned long start, unsigned int nr,
					     unsigned long align_mask, unsigned long align_offset);

static inline bool bitmap_and(unsigned long *dst, const unsigned long *a, const unsigned long *b,
			      unsigned int nbits)
{
	return __bitmap_and(dst, a, b, nbits);
}

static inline void bitmap_or(unsigned long *dst, const unsigned long *a, const unsigned long *b,
			     unsigned int nbits)
{
	__bitmap_or(dst, a, b, nbits);
}

static inline void bitmap_xor(unsigned long *dst, const unsigned long *a, const unsigned long *b,
			      unsigned int nbits)
{
	__bitmap_xor(dst, a, b, nbits);
}

static inline bool bitmap_andnot(unsigned long *dst, const unsigned long *a, const unsigned long *b,
				 unsigned int nbits)
{
	return __bitmap_andnot(dst, a, b, nbits);
}

static inline void bitmap_complement(unsigned long *dst, const unsigned long *src,
				     unsigned int nbits)
{
	__bitmap_complement(dst, src, nbits);
}

static inline bool bitmap_equal(const unsigned long *a, const unsigned long *b, unsigned int nbits)
{
	return __bitmap_equal(a, b, nbits);
}

static inline bool bitmap_intersects(const unsigned long *a, const unsigned long *b,
				     unsigned int nbits)
{
	return __bitmap_intersects(a, b, nbits);
}

static inline bool bitmap_subset(const unsigned long *a, const unsigned long *b, unsigned int nbits)
{
	return __bitmap_subset(a, b, nbits);
}

static inline bool bitmap_empty(const unsigned long *src, unsigned int nbits)
{
	return find_first_bit(src, nbits) == nbits;
}

static inline bool bitmap_full(const unsigned long *src, unsigned int nbits)
{
	return find_first_zero_bit(src, nbits) == nbits;
}

static inline unsigned int bitmap_weight(const unsigned long *src, unsigned int nbits)
{
	return __bitmap_weight(src, nbits);
}

static inline void bitmap_set(unsigned long *map, unsigned int start, unsigned int nbits)
{
	__bitmap_set(map, start, nbits);
}

static inline void bitmap_clear(unsigned long *map, unsigned int start, unsigned int nbits)
{
	__bitmap_clear(map, start, nbits);
}

static inline unsigned long bitmap_find_next_zero_area(unsigned long *map, unsigned long size,
						       unsigned long start, unsigned int nr,
						       unsigned long align_mask)
{
	return bitmap_find_next_zero_area_off(map, size, start, nr, align_mask, 0);
}

unsigned long *bitmap_alloc(unsigned int nbits, gfp_t flags);
unsigned long *bitmap_zalloc(unsigned int nbits, gfp_t flags);
void bitmap_free(const unsigned long *bitmap);

#endif /* UK_LINUX_BITMAP_H */
