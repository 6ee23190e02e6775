// SPDX-License-Identifier: GPL-2.0-only
/*
 * lib/bitmap.c: the whole-bitmap operations.
 *
 * Upstream: lib/bitmap.c @ v6.12
 */
#include <uk/linux/bitmap.h>
#include <uk/linux/kernel.h>
#include <uk/linux/slab.h>

/*
 * Apply @op to every word of the bitmaps; the last word is masked to @nbits.
 * Returns whether any result bit is set.
 */
template <typename Op> static bool bitmap_op(unsigned long *dst, unsigned int nbits, Op op)
{
	unsigned int k, lim = nbits / BITS_PER_LONG;
	unsigned long any = 0;

	for (k = 0; k < lim; k++)
		any |= (dst[k] = op(k));
	if (nbits % BITS_PER_LONG)
		any |= (dst[k] = op(k) & BITMAP_LAST_WORD_MASK(nbits));
	return any != 0;
}

bool __bitmap_and(unsigned long *dst, const unsigned long *a, const unsigned long *b,
		  unsigned int nbits)
{
	return bitmap_op(dst, nbits, [=](unsigned int k) { return a[k] & b[k]; });
}

void __bitmap_or(unsigned long *dst, const unsigned long *a, const unsigned long *b,
		 unsigned int nbits)
{
	bitmap_op(dst, nbits, [=](unsigned int k) { return a[k] | b[k]; });
}

void __bitmap_xor(unsigned long *dst, const unsigned long *a, const unsigned long *b,
		  unsigned int nbits)
{
	bitmap_op(dst, nbits, [=](unsigned int k) { return a[k] ^ b[k]; });
}

bool __bitmap_andnot(unsigned long *dst, const unsigned long *a, const unsigned long *b,
		     unsigned int nbits)
{
	return bitmap_op(dst, nbits, [=](unsigned int k) { return a[k] & ~b[k]; });
}

void __bitmap_complement(unsigned long *dst, const unsigned long *src, unsigned int nbits)
{
	bitmap_op(dst, nbits, [=](unsigned int k) { return ~src[k]; });
}

/* Scan word by word until @pred says stop; the last word is masked. */
template <typename Pred>
static bool bitmap_any(const unsigned long *a, const unsigned long *b, unsigned int nbits,
		       Pred pred)
{
	unsigned int k, lim = nbits / BITS_PER_LONG;

	for (k = 0; k < lim; k++)
		if (pred(a[k], b[k], ~0UL))
			return true;
	if (nbits % BITS_PER_LONG)
		return pred(a[k], b[k], BITMAP_LAST_WORD_MASK(nbits));
	return false;
}

bool __bitmap_equal(const unsigned long *a, const unsigned long *b, unsigned int nbits)
{
	return !bitmap_any(a, b, nbits, [](unsigned long x, unsigned long y, unsigned long m) {
		return ((x ^ y) & m) != 0;
	});
}

bool __bitmap_intersects(const unsigned long *a, const unsigned long *b, unsigned int nbits)
{
	return bitmap_any(a, b, nbits, [](unsigned long x, unsigned long y, unsigned long m) {
		return (x & y & m) != 0;
	});
}

bool __bitmap_subset(const unsigned long *a, const unsigned long *b, unsigned int nbits)
{
	return !bitmap_any(a, b, nbits, [](unsigned long x, unsigned long y, unsigned long m) {
		return (x & ~y & m) != 0;
	});
}

unsigned int __bitmap_weight(const unsigned long *src, unsigned int nbits)
{
	unsigned int k, w = 0, lim = nbits / BITS_PER_LONG;

	for (k = 0; k < lim; k++)
		w += hweight_long(src[k]);
	if (nbits % BITS_PER_LONG)
		w += hweight_long(src[k] & BITMAP_LAST_WORD_MASK(nbits));
	return w;
}

void __bitmap_set(unsigned long *map, unsigned int start, int len)
{
	unsigned long *p = map + BIT_WORD(start);
	const unsigned int size = start + len;
	int bits_to_set = BITS_PER_LONG - (start % BITS_PER_LONG);
	unsigned long mask_to_set = BITMAP_FIRST_WORD_MASK(start);

	while (len - bits_to_set >= 0) {
		*p |= mask_to_set;
		len -= bits_to_set;
		bits_to_set = BITS_PER_LONG;
		mask_to_set = ~0UL;
		p++;
	}
	if (len) {
		mask_to_set &= BITMAP_LAST_WORD_MASK(size);
		*p |= mask_to_set;
	}
}

void __bitmap_clear(unsigned long *map, unsigned int start, int len)
{
	unsigned long *p = map + BIT_WORD(start);
	const unsigned int size = start + len;
	int bits_to_clear = BITS_PER_LONG - (start % BITS_PER_LONG);
	unsigned long mask_to_clear = BITMAP_FIRST_WORD_MASK(start);

	while (len - bits_to_clear >= 0) {
		*p &= ~mask_to_clear;
		len -= bits_to_clear;
		bits_to_clear = BITS_PER_LONG;
		mask_to_clear = ~0UL;
		p++;
	}
	if (len) {
		mask_to_clear &= BITMAP_LAST_WORD_MASK(size);
		*p &= ~mask_to_clear;
	}
}

unsigned long bitmap_find_next_zero_area_off(unsigned long *map, unsigned long size,
					     unsigned long start, unsigned int nr,
					     unsigned long align_mask, unsigned long align_offset)
{
	unsigned long index, end, i;

	for (;;) {
		index = find_next_zero_bit(map, size, start);
		index = ((index + align_offset + align_mask) & ~align_mask) - align_offset;
		end = index + nr;
		if (end > size)
			return end;
		i = find_next_bit(map, end, index);
		if (i < end) {
			start = i + 1;
			continue;
		}
		return index;
	}
}

unsigned long *bitmap_alloc(unsigned int nbits, gfp_t flags)
{
	return kmalloc_array(BITS_TO_LONGS(nbits), sizeof(unsigned long), flags);
}

unsigned long *bitmap_zalloc(unsigned int nbits, gfp_t flags)
{
	return bitmap_alloc(nbits, flags | __GFP_ZERO);
}

void bitmap_free(const unsigned long *bitmap)
{
	kfree(bitmap);
}
