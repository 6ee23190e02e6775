// SPDX-License-Identifier: GPL-2.0-only
/*
 * lib/find_bit.c: word-at-a-time bit searches. Words are read with relaxed
 * atomic loads: callers such as sbitmap search bitmaps that other CPUs are
 * changing with atomic bit operations.
 *
 * Upstream: lib/find_bit.c @ v6.12
 */
#include <uk/linux/bitops.h>

static inline unsigned long load_word(const unsigned long *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

/*
 * One loop serves the set/zero/and searches: @fetch yields word @i with the
 * bits of interest set.
 */
template <typename Fetch>
static unsigned long find_from(unsigned long nbits, unsigned long start, Fetch fetch)
{
	unsigned long idx, tmp;

	if (unlikely(start >= nbits))
		return nbits;
	idx = start / BITS_PER_LONG;
	tmp = fetch(idx) & (~0UL << (start & (BITS_PER_LONG - 1)));
	while (!tmp) {
		idx++;
		if (idx * BITS_PER_LONG >= nbits)
			return nbits;
		tmp = fetch(idx);
	}
	idx = idx * BITS_PER_LONG + __ffs(tmp);
	return idx < nbits ? idx : nbits;
}

unsigned long _find_next_bit(const unsigned long *addr, unsigned long nbits, unsigned long start)
{
	return find_from(nbits, start, [addr](unsigned long i) { return load_word(addr + i); });
}

unsigned long _find_next_zero_bit(const unsigned long *addr, unsigned long nbits,
				  unsigned long start)
{
	return find_from(nbits, start, [addr](unsigned long i) { return ~load_word(addr + i); });
}

unsigned long _find_next_and_bit(const unsigned long *addr1, const unsigned long *addr2,
				 unsigned long nbits, unsigned long start)
{
	return find_from(nbits, start, [addr1, addr2](unsigned long i) {
		return load_word(addr1 + i) & load_word(addr2 + i);
	});
}

unsigned long _find_first_bit(const unsigned long *addr, unsigned long size)
{
	return _find_next_bit(addr, size, 0);
}

unsigned long _find_first_zero_bit(const unsigned long *addr, unsigned long size)
{
	return _find_next_zero_bit(addr, size, 0);
}

unsigned long _find_last_bit(const unsigned long *addr, unsigned long size)
{
	if (size) {
		unsigned long val = BITS_PER_LONG - 1 - ((size - 1) & (BITS_PER_LONG - 1));
		unsigned long idx = (size - 1) / BITS_PER_LONG;
		unsigned long mask = ~0UL >> val;

		do {
			unsigned long w = load_word(addr + idx) & mask;

			if (w)
				return idx * BITS_PER_LONG + __fls(w);
			mask = ~0UL;
		} while (idx--);
	}
	return size;
}
